//! Percent-encoding for query strings Portico builds.

use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};

/// Everything but RFC 3986's unreserved characters (`A-Z a-z 0-9 - . _ ~`).
const RESERVED: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// Percent-encodes everything but RFC 3986's unreserved characters.
pub fn percent_encode(text: &str) -> String {
    utf8_percent_encode(text, RESERVED).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_unreserved_characters_stay() {
        assert_eq!(percent_encode("a-Z.0_~"), "a-Z.0_~");
        assert_eq!(percent_encode("a b/c?d=é"), "a%20b%2Fc%3Fd%3D%C3%A9");
    }
}
