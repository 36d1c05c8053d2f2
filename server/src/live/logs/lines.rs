//! A container's log bytes as lines a page can show: split at newlines, each line cut
//! at [`MAX_LINE`] bytes (a line without newlines must not grow without bound), made
//! UTF-8, and stripped of terminal escape sequences (colours, cursor moves) and other
//! control characters ([`clean`]). Tabs stay: Java stack traces start their lines
//! with one.

use portico_core::terminal::clean;

/// The longest line kept, in bytes of the container's output; the rest is cut.
pub const MAX_LINE: usize = 8 * 1024;

/// Splits a byte stream into clean lines.
#[derive(Debug, Default)]
pub struct Lines {
    /// The current line so far (at most [`MAX_LINE`] bytes).
    partial: Vec<u8>,
    /// Bytes of the current line past [`MAX_LINE`], dropped.
    cut: usize,
}

impl Lines {
    /// Feeds `chunk`, calling `line` with each line it completes.
    pub fn push(&mut self, mut chunk: &[u8], line: &mut impl FnMut(String)) {
        while !chunk.is_empty() {
            let (part, rest, ended) = match chunk.iter().position(|b| *b == b'\n') {
                Some(at) => {
                    let (part, rest) = chunk.split_at(at);
                    (part, rest.get(1..).unwrap_or_default(), true)
                }
                None => (chunk, &[][..], false),
            };
            let room = MAX_LINE.saturating_sub(self.partial.len());
            let (kept, over) = part.split_at(part.len().min(room));
            self.partial.extend_from_slice(kept);
            self.cut += over.len();
            if ended {
                line(self.take());
            }
            chunk = rest;
        }
    }

    /// The last line if the stream ended without a newline.
    pub fn finish(&mut self) -> Option<String> {
        (!self.partial.is_empty() || self.cut > 0).then(|| self.take())
    }

    fn take(&mut self) -> String {
        let mut text = clean(&String::from_utf8_lossy(&self.partial));
        if self.cut > 0 {
            // A cut may split a character: no replacement character at the end.
            while text.ends_with('\u{FFFD}') {
                text.pop();
            }
            text.push_str(&format!(" … [{} more bytes cut]", self.cut));
        }
        self.partial.clear();
        self.cut = 0;
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines_of(chunks: &[&[u8]]) -> Vec<String> {
        let mut splitter = Lines::default();
        let mut out = Vec::new();
        for chunk in chunks {
            splitter.push(chunk, &mut |l| out.push(l));
        }
        out.extend(splitter.finish());
        out
    }

    #[test]
    fn escapes_and_controls_go_tabs_and_text_stay() {
        assert_eq!(clean("\u{1b}[1;31mERROR\u{1b}[0m done"), "ERROR done");
        assert_eq!(clean("\u{1b}]0;title\u{7}after"), "after");
        assert_eq!(clean("\u{1b}]8;;http://x\u{1b}\\link"), "link");
        assert_eq!(clean("\u{1b}(Bplain\u{1b}7"), "plain");
        assert_eq!(clean("\u{9b}32mgreen"), "green");
        assert_eq!(
            clean("\tat Foo.bar(Foo.java:1)\r"),
            "\tat Foo.bar(Foo.java:1)"
        );
        assert_eq!(clean("50%\r100%\u{8}"), "50%100%");
        assert_eq!(clean("grüße 日本"), "grüße 日本");
        // A sequence cut off at the end of the line does not eat what is not there.
        assert_eq!(clean("x\u{1b}[31"), "x");
        assert_eq!(clean("x\u{1b}"), "x");
    }

    #[test]
    fn chunks_are_split_at_newlines_whatever_their_boundaries() {
        assert_eq!(
            lines_of(&[b"one\ntw", b"o\n", b"\nthree"]),
            ["one", "two", "", "three"]
        );
        assert_eq!(lines_of(&[b"crlf\r\n"]), ["crlf"]);
        assert!(lines_of(&[b""]).is_empty());
    }

    #[test]
    fn a_long_line_is_cut_and_says_how_much_was_dropped() {
        let long = vec![b'a'; MAX_LINE + 10];
        let out = lines_of(&[&long[..100], &long[100..], b"\nnext\n"]);
        assert_eq!(out.len(), 2);
        let first = out.first().expect("first line");
        assert!(first.starts_with(&"a".repeat(MAX_LINE)));
        assert!(first.ends_with(" … [10 more bytes cut]"), "{first}");
        assert_eq!(out.get(1).map(String::as_str), Some("next"));
    }

    #[test]
    fn a_cut_inside_a_character_leaves_no_replacement_mark() {
        let mut bytes = vec![b'a'; MAX_LINE - 1];
        bytes.extend_from_slice("é and more".as_bytes());
        let out = lines_of(&[&bytes]);
        let line = out.first().expect("a line");
        assert!(!line.contains('\u{FFFD}'), "{line}");
        assert!(line.ends_with("more bytes cut]"));
    }
}
