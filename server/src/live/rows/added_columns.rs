//! The cells of the columns a person adds to a table (`kubectl get -o custom-columns`):
//! each path is read once per feed, in kubectl's relaxed JSONPath, and evaluated on
//! every object the feed receives (lists and watch events ask for whole objects).
//! A path that cannot be read leaves its column empty with the reason, and nothing
//! else changes.

use jsonpath_rust::parser::model::JpQuery;
use jsonpath_rust::parser::parse_json_path;
use jsonpath_rust::query::js_path_process;
use portico_core::table::added_columns::AddedColumn;
use portico_core::table::wire::{Column, TableQuery};
use serde_json::Value;

/// The longest path read: far above any real one.
const MAX_PATH_LEN: usize = 512;
/// The deepest nesting of brackets and parentheses read; the parser recurses on it.
const MAX_NESTING: usize = 8;
/// What kubectl prints for a path that finds nothing.
const NONE: &str = "<none>";
/// The longest cell kept: `$` would print the whole object into every row.
const MAX_CELL_BYTES: usize = 1024;
/// Filters one path may hold: each runs once per item it is asked of.
const MAX_FILTERS: usize = 2;

/// A feed's added columns, their paths read.
#[derive(Debug)]
pub struct AddedColumns {
    columns: Vec<(AddedColumn, Result<JpQuery, String>)>,
}

impl AddedColumns {
    /// The columns `query` adds; `None` when it adds none.
    pub fn of(query: &TableQuery) -> Option<Self> {
        // A Secret's values never leave the server (as on its page).
        let secrets = query.group.is_empty() && query.plural == "secrets";
        let columns: Vec<_> = query
            .added_columns()
            .into_iter()
            .map(|column| {
                let read = if secrets {
                    Err("Columns are not added to Secrets: their values stay on the server.".into())
                } else {
                    read_path(&column.path)
                };
                (column, read)
            })
            .collect();
        (!columns.is_empty()).then_some(Self { columns })
    }

    /// Their definitions, to follow `kubectl_columns`. A name kubectl's columns
    /// already use is said under the header: a filter or a removal by that name
    /// would reach kubectl's column first.
    pub fn definitions_beside(&self, kubectl_columns: &[Column]) -> Vec<Column> {
        self.columns
            .iter()
            .map(|(column, read)| {
                let taken = kubectl_columns
                    .iter()
                    .any(|shown| shown.name.eq_ignore_ascii_case(&column.name));
                let problem = if taken {
                    Some(format!(
                        "kubectl's columns already have {}: give this one another name.",
                        column.name
                    ))
                } else {
                    read.as_ref().err().cloned()
                };
                Column {
                    name: column.name.clone(),
                    kind: "string".into(),
                    description: format!("Added column (JSONPath): {}", column.path),
                    path: Some(column.path.clone()),
                    problem,
                    ..Column::default()
                }
            })
            .collect()
    }

    /// Their cells for `object`, as kubectl prints them: every value found, joined
    /// by commas, or `<none>`; empty where the path could not be read.
    pub fn cells<'a>(&'a self, object: &'a Value) -> impl Iterator<Item = Value> + 'a {
        self.columns.iter().map(move |(_, read)| match read {
            Ok(query) => Value::String(print(query, object)),
            Err(_) => Value::Null,
        })
    }
}

fn print(query: &JpQuery, object: &Value) -> String {
    let Ok(found) = js_path_process(query, object) else {
        return NONE.into();
    };
    let texts: Vec<String> = found
        .into_iter()
        .map(|found| match found.val() {
            Value::String(text) => text.clone(),
            // Go's fmt, as kubectl prints a JSON null.
            Value::Null => "<nil>".into(),
            other => other.to_string(),
        })
        .collect();
    if texts.is_empty() {
        return NONE.into();
    }
    portico_core::table::format::shortened(texts.join(","), MAX_CELL_BYTES)
}

/// Reads a path as kubectl takes it (`.spec.x`, `{.spec.x}`, `spec.x`,
/// `.metadata.labels.app\.kubernetes\.io/name`), or says why it cannot.
fn read_path(path: &str) -> Result<JpQuery, String> {
    if path.trim().is_empty() {
        return Err("No JSONPath: write the column as NAME:.path.to.field".into());
    }
    if path.len() > MAX_PATH_LEN {
        return Err(format!(
            "The path is longer than {MAX_PATH_LEN} characters."
        ));
    }
    if let Some(why) = costly(path) {
        return Err(why);
    }
    if nesting(path) > MAX_NESTING {
        return Err(format!(
            "The path nests brackets more than {MAX_NESTING} deep."
        ));
    }
    let read = to_rfc9535(path);
    parse_json_path(&read).map_err(|error| match stopped_at(&error.to_string(), &read) {
        Some(rest) => format!("Not a JSONPath: it cannot be read from “{rest}”."),
        None => "Not a JSONPath: write it as kubectl takes it, such as .status.phase".into(),
    })
}

/// Where the parser stopped (its message's `--> line:column`), as the rest of `read`
/// from there (a few characters of it).
fn stopped_at(message: &str, read: &str) -> Option<String> {
    let (_, at) = message.split_once("--> ")?;
    let column: usize = at
        .split_whitespace()
        .next()?
        .split(':')
        .nth(1)?
        .parse()
        .ok()?;
    let rest: String = read
        .chars()
        .skip(column.saturating_sub(1))
        .take(16)
        .collect();
    (!rest.is_empty()).then_some(rest)
}

/// Why a path would cost far more per object than it reads, if it would: a filter
/// that goes back to the root (`$`) or descends (`..`) runs over the whole object for
/// every item it tests, and regular expressions are built per item. kubectl reads
/// none of these in a column.
fn costly(path: &str) -> Option<String> {
    let filters = path.matches("[?").count();
    if filters > MAX_FILTERS {
        return Some(format!(
            "A path holds at most {MAX_FILTERS} filters ([?…])."
        ));
    }
    // The text of every filter: from `[?` to the end of the path.
    let in_filters = path.match_indices("[?").any(|(at, _)| {
        let filter = path.get(at..).unwrap_or_default();
        filter.contains('$') || filter.contains("..")
    });
    if in_filters {
        return Some(
            "A filter may look only below the item it tests (@.field), not at $ or ..".into(),
        );
    }
    if path.contains("match(") || path.contains("search(") {
        return Some(
            "Regular expressions (match, search) are not read in a column, as kubectl reads none."
                .into(),
        );
    }
    None
}

fn nesting(path: &str) -> usize {
    let (mut depth, mut deepest) = (0usize, 0usize);
    for c in path.chars() {
        match c {
            '[' | '(' | '{' => {
                depth += 1;
                deepest = deepest.max(depth);
            }
            ']' | ')' | '}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    deepest
}

/// kubectl's relaxed JSONPath as RFC 9535 writes it: rooted at `$`, without the
/// template's braces, and with names that dot notation cannot carry (escaped dots,
/// slashes) in brackets. Bracketed parts are kept as written.
fn to_rfc9535(path: &str) -> String {
    let path = path.trim();
    let path = path
        .strip_prefix('{')
        .and_then(|p| p.strip_suffix('}'))
        .unwrap_or(path)
        .trim();
    let path = path.strip_prefix('$').unwrap_or(path);
    let chars: Vec<char> = path.chars().collect();
    let mut out = String::from("$");
    let mut i = 0;
    while let Some(&c) = chars.get(i) {
        match c {
            '[' => i = copy_bracket(&chars, i, &mut out),
            '.' => {
                let descendant = chars.get(i + 1) == Some(&'.');
                i += if descendant { 2 } else { 1 };
                let (name, next) = read_name(&chars, i);
                i = next;
                push_name(&mut out, &name, descendant);
            }
            _ => {
                let (name, next) = read_name(&chars, i);
                i = next;
                push_name(&mut out, &name, false);
            }
        }
    }
    out
}

/// Copies the bracket starting at `start` (with what it nests and quotes) to `out`;
/// returns where it ends.
fn copy_bracket(chars: &[char], start: usize, out: &mut String) -> usize {
    let (mut depth, mut quote) = (0usize, None::<char>);
    let mut i = start;
    while let Some(&c) = chars.get(i) {
        out.push(c);
        i += 1;
        match (quote, c) {
            (Some(_), '\\') => {
                if let Some(&escaped) = chars.get(i) {
                    out.push(escaped);
                    i += 1;
                }
            }
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '"' | '\'') => quote = Some(c),
            (None, '[') => depth += 1,
            (None, ']') => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    break;
                }
            }
            _ => {}
        }
    }
    i
}

/// A dot-notation name from `start` (up to an unescaped `.` or a `[`), unescaped.
fn read_name(chars: &[char], start: usize) -> (String, usize) {
    let mut name = String::new();
    let mut i = start;
    while let Some(&c) = chars.get(i) {
        match c {
            '\\' => {
                if let Some(&escaped) = chars.get(i + 1) {
                    name.push(escaped);
                }
                i += 2;
            }
            '.' | '[' => break,
            c => {
                name.push(c);
                i += 1;
            }
        }
    }
    (name, i)
}

fn push_name(out: &mut String, name: &str, descendant: bool) {
    let dots = if descendant { ".." } else { "." };
    if name.is_empty() {
        // `..[0]`: the bracket follows; a lone `.` adds nothing.
        if descendant {
            out.push_str("..");
        }
        return;
    }
    let shorthand = name == "*"
        || (name
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || !c.is_ascii())
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || !c.is_ascii()));
    if shorthand {
        out.push_str(dots);
        out.push_str(name);
    } else {
        if descendant {
            out.push_str("..");
        }
        let quoted = name.replace('\\', "\\\\").replace('\'', "\\'");
        out.push_str(&format!("['{quoted}']"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn column(spec: &str) -> AddedColumns {
        AddedColumns::of(&TableQuery {
            columns: Some(spec.into()),
            ..TableQuery::default()
        })
        .expect("a column")
    }

    fn pod() -> Value {
        json!({
            "metadata": {"name": "web-1", "labels": {"app.kubernetes.io/name": "web"}},
            "spec": {"containers": [{"image": "nginx:1"}, {"image": "busybox"}], "nodeName": null},
            "status": {"conditions": [
                {"type": "Ready", "status": "False"},
                {"type": "Initialized", "status": "True"}
            ], "restarts": 3}
        })
    }

    fn cells(spec: &str) -> Vec<Value> {
        column(spec).cells(&pod()).collect()
    }

    #[test]
    fn kubectl_paths_print_as_kubectl_prints_them() {
        assert_eq!(
            cells(
                r#"IMAGES:.spec.containers[*].image,READY:{.status.conditions[?(@.type=="Ready")].status},R:status.restarts,N:$.metadata.name"#
            ),
            [
                json!("nginx:1,busybox"),
                json!("False"),
                json!("3"),
                json!("web-1")
            ]
        );
        assert_eq!(
            cells(
                r"APP:.metadata.labels.app\.kubernetes\.io/name,X:.spec.missing,NODE:.spec.nodeName"
            ),
            [json!("web"), json!("<none>"), json!("<nil>")]
        );
        assert_eq!(
            cells("APP:.metadata.labels['app.kubernetes.io/name'],ALL:..image"),
            [json!("web"), json!("nginx:1,busybox")]
        );
    }

    #[test]
    fn a_bad_path_says_why_and_leaves_the_other_columns_alone() {
        let added = column("BAD:.spec[?(@.a ==)],NONE,GOOD:.metadata.name");
        let defs = added.definitions_beside(&[]);
        assert!(
            defs[0]
                .problem
                .as_deref()
                .is_some_and(|p| p == "Not a JSONPath: it cannot be read from “)]”.")
        );
        assert!(
            defs[1]
                .problem
                .as_deref()
                .is_some_and(|p| p.contains("No JSONPath"))
        );
        assert_eq!(defs[2].problem, None);
        assert_eq!(defs[2].path.as_deref(), Some(".metadata.name"));
        let cells: Vec<Value> = added.cells(&pod()).collect();
        assert_eq!(cells, [Value::Null, Value::Null, json!("web-1")]);
    }

    #[test]
    fn a_name_kubectl_already_shows_is_said_under_the_header() {
        let added = column("status:.status.phase,PHASE:.status.phase");
        let kubectl = [Column {
            name: "STATUS".into(),
            ..Column::default()
        }];
        let defs = added.definitions_beside(&kubectl);
        assert!(
            defs[0]
                .problem
                .as_deref()
                .is_some_and(|p| p.contains("already have status"))
        );
        assert_eq!(defs[1].problem, None);
    }

    #[test]
    fn deep_nesting_is_refused_before_the_parser_recurses() {
        let deep = format!("D:.a{}", "[(".repeat(30));
        let added = column(&deep);
        let problem = added
            .definitions_beside(&[])
            .into_iter()
            .next()
            .and_then(|d| d.problem);
        assert!(problem.is_some_and(|p| p.contains("nests")));
    }

    #[test]
    fn costly_paths_are_refused_and_cells_are_bounded() {
        for path in [
            ".a[?$..x]",
            "..[?@..a]",
            r#".a[?match(@.b, "x+")]"#,
            ".a[?@.b][?@.c][?@.d]",
        ] {
            let added = column(&format!("C:{path}"));
            let problem = added
                .definitions_beside(&[])
                .into_iter()
                .next()
                .and_then(|d| d.problem);
            assert!(problem.is_some(), "{path} is read");
        }
        // Two filters below the item, and `..` before a filter, are fine.
        let added = column(r#"C:..conditions[?(@.type=="Ready")].status"#);
        assert_eq!(
            added
                .definitions_beside(&[])
                .into_iter()
                .next()
                .and_then(|d| d.problem),
            None
        );
        let big = json!({"spec": {"blob": "x".repeat(5000)}});
        let cells: Vec<Value> = column("B:.spec.blob").cells(&big).collect();
        let text = cells[0].as_str().unwrap_or_default();
        assert!(text.len() <= MAX_CELL_BYTES + '…'.len_utf8() && text.ends_with('…'));
    }

    #[test]
    fn secrets_get_no_added_columns() {
        let added = AddedColumns::of(&TableQuery {
            version: "v1".into(),
            plural: "secrets".into(),
            columns: Some("V:.data.password".into()),
            ..TableQuery::default()
        })
        .expect("a column");
        assert!(
            added
                .definitions_beside(&[])
                .into_iter()
                .next()
                .and_then(|d| d.problem)
                .is_some()
        );
        let secret = json!({"data": {"password": "c2VjcmV0"}});
        assert_eq!(added.cells(&secret).collect::<Vec<_>>(), [Value::Null]);
    }

    #[test]
    fn no_spec_no_columns() {
        assert!(AddedColumns::of(&TableQuery::default()).is_none());
    }
}
