//! Filters on one column each, kept in the page's URL as `f.<column>=<text>` so a
//! filtered view can be shared: a row shows when its cell holds the text
//! (case-insensitive), or, for `!text`, when it does not.

/// The URL parameters' prefix.
pub const PARAM_PREFIX: &str = "f.";

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ColumnFilter {
    pub column: String,
    pub text: String,
}

impl ColumnFilter {
    /// The URL parameter holding `column`'s filter.
    pub fn param(column: &str) -> String {
        format!("{PARAM_PREFIX}{column}")
    }

    /// Whether a cell's printed text passes this filter.
    pub fn matches(&self, cell: &str) -> bool {
        let text = self.text.trim();
        let (negated, wanted) = match text.strip_prefix('!') {
            Some(rest) => (true, rest.trim()),
            None => (false, text),
        };
        if wanted.is_empty() {
            return true;
        }
        let found = cell.to_lowercase().contains(&wanted.to_lowercase());
        found != negated
    }
}

/// The column filters among a URL's parameters (empty ones are no filter).
pub fn from_params<'a>(params: impl IntoIterator<Item = (&'a str, &'a str)>) -> Vec<ColumnFilter> {
    params
        .into_iter()
        .filter_map(|(key, text)| {
            let column = key.strip_prefix(PARAM_PREFIX)?;
            (!column.is_empty() && !text.trim().is_empty()).then(|| ColumnFilter {
                column: column.to_string(),
                text: text.to_string(),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn filter(text: &str) -> ColumnFilter {
        ColumnFilter {
            column: "STATUS".into(),
            text: text.into(),
        }
    }

    #[test]
    fn text_matches_inside_a_cell_and_bang_negates() {
        assert!(filter("run").matches("Running"));
        assert!(!filter("run").matches("Pending"));
        assert!(filter("!Running").matches("CrashLoopBackOff"));
        assert!(!filter("! running").matches("Running"));
        assert!(filter("!").matches("anything"));
    }

    #[test]
    fn only_prefixed_non_empty_parameters_are_filters() {
        let found = from_params([("q", "x"), ("f.READY", "1/1"), ("f.AGE", " "), ("f.", "y")]);
        assert_eq!(
            found,
            [ColumnFilter {
                column: "READY".into(),
                text: "1/1".into()
            }]
        );
        assert_eq!(ColumnFilter::param("READY"), "f.READY");
    }
}
