//! A line of a workload's log as one string, `TIME [POD/CONTAINER] TEXT`: when it was
//! written (kubelet's stamp), which Pod and container wrote it, and its text. The
//! view's own notes (a Pod followed, a Pod gone) name the Pod only: `TIME [POD] NOTE`.
//! One string, so the log buffer, search and download work on it unchanged.

/// A line taken apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TaggedLine<'a> {
    pub at: &'a str,
    pub pod: &'a str,
    /// `None` for the view's own notes.
    pub container: Option<&'a str>,
    pub text: &'a str,
}

/// A line as kubelet sends it with timestamps (`2026-11-28T03:00:00.5Z text`), tagged
/// with the Pod and container that wrote it.
pub fn tag(stamped: &str, pod: &str, container: &str) -> String {
    let (at, text) = stamped.split_once(' ').unwrap_or((stamped, ""));
    format!("{at} [{pod}/{container}] {text}")
}

/// A note of the view itself about `pod`, at `at`.
pub fn note(at: &str, pod: &str, text: &str) -> String {
    format!("{at} [{pod}] {text}")
}

/// The parts of a tagged line; `None` for anything else (a line of another view).
pub fn parse(line: &str) -> Option<TaggedLine<'_>> {
    let (at, rest) = line.split_once(' ')?;
    let (tag, text) = rest.strip_prefix('[')?.split_once(']')?;
    let text = text.strip_prefix(' ').unwrap_or(text);
    let (pod, container) = match tag.split_once('/') {
        Some((pod, container)) => (pod, Some(container)),
        None => (tag, None),
    };
    Some(TaggedLine {
        at,
        pod,
        container,
        text,
    })
}

/// A key that orders lines by their stamp. kubelet's RFC 3339 stamps drop the
/// fraction's trailing zeros, so the text alone does not sort (`…00.5Z` would come
/// after `…00.25Z`): the fraction is padded to nine digits.
pub fn time_key(line: &str) -> String {
    let at = line.split_once(' ').map_or(line, |(at, _)| at);
    let at = at.strip_suffix('Z').unwrap_or(at);
    let (whole, fraction) = at.split_once('.').unwrap_or((at, ""));
    format!("{whole}.{fraction:0<9}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tagged_line_comes_apart_as_it_was_made() {
        let line = tag("2026-11-28T03:00:00.5Z GET /orders 200", "web-1", "app");
        assert_eq!(line, "2026-11-28T03:00:00.5Z [web-1/app] GET /orders 200");
        assert_eq!(
            parse(&line),
            Some(TaggedLine {
                at: "2026-11-28T03:00:00.5Z",
                pod: "web-1",
                container: Some("app"),
                text: "GET /orders 200",
            })
        );
        let empty = tag("2026-11-28T03:00:00Z", "web-1", "app");
        assert_eq!(parse(&empty).map(|l| l.text), Some(""));
        let gone = note("2026-11-28T03:00:01Z", "web-1", "is gone");
        assert_eq!(
            parse(&gone).map(|l| (l.container, l.text)),
            Some((None, "is gone"))
        );
        assert_eq!(parse("plain text"), None);
    }

    #[test]
    fn lines_order_by_time_whatever_the_fraction_s_length() {
        let mut lines = [
            "2026-11-28T03:00:00.5Z [a/c] third",
            "2026-11-28T03:00:00.25Z [b/c] second",
            "2026-11-28T03:00:00Z [a/c] first",
            "2026-11-28T03:00:01.000000001Z [b/c] fourth",
        ];
        lines.sort_by_cached_key(|l| time_key(l));
        let texts: Vec<&str> = lines
            .iter()
            .filter_map(|l| parse(l))
            .map(|l| l.text)
            .collect();
        assert_eq!(texts, ["first", "second", "third", "fourth"]);
    }
}
