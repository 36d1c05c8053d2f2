//! The lines a log view keeps in the browser: at most [`MAX_LINES`] lines and
//! [`MAX_BYTES`] bytes, the oldest dropped first, and a marker line wherever the
//! server skipped lines. Search and download work on what is kept.

use std::collections::VecDeque;
use std::sync::Arc;

/// The most lines a log view keeps.
pub const MAX_LINES: usize = 10_000;
/// The most bytes of text a log view keeps.
pub const MAX_BYTES: usize = 2 * 1024 * 1024;

/// One shown line; `seq` numbers lines as they arrive (the list's key).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogLine {
    pub seq: u64,
    pub text: Arc<str>,
    /// Says that lines were skipped here; not the container's output.
    pub marker: bool,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LogBuffer {
    lines: VecDeque<LogLine>,
    bytes: usize,
    next: u64,
    /// Lines dropped here to stay within the bounds.
    dropped: u64,
}

impl LogBuffer {
    /// Forgets every line (the view starts over).
    pub fn clear(&mut self) {
        *self = Self {
            next: self.next,
            ..Self::default()
        };
    }

    /// Adds a batch from the server: a marker if it skipped lines, then the lines.
    pub fn push(&mut self, lines: Vec<String>, skipped: u64) {
        if skipped > 0 {
            let plural = if skipped == 1 { "line" } else { "lines" };
            self.add(format!("… {skipped} {plural} skipped"), true);
        }
        for line in lines {
            self.add(line, false);
        }
        while self.lines.len() > MAX_LINES || self.bytes > MAX_BYTES {
            let Some(old) = self.lines.pop_front() else {
                break;
            };
            self.bytes -= old.text.len();
            self.dropped += u64::from(!old.marker);
        }
    }

    fn add(&mut self, text: String, marker: bool) {
        self.bytes += text.len();
        self.lines.push_back(LogLine {
            seq: self.next,
            text: text.into(),
            marker,
        });
        self.next += 1;
    }

    pub fn len(&self) -> usize {
        self.lines.len()
    }

    pub fn is_empty(&self) -> bool {
        self.lines.is_empty()
    }

    pub fn dropped(&self) -> u64 {
        self.dropped
    }

    /// The kept lines containing `term` (ignoring ASCII case); all of them when the
    /// term is empty. Markers stay, so gaps remain visible.
    pub fn matching(&self, term: &str) -> Vec<LogLine> {
        let term = term.to_ascii_lowercase();
        self.lines
            .iter()
            .filter(|l| term.is_empty() || l.marker || l.text.to_ascii_lowercase().contains(&term))
            .cloned()
            .collect()
    }

    /// The kept lines the regular expression `pattern` finds something in (markers
    /// stay); the parser's words when it is not one. Bounded like any pattern here:
    /// `regex-lite` runs in time linear in the text.
    pub fn matching_pattern(&self, pattern: &str) -> Result<Vec<LogLine>, String> {
        let pattern = regex_lite::Regex::new(pattern).map_err(|e| e.to_string())?;
        Ok(self
            .lines
            .iter()
            .filter(|l| l.marker || pattern.is_match(&l.text))
            .cloned()
            .collect())
    }

    /// The kept lines as a file's text, markers included.
    pub fn text(&self) -> String {
        let mut out = String::with_capacity(self.bytes + self.lines.len());
        for line in &self.lines {
            out.push_str(&line.text);
            out.push('\n');
        }
        out
    }
}

/// `text` cut into pieces, `true` for those matching `term` (ignoring ASCII case, so
/// byte positions agree), for highlighting.
pub fn highlight(text: &str, term: &str) -> Vec<(String, bool)> {
    if term.is_empty() {
        return vec![(text.to_string(), false)];
    }
    let (haystack, needle) = (text.to_ascii_lowercase(), term.to_ascii_lowercase());
    let mut pieces = Vec::new();
    let mut at = 0;
    while let Some(found) = haystack.get(at..).and_then(|rest| rest.find(&needle)) {
        let start = at + found;
        let end = start + needle.len();
        if let (Some(before), Some(hit)) = (text.get(at..start), text.get(start..end)) {
            if !before.is_empty() {
                pieces.push((before.to_string(), false));
            }
            pieces.push((hit.to_string(), true));
        }
        at = end;
    }
    if let Some(rest) = text.get(at..).filter(|r| !r.is_empty()) {
        pieces.push((rest.to_string(), false));
    }
    pieces
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pattern_keeps_the_lines_it_finds_something_in_and_the_markers() {
        let mut buffer = LogBuffer::default();
        buffer.push(vec!["GET /a 200".into(), "GET /b 500".into()], 2);
        buffer.push(vec!["POST /c 503".into()], 0);
        let texts =
            |lines: Vec<LogLine>| lines.iter().map(|l| l.text.to_string()).collect::<Vec<_>>();
        assert_eq!(
            texts(buffer.matching_pattern(r" 5\d\d$").expect("a pattern")),
            ["… 2 lines skipped", "GET /b 500", "POST /c 503"]
        );
        assert!(buffer.matching_pattern("(unclosed").is_err());
    }

    #[test]
    fn skipped_lines_leave_a_marker_and_the_oldest_go_beyond_the_bound() {
        let mut buffer = LogBuffer::default();
        buffer.push(vec!["a".into(), "b".into()], 0);
        buffer.push(vec!["c".into()], 41);
        let texts: Vec<String> = buffer
            .matching("")
            .iter()
            .map(|l| l.text.to_string())
            .collect();
        assert_eq!(texts, ["a", "b", "… 41 lines skipped", "c"]);
        assert_eq!(buffer.text(), "a\nb\n… 41 lines skipped\nc\n");

        let many: Vec<String> = (0..MAX_LINES + 5).map(|i| format!("line {i}")).collect();
        buffer.push(many, 0);
        assert_eq!(buffer.len(), MAX_LINES);
        assert_eq!(buffer.dropped(), 3 + 5, "the marker is not counted");
        assert_eq!(
            buffer
                .matching("")
                .first()
                .map(|l| l.text.to_string())
                .as_deref(),
            Some("line 5")
        );
    }

    #[test]
    fn bytes_are_bounded_too() {
        let mut buffer = LogBuffer::default();
        let long = "x".repeat(1024 * 1024);
        buffer.push(vec![long.clone(), long.clone(), long], 0);
        assert_eq!(buffer.len(), 2);
        buffer.clear();
        assert!(buffer.is_empty());
        buffer.push(vec!["after".into()], 0);
        // Keys stay unique across a clear.
        assert!(buffer.matching("").first().is_some_and(|l| l.seq == 3));
    }

    #[test]
    fn search_ignores_case_and_highlights_each_match() {
        let mut buffer = LogBuffer::default();
        buffer.push(vec!["GET /health 200".into(), "POST /login 500".into()], 2);
        let found: Vec<String> = buffer
            .matching("post")
            .iter()
            .map(|l| l.text.to_string())
            .collect();
        assert_eq!(found, ["… 2 lines skipped", "POST /login 500"]);
        assert_eq!(
            highlight("Error: error", "error"),
            [
                ("Error".to_string(), true),
                (": ".to_string(), false),
                ("error".to_string(), true)
            ]
        );
        assert_eq!(highlight("grüße", "x"), [("grüße".to_string(), false)]);
        assert_eq!(
            highlight("grüße", "ü"),
            [
                ("gr".to_string(), false),
                ("ü".to_string(), true),
                ("ße".to_string(), false)
            ]
        );
    }
}
