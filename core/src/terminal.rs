//! Text a terminal program wrote, made plain: what a container's log shows on a page
//! (watch) and what a Stack's status quotes of it (reconcile). Below every layer.
//!
//! Not `strip-ansi-escapes`: it drops tabs along with the escapes.

/// `text` without terminal escape sequences (CSI `ESC [ … final`, OSC `ESC ] … BEL`
/// or `ESC \`, and the short `ESC` forms) and without control characters but tab.
pub fn clean(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\u{1b}' => match chars.next() {
                // CSI: parameters and intermediates up to a final byte in @..~.
                Some('[') => {
                    for c in chars.by_ref() {
                        if ('@'..='~').contains(&c) {
                            break;
                        }
                    }
                }
                // OSC (window titles, hyperlinks): up to BEL or ST (ESC \).
                Some(']') => {
                    while let Some(c) = chars.next() {
                        if c == '\u{7}' {
                            break;
                        }
                        if c == '\u{1b}' {
                            if chars.peek() == Some(&'\\') {
                                chars.next();
                            }
                            break;
                        }
                    }
                }
                // ESC, intermediates (0x20..0x2F), a final: e.g. ESC ( B.
                Some(c) if (' '..='/').contains(&c) => {
                    while chars.next_if(|c| (' '..='/').contains(c)).is_some() {}
                    chars.next();
                }
                Some(_) | None => {}
            },
            // C1 CSI, as some programs write it.
            '\u{9b}' => {
                for c in chars.by_ref() {
                    if ('@'..='~').contains(&c) {
                        break;
                    }
                }
            }
            '\t' => out.push(c),
            c if c.is_control() => {}
            c => out.push(c),
        }
    }
    out
}
