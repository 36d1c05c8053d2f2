//! Waits before trying again, doubling per attempt and spread at random: after a
//! rolling restart every open tab (and every failed reconcile) starts over at once, and
//! waits alike would bring them back at once too.

use std::time::Duration;

/// The wait before try `attempt` (1 for the first retry): `first` doubled per attempt
/// up to `most`, then drawn from its upper half by `draw` (a uniform draw in `[0, 1)`:
/// `Math.random()` in the page, `fastrand` on the server). The lower half is never
/// drawn, so the wait still grows with each attempt.
pub fn jittered(attempt: u32, first: Duration, most: Duration, draw: f64) -> Duration {
    let doublings = attempt.saturating_sub(1).min(16);
    let ceiling = first.saturating_mul(1 << doublings).min(most);
    let draw = if draw.is_finite() {
        draw.clamp(0.0, 1.0)
    } else {
        0.5
    };
    ceiling.div_f64(2.0).mul_f64(1.0 + draw)
}

#[cfg(test)]
mod tests {
    use super::*;

    const FIRST: Duration = Duration::from_millis(500);
    const MOST: Duration = Duration::from_secs(10);

    #[test]
    fn waits_double_up_to_the_most_and_keep_the_upper_half() {
        for (attempt, ceiling_ms) in [(1, 500), (2, 1_000), (3, 2_000), (6, 10_000), (60, 10_000)] {
            let low = jittered(attempt, FIRST, MOST, 0.0).as_millis();
            let high = jittered(attempt, FIRST, MOST, 1.0).as_millis();
            assert_eq!(
                (low, high),
                (ceiling_ms / 2, ceiling_ms),
                "attempt {attempt}"
            );
        }
        // A draw out of range (or NaN) stays within the bounds.
        assert_eq!(
            jittered(1, FIRST, MOST, f64::NAN),
            Duration::from_millis(375)
        );
        assert_eq!(jittered(1, FIRST, MOST, 7.0), FIRST);
    }

    /// 200 tabs losing their socket at once come back spread over the window, not
    /// together: no tenth of it holds more than a quarter of them.
    #[test]
    fn two_hundred_tabs_come_back_spread_over_the_window() {
        let mut rng = fastrand::Rng::with_seed(2026);
        let waits: Vec<Duration> = (0..200)
            .map(|_| jittered(1, FIRST, MOST, rng.f64()))
            .collect();
        let mut tenths = [0usize; 10];
        for wait in &waits {
            let from_start = wait.as_secs_f64() - 0.25;
            let tenth = ((from_start / 0.025) as usize).min(9);
            tenths[tenth] += 1;
        }
        assert!(
            tenths.iter().all(|&n| n <= 50),
            "reconnects per 25 ms: {tenths:?}"
        );
        let distinct: std::collections::BTreeSet<_> =
            waits.iter().map(Duration::as_millis).collect();
        assert!(
            distinct.len() > 100,
            "only {} distinct waits",
            distinct.len()
        );
    }
}
