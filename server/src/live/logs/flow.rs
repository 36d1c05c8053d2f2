//! How fast one log view's lines reach its page, and what happens when they come
//! faster than that. A reader fills a [`Queue`] as the log arrives; [`batches`] takes
//! lines out of it at most [`Bounds::rate`] bytes a second, merged into messages of
//! at most [`Bounds::batch_bytes`] every [`Bounds::batch_every`]. The queue holds at
//! most [`Bounds::queued_bytes`]: a noisy container or a slow page drops the oldest
//! lines, counted and reported as skipped, rather than making Portico buffer.
//!
//! What a view may hold is counted as memory, not as text: a line costs its bytes and
//! the [`String`] around them (an empty line is not free), the queue holds at most
//! [`Bounds::queued_lines`] as well, and the reader stops reading the API server while
//! the queue is full ([`Queue::room`]). [`Bounds::reserved`] is the most one view
//! holds, which the person is charged for while it is open.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::Stream;
use tokio::sync::Notify;
use tokio::time::Instant;

/// The bounds of one log view.
#[derive(Debug, Clone, Copy)]
pub struct Bounds {
    /// Bytes a second sent to the page, on average.
    pub rate: usize,
    /// Bytes that may go at once after a quiet spell (a tail of old lines).
    pub burst: usize,
    /// The most one message carries.
    pub batch_bytes: usize,
    /// Lines arriving within this are merged into one message.
    pub batch_every: Duration,
    /// The most waiting to be sent, in memory ([`line_cost`]); older lines are
    /// dropped beyond it.
    pub queued_bytes: usize,
    /// The most lines waiting to be sent.
    pub queued_lines: usize,
}

/// What a line costs in memory while it waits: its text and the string around it.
pub fn line_cost(line: &str, capacity: usize) -> usize {
    std::mem::size_of::<String>() + capacity.max(line.len())
}

impl Bounds {
    /// The most one view holds at once: its queue, the batch being sent (taken from
    /// the queue, so no larger), the queue's spare slots, and the line being read.
    pub fn reserved(&self) -> usize {
        2 * self.queued_bytes
            + self.queued_lines * std::mem::size_of::<String>()
            + 2 * crate::live::logs::lines::MAX_LINE
    }
}

impl Default for Bounds {
    fn default() -> Self {
        Self {
            rate: 128 * 1024,
            burst: 256 * 1024,
            batch_bytes: 64 * 1024,
            batch_every: Duration::from_millis(50),
            queued_bytes: 512 * 1024,
            queued_lines: 8192,
        }
    }
}

/// What a page receives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Flow {
    /// Lines, oldest first, with how many were dropped just before them.
    Batch { lines: Vec<String>, skipped: u64 },
    /// The log ended; the reason.
    Ended(String),
}

/// Lines waiting to be sent: at most `max_bytes` of memory ([`line_cost`]) and
/// `max_lines` of them.
#[derive(Debug)]
pub struct Pending {
    lines: VecDeque<String>,
    bytes: usize,
    skipped: u64,
    max_bytes: usize,
    max_lines: usize,
}

impl Pending {
    pub fn new(max_bytes: usize, max_lines: usize) -> Self {
        Self {
            lines: VecDeque::new(),
            bytes: 0,
            skipped: 0,
            max_bytes,
            max_lines,
        }
    }

    fn cost(line: &String) -> usize {
        line_cost(line, line.capacity())
    }

    /// Adds `line`, dropping the oldest lines while over a bound.
    pub fn push(&mut self, line: String) {
        self.bytes += Self::cost(&line);
        self.lines.push_back(line);
        while self.bytes > self.max_bytes || self.lines.len() > self.max_lines {
            if !self.drop_oldest() {
                break;
            }
        }
    }

    fn drop_oldest(&mut self) -> bool {
        let Some(old) = self.lines.pop_front() else {
            return false;
        };
        self.bytes -= Self::cost(&old);
        self.skipped += 1;
        true
    }

    /// At a bound: the reader waits before it reads more.
    pub fn is_full(&self) -> bool {
        self.bytes + std::mem::size_of::<String>() > self.max_bytes
            || self.lines.len() >= self.max_lines
    }

    /// Drops the older half of what waits (counted as skipped): the page is behind a
    /// full queue, and the newest lines matter most.
    pub fn skip_older_half(&mut self) {
        for _ in 0..self.lines.len() / 2 {
            self.drop_oldest();
        }
        // Keep the spare slots within the bound's worth of lines.
        if self.lines.capacity() > self.max_lines {
            self.lines.shrink_to(self.max_lines);
        }
    }

    pub fn is_empty(&self) -> bool {
        self.lines.is_empty() && self.skipped == 0
    }

    /// The oldest lines up to `max_bytes` (at least one, so a long line is never
    /// stuck), and the count skipped before them; `None` when nothing waits.
    pub fn take(&mut self, max_bytes: usize) -> Option<(Vec<String>, u64)> {
        if self.is_empty() {
            return None;
        }
        let mut lines = Vec::new();
        let mut size = 0;
        while let Some(next) = self.lines.front() {
            let cost = next.len() + 1;
            if !lines.is_empty() && size + cost > max_bytes {
                break;
            }
            size += cost;
            if let Some(line) = self.lines.pop_front() {
                self.bytes -= Self::cost(&line);
                lines.push(line);
            }
        }
        Some((lines, std::mem::take(&mut self.skipped)))
    }
}

/// A token bucket of bytes: `rate` a second, holding at most `burst`. May go into
/// debt by one line (a batch always carries at least one).
#[derive(Debug)]
pub struct Budget {
    rate: f64,
    burst: f64,
    tokens: f64,
    at: Instant,
}

impl Budget {
    pub fn new(rate: usize, burst: usize, now: Instant) -> Self {
        Self {
            rate: rate as f64,
            burst: burst as f64,
            tokens: burst as f64,
            at: now,
        }
    }

    /// Bytes that may be sent at `now`.
    pub fn available(&mut self, now: Instant) -> usize {
        let elapsed = now.saturating_duration_since(self.at).as_secs_f64();
        self.tokens = (self.tokens + elapsed * self.rate).min(self.burst);
        self.at = now;
        self.tokens.max(0.0) as usize
    }

    pub fn spend(&mut self, bytes: usize) {
        self.tokens -= bytes as f64;
    }

    /// How long until `bytes` may be sent (after [`Self::available`] at the same now).
    pub fn wait_for(&self, bytes: usize) -> Duration {
        let missing = (bytes as f64).min(self.burst) - self.tokens;
        Duration::from_secs_f64((missing / self.rate).max(0.0))
    }
}

/// The queue between the task reading a log and the stream sending it.
#[derive(Debug)]
pub struct Queue {
    state: Mutex<QueueState>,
    notify: Notify,
    /// Told when lines were taken out: a reader waiting for room goes on.
    freed: Notify,
}

#[derive(Debug)]
struct QueueState {
    pending: Pending,
    ended: Option<String>,
}

impl Queue {
    pub fn new(bounds: &Bounds) -> Arc<Self> {
        Arc::new(Self {
            state: Mutex::new(QueueState {
                pending: Pending::new(bounds.queued_bytes, bounds.queued_lines),
                ended: None,
            }),
            notify: Notify::new(),
            freed: Notify::new(),
        })
    }

    /// Returns once the queue has room: the reader reads no more of the log before.
    pub async fn room(&self) {
        loop {
            let freed = self.freed.notified();
            if !self.with(|s| s.pending.is_full()) {
                return;
            }
            freed.await;
        }
    }

    fn with<T>(&self, f: impl FnOnce(&mut QueueState) -> T) -> T {
        f(&mut self.state.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// Adds lines the log brought.
    pub fn push(&self, lines: impl IntoIterator<Item = String>) {
        self.with(|s| lines.into_iter().for_each(|l| s.pending.push(l)));
        self.notify.notify_one();
    }

    /// The log ended, for `reason`; lines already queued are still sent.
    pub fn end(&self, reason: String) {
        self.with(|s| {
            s.ended.get_or_insert(reason);
        });
        self.notify.notify_one();
    }
}

/// The queue's lines within `bounds`, then the reason it ended.
pub fn batches(queue: Arc<Queue>, bounds: Bounds) -> impl Stream<Item = Flow> + Send {
    async_stream::stream! {
        let mut budget = Budget::new(bounds.rate, bounds.burst, Instant::now());
        let mut next_send = Instant::now();
        loop {
            // Registered before looking, so a push in between is not missed.
            let notified = queue.notify.notified();
            let (empty, ended) = queue.with(|s| (s.pending.is_empty(), s.ended.clone()));
            if empty {
                match ended {
                    Some(reason) => {
                        yield Flow::Ended(reason);
                        break;
                    }
                    None => {
                        notified.await;
                        continue;
                    }
                }
            }
            // Lines arriving within `batch_every` of the last message wait for the
            // next one rather than going one a message.
            tokio::time::sleep_until(next_send).await;
            let mut allowance = budget.available(Instant::now()).min(bounds.batch_bytes);
            if allowance < bounds.batch_bytes.min(bounds.burst) / 4 {
                // Too little for a worthwhile message: wait for more budget.
                tokio::time::sleep(budget.wait_for(bounds.batch_bytes / 4)).await;
                allowance = budget.available(Instant::now()).min(bounds.batch_bytes);
            }
            let taken = queue.with(|s| {
                if s.pending.is_full() {
                    s.pending.skip_older_half();
                }
                s.pending.take(allowance)
            });
            // Every reader waiting for room goes on (a workload's log has many).
            queue.freed.notify_waiters();
            let Some((lines, skipped)) = taken else {
                continue;
            };
            budget.spend(lines.iter().map(|l| l.len() + 1).sum());
            next_send = Instant::now() + bounds.batch_every;
            yield Flow::Batch { lines, skipped };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::StreamExt;

    fn line(i: usize) -> String {
        let mut line = format!("line {i}");
        line.shrink_to_fit();
        line
    }

    #[test]
    fn the_queue_drops_the_oldest_lines_over_its_bound_and_counts_them() {
        // Room for two lines as they are held (the text and the string around it).
        let mut pending = Pending::new(2 * line_cost("line 0", 6), 100);
        for i in 0..10 {
            pending.push(line(i));
        }
        let (lines, skipped) = pending.take(usize::MAX).expect("lines");
        assert_eq!(lines, ["line 8", "line 9"]);
        assert_eq!(skipped, 8);
        assert!(pending.take(usize::MAX).is_none());
    }

    #[test]
    fn empty_lines_cost_memory_and_count_against_the_line_bound() {
        let mut bytes = Pending::new(10 * line_cost("", 0), usize::MAX);
        let mut lines = Pending::new(usize::MAX, 10);
        for _ in 0..1000 {
            bytes.push(String::new());
            lines.push(String::new());
        }
        for pending in [&mut bytes, &mut lines] {
            assert!(pending.is_full());
            let (kept, skipped) = pending.take(usize::MAX).expect("lines");
            assert_eq!((kept.len(), skipped), (10, 990));
            assert!(!pending.is_full());
        }
    }

    #[test]
    fn a_full_queue_skips_its_older_half_and_has_room_again() {
        let mut pending = Pending::new(usize::MAX, 8);
        for i in 0..8 {
            pending.push(line(i));
        }
        assert!(pending.is_full());
        pending.skip_older_half();
        assert!(!pending.is_full());
        let (lines, skipped) = pending.take(usize::MAX).expect("lines");
        assert_eq!(
            (lines, skipped),
            (vec![line(4), line(5), line(6), line(7)], 4)
        );
    }

    #[test]
    fn a_reservation_covers_what_a_view_can_hold() {
        let bounds = Bounds::default();
        assert!(bounds.reserved() >= 2 * bounds.queued_bytes);
        assert!(bounds.reserved() <= 2 << 20, "{}", bounds.reserved());
    }

    #[test]
    fn a_batch_stops_at_its_size_but_always_carries_a_line() {
        let mut pending = Pending::new(1000, 100);
        pending.push("x".repeat(50));
        pending.push("short".into());
        let (lines, _) = pending.take(10).expect("one oversized line");
        assert_eq!(lines.len(), 1);
        let (lines, skipped) = pending.take(10).expect("the next");
        assert_eq!((lines, skipped), (vec!["short".to_string()], 0));
    }

    #[test]
    fn the_budget_refills_at_its_rate_up_to_the_burst() {
        let start = Instant::now();
        let mut budget = Budget::new(1000, 2000, start);
        assert_eq!(budget.available(start), 2000);
        budget.spend(2500);
        assert_eq!(budget.available(start), 0);
        assert_eq!(budget.wait_for(500), Duration::from_secs(1));
        assert_eq!(budget.available(start + Duration::from_secs(1)), 500);
        assert_eq!(budget.available(start + Duration::from_secs(60)), 2000);
    }

    fn bounds() -> Bounds {
        Bounds {
            rate: 10_000,
            burst: 20_000,
            batch_bytes: 5_000,
            batch_every: Duration::from_millis(50),
            queued_bytes: 50_000,
            queued_lines: 1_000,
        }
    }

    /// A flood far beyond the rate: what reaches the page in ten (paused) seconds
    /// stays within burst + rate × time, in messages no larger than a batch, and
    /// every line is either sent or counted as skipped.
    #[tokio::test(start_paused = true)]
    async fn a_flood_is_sent_at_the_rate_and_the_excess_is_counted_not_kept() {
        let bounds = bounds();
        let queue = Queue::new(&bounds);
        let feeder = queue.clone();
        let produced = 100_000u64;
        tokio::spawn(async move {
            // 100 lines of 99 bytes (+1) every 10 ms: 1 MB/s, a hundred times the rate.
            for chunk in 0..produced / 100 {
                feeder.push((0..100).map(|i| format!("{:098}", chunk * 100 + i)));
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            feeder.end("stopped".into());
        });
        let start = Instant::now();
        let mut flow = std::pin::pin!(batches(queue, bounds));
        let (mut sent_bytes, mut sent_lines, mut skipped_total) = (0usize, 0u64, 0u64);
        let mut ended = None;
        while let Some(item) = flow.next().await {
            match item {
                Flow::Batch { lines, skipped } => {
                    let size: usize = lines.iter().map(|l| l.len() + 1).sum();
                    assert!(size <= bounds.batch_bytes, "a message of {size} bytes");
                    let elapsed = start.elapsed().as_secs_f64();
                    sent_bytes += size;
                    assert!(
                        sent_bytes as f64 <= bounds.burst as f64 + bounds.rate as f64 * elapsed,
                        "{sent_bytes} bytes after {elapsed} s"
                    );
                    sent_lines += lines.len() as u64;
                    skipped_total += skipped;
                }
                Flow::Ended(reason) => {
                    ended = Some(reason);
                    break;
                }
            }
        }
        assert_eq!(ended.as_deref(), Some("stopped"));
        assert_eq!(
            sent_lines + skipped_total,
            produced,
            "nothing lost uncounted"
        );
        assert!(skipped_total > produced / 2, "most of a flood is skipped");
        // The queued lines drain at the rate after the producer stops: ~5 s for 50 KB.
        let elapsed = start.elapsed().as_secs_f64();
        assert!((10.0..17.0).contains(&elapsed), "{elapsed}");
    }

    /// A quiet log: each line goes out at once, no waiting for a batch to fill.
    #[tokio::test(start_paused = true)]
    async fn a_quiet_log_is_sent_line_by_line_without_delay() {
        let bounds = bounds();
        let queue = Queue::new(&bounds);
        let mut flow = std::pin::pin!(batches(queue.clone(), bounds));
        for i in 0..3 {
            let at = Instant::now();
            queue.push([format!("line {i}")]);
            let item = flow.next().await;
            assert_eq!(
                item,
                Some(Flow::Batch {
                    lines: vec![format!("line {i}")],
                    skipped: 0
                })
            );
            assert_eq!(at.elapsed(), Duration::ZERO);
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
        queue.end("done".into());
        assert_eq!(flow.next().await, Some(Flow::Ended("done".into())));
    }
}
