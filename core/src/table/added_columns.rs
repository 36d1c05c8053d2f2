//! Columns a person adds beside kubectl's, written as `kubectl get -o custom-columns`
//! takes them: `NAME:JSONPATH,NAME:JSONPATH`. The server reads the paths (see its
//! `watch::added_columns`); the page only splits and joins the text.

/// The most columns one table adds: each costs a JSONPath per row and per change.
pub const MAX_ADDED_COLUMNS: usize = 8;
/// The longest spec accepted: eight generous paths.
pub const MAX_SPEC_LEN: usize = 2048;

/// One added column: its header and the JSONPath of its cells.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AddedColumn {
    pub name: String,
    pub path: String,
}

/// The columns of `spec`. Unlike kubectl, a comma inside brackets or quotes
/// (`[0,1]`, `[?(@.a=="x,y")]`) does not end a column; every spec kubectl reads
/// reads the same here. An entry without `:` is a column without a path.
pub fn parse(spec: &str) -> Vec<AddedColumn> {
    split_top_level(spec)
        .into_iter()
        .map(str::trim)
        .filter(|entry| !entry.is_empty())
        .map(|entry| {
            let (name, path) = entry.split_once(':').unwrap_or((entry, ""));
            AddedColumn {
                name: name.trim().to_string(),
                path: path.trim().to_string(),
            }
        })
        .collect()
}

/// The spec of `columns`, as `parse` reads it back.
pub fn to_spec(columns: &[AddedColumn]) -> String {
    columns
        .iter()
        .map(|c| format!("{}:{}", c.name, c.path))
        .collect::<Vec<_>>()
        .join(",")
}

/// Whether a spec is within bounds (a bad path is no reason to refuse the table:
/// the column says so instead).
pub fn is_within_bounds(spec: &str) -> bool {
    spec.len() <= MAX_SPEC_LEN && parse(spec).len() <= MAX_ADDED_COLUMNS
}

/// Why a column name cannot be added beside `existing` ones, if it cannot.
pub fn name_problem(name: &str, existing: &[&str]) -> Option<String> {
    let name = name.trim();
    if name.is_empty() {
        return Some("A column needs a name.".into());
    }
    // Each of these would end or swallow the columns after it in the spec.
    if name.contains([',', ':', '"', '\'', '[', ']', '(', ')', '{', '}']) {
        return Some("A column's name is letters, digits, spaces, '-', '_' or '.'.".into());
    }
    existing
        .iter()
        .any(|e| e.eq_ignore_ascii_case(name))
        .then(|| format!("The table already has a column {name}."))
}

fn split_top_level(spec: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let (mut depth, mut quote, mut start) = (0usize, None::<char>, 0usize);
    for (i, c) in spec.char_indices() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '"' | '\'') => quote = Some(c),
            (None, '[' | '(' | '{') => depth += 1,
            (None, ']' | ')' | '}') => depth = depth.saturating_sub(1),
            (None, ',') if depth == 0 => {
                parts.push(&spec[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&spec[start..]);
    parts
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kubectl_specs_read_as_kubectl_reads_them() {
        let columns = parse("NAME:.metadata.name, IMAGE:.spec.containers[*].image");
        assert_eq!(
            columns,
            [
                AddedColumn {
                    name: "NAME".into(),
                    path: ".metadata.name".into()
                },
                AddedColumn {
                    name: "IMAGE".into(),
                    path: ".spec.containers[*].image".into()
                },
            ]
        );
        assert_eq!(parse(&to_spec(&columns)), columns);
    }

    #[test]
    fn commas_inside_brackets_and_quotes_stay_in_the_path() {
        let columns = parse(r#"A:.items[0,1],B:.c[?(@.t=="x,y")].s,C"#);
        let paths: Vec<&str> = columns.iter().map(|c| c.path.as_str()).collect();
        assert_eq!(paths, [".items[0,1]", r#".c[?(@.t=="x,y")].s"#, ""]);
        assert_eq!(columns[2].name, "C");
    }

    #[test]
    fn bounds_and_names() {
        let nine = (0..9)
            .map(|i| format!("C{i}:.a"))
            .collect::<Vec<_>>()
            .join(",");
        assert!(!is_within_bounds(&nine));
        assert!(is_within_bounds("A:.a"));
        assert!(!is_within_bounds(&"x".repeat(MAX_SPEC_LEN + 1)));
        assert!(name_problem("ready", &["Name", "READY"]).is_some());
        assert!(name_problem("a:b", &[]).is_some());
        assert!(name_problem("A(", &[]).is_some());
        assert!(name_problem(" ", &[]).is_some());
        assert_eq!(name_problem("IMAGE", &["Name"]), None);
    }
}
