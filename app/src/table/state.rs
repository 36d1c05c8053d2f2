//! A viewer's copy of a live table: snapshot, deltas applied in order, and the
//! filtered, sorted view of it.

use std::cmp::Ordering;
use std::collections::HashMap;

use serde_json::Value;

use super::format::{cell_text, parse_timestamp};
use super::model::{Column, Row, TableDelta, TableSnapshot};

#[derive(Debug, Clone, Default, PartialEq)]
pub struct TableState {
    pub columns: Vec<Column>,
    rows: HashMap<String, Row>,
    pub resource_version: String,
}

/// Sorting by a column, named as the Table API names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SortKey {
    pub column: String,
    pub descending: bool,
}

impl SortKey {
    /// `Name` or `Name:desc`, as kept in the URL.
    pub fn parse(text: &str) -> Option<Self> {
        let (column, descending) = match text.rsplit_once(':') {
            Some((c, "desc")) => (c, true),
            Some((c, "asc")) => (c, false),
            _ => (text, false),
        };
        (!column.is_empty()).then(|| Self {
            column: column.to_string(),
            descending,
        })
    }

    /// The next sort after clicking `column`'s header: ascending, then descending,
    /// then unsorted.
    pub fn toggled(current: Option<&SortKey>, column: String) -> Option<SortKey> {
        match current {
            Some(k) if k.column == column && !k.descending => Some(SortKey {
                column,
                descending: true,
            }),
            Some(k) if k.column == column => None,
            _ => Some(SortKey {
                column,
                descending: false,
            }),
        }
    }

    pub fn to_param(&self) -> String {
        if self.descending {
            format!("{}:desc", self.column)
        } else {
            self.column.clone()
        }
    }
}

impl TableState {
    pub fn from_snapshot(snapshot: TableSnapshot) -> Self {
        Self {
            columns: snapshot.columns,
            rows: snapshot
                .rows
                .into_iter()
                .map(|r| (r.uid.clone(), r))
                .collect(),
            resource_version: snapshot.resource_version,
        }
    }

    /// Applies a delta: deletes first, then upserts (an object deleted and re-created
    /// under a new uid within one batch ends up present).
    pub fn apply(&mut self, delta: TableDelta) {
        for uid in &delta.deletes {
            self.rows.remove(uid);
        }
        for row in delta.upserts {
            self.rows.insert(row.uid.clone(), row);
        }
        if !delta.resource_version.is_empty() {
            self.resource_version = delta.resource_version;
        }
    }

    pub fn len(&self) -> usize {
        self.rows.len()
    }

    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    pub fn row(&self, uid: &str) -> Option<&Row> {
        self.rows.get(uid)
    }

    /// Indices of the columns shown: priority 0 only, or all of them in the wide view.
    pub fn visible_columns(&self, wide: bool) -> Vec<usize> {
        self.columns
            .iter()
            .enumerate()
            .filter(|(_, c)| wide || c.priority <= 0)
            .map(|(i, _)| i)
            .collect()
    }

    /// Rows matching every word of `filter` (in any visible cell, case-insensitive),
    /// sorted by `sort`, else by namespace and name.
    pub fn view(&self, filter: &str, sort: Option<&SortKey>, wide: bool, now: i64) -> Vec<&Row> {
        let visible = self.visible_columns(wide);
        let words: Vec<String> = filter.split_whitespace().map(str::to_lowercase).collect();
        let mut rows: Vec<&Row> = self
            .rows
            .values()
            .filter(|row| {
                if words.is_empty() {
                    return true;
                }
                let mut text = format!("{} {}", row.namespace.as_deref().unwrap_or(""), row.name);
                for &i in &visible {
                    if let (Some(cell), Some(col)) = (row.cells.get(i), self.columns.get(i)) {
                        text.push(' ');
                        text.push_str(&cell_text(cell, &col.kind, now));
                    }
                }
                let text = text.to_lowercase();
                words.iter().all(|w| text.contains(w.as_str()))
            })
            .collect();
        let sort_index = sort.and_then(|s| {
            self.columns
                .iter()
                .position(|c| c.name == s.column)
                .map(|i| (i, s.descending))
        });
        rows.sort_by(|a, b| {
            let by_column = match sort_index {
                Some((i, descending)) => {
                    let kind = self.columns.get(i).map_or("string", |c| c.kind.as_str());
                    let o = compare_cells(a.cells.get(i), b.cells.get(i), kind);
                    if descending { o.reverse() } else { o }
                }
                None => Ordering::Equal,
            };
            by_column
                .then_with(|| a.namespace.cmp(&b.namespace))
                .then_with(|| a.name.cmp(&b.name))
        });
        rows
    }
}

fn compare_cells(a: Option<&Value>, b: Option<&Value>, kind: &str) -> Ordering {
    let a = a.unwrap_or(&Value::Null);
    let b = b.unwrap_or(&Value::Null);
    match (a, b) {
        (Value::Null, Value::Null) => Ordering::Equal,
        (Value::Null, _) => Ordering::Greater,
        (_, Value::Null) => Ordering::Less,
        (Value::Number(x), Value::Number(y)) => x
            .as_f64()
            .partial_cmp(&y.as_f64())
            .unwrap_or(Ordering::Equal),
        (Value::String(x), Value::String(y)) if kind == "date" => {
            // Newest first reads as "smallest age" first, as age columns sort in kubectl UIs.
            parse_timestamp(y).cmp(&parse_timestamp(x))
        }
        (Value::String(x), Value::String(y)) => natural_cmp(x, y),
        (x, y) => x.to_string().cmp(&y.to_string()),
    }
}

/// Compares strings with embedded numbers by value ("pod-2" < "pod-10").
fn natural_cmp(a: &str, b: &str) -> Ordering {
    let (mut a, mut b) = (a.chars().peekable(), b.chars().peekable());
    loop {
        match (a.peek().copied(), b.peek().copied()) {
            (None, None) => return Ordering::Equal,
            (None, Some(_)) => return Ordering::Less,
            (Some(_), None) => return Ordering::Greater,
            (Some(x), Some(y)) if x.is_ascii_digit() && y.is_ascii_digit() => {
                let mut na = String::new();
                while let Some(c) = a.peek().copied().filter(char::is_ascii_digit) {
                    na.push(c);
                    a.next();
                }
                let mut nb = String::new();
                while let Some(c) = b.peek().copied().filter(char::is_ascii_digit) {
                    nb.push(c);
                    b.next();
                }
                let o = na
                    .trim_start_matches('0')
                    .len()
                    .cmp(&nb.trim_start_matches('0').len())
                    .then_with(|| na.trim_start_matches('0').cmp(nb.trim_start_matches('0')));
                if o != Ordering::Equal {
                    return o;
                }
            }
            (Some(x), Some(y)) => {
                let o = x.cmp(&y);
                if o != Ordering::Equal {
                    return o;
                }
                a.next();
                b.next();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn col(name: &str, kind: &str, priority: i32) -> Column {
        Column {
            name: name.into(),
            kind: kind.into(),
            format: String::new(),
            description: String::new(),
            priority,
        }
    }

    fn row(uid: &str, name: &str, cells: Vec<Value>) -> Row {
        Row {
            uid: uid.into(),
            name: name.into(),
            namespace: Some("default".into()),
            resource_version: "1".into(),
            created: None,
            deleting: false,
            owners: vec![],
            cells,
        }
    }

    fn state() -> TableState {
        TableState::from_snapshot(TableSnapshot {
            columns: vec![
                col("Name", "string", 0),
                col("DBorWAS", "string", 0),
                col("replicas", "string", 1),
                col("Age", "date", 0),
            ],
            rows: vec![
                row(
                    "a",
                    "pod-10",
                    vec![
                        json!("pod-10"),
                        json!("mysql"),
                        json!(3),
                        json!("1970-01-01T00:00:10Z"),
                    ],
                ),
                row(
                    "b",
                    "pod-2",
                    vec![
                        json!("pod-2"),
                        json!("tomcat"),
                        json!(1),
                        json!("1970-01-01T00:00:20Z"),
                    ],
                ),
                row(
                    "c",
                    "pod-1",
                    vec![
                        json!("pod-1"),
                        Value::Null,
                        json!(7),
                        json!("1970-01-01T00:00:30Z"),
                    ],
                ),
            ],
            resource_version: "5".into(),
        })
    }

    fn names(rows: Vec<&Row>) -> Vec<&str> {
        rows.into_iter().map(|r| r.name.as_str()).collect()
    }

    #[test]
    fn wide_columns_only_in_wide_view() {
        let s = state();
        assert_eq!(s.visible_columns(false), [0, 1, 3]);
        assert_eq!(s.visible_columns(true), [0, 1, 2, 3]);
    }

    #[test]
    fn default_order_is_namespace_then_name() {
        assert_eq!(
            names(state().view("", None, false, 100)),
            ["pod-1", "pod-10", "pod-2"]
        );
    }

    #[test]
    fn sorts_numbers_naturally_and_nulls_last() {
        let s = state();
        let by = |c: &str| SortKey::parse(c);
        assert_eq!(
            names(s.view("", by("Name").as_ref(), false, 0)),
            ["pod-1", "pod-2", "pod-10"]
        );
        assert_eq!(
            names(s.view("", by("replicas:desc").as_ref(), true, 0)),
            ["pod-1", "pod-10", "pod-2"]
        );
        assert_eq!(
            names(s.view("", by("DBorWAS").as_ref(), false, 0)),
            ["pod-10", "pod-2", "pod-1"]
        );
        assert_eq!(
            names(s.view("", by("Age").as_ref(), false, 0)),
            ["pod-1", "pod-2", "pod-10"]
        );
    }

    #[test]
    fn filter_looks_at_visible_cells_only() {
        let s = state();
        assert_eq!(names(s.view("tomcat", None, false, 0)), ["pod-2"]);
        assert_eq!(names(s.view("tomcat", None, false, 0)), ["pod-2"]);
        // replicas is a wide column: 7 matches only in the wide view.
        assert!(s.view("7", None, false, 0).is_empty());
        assert_eq!(names(s.view("7", None, true, 0)), ["pod-1"]);
    }

    #[test]
    fn deltas_apply_in_order() {
        let mut s = state();
        s.apply(TableDelta {
            upserts: vec![row("d", "pod-3", vec![json!("pod-3")])],
            deletes: vec!["a".into()],
            resource_version: "9".into(),
        });
        assert_eq!(s.len(), 3);
        assert!(s.row("a").is_none());
        assert_eq!(s.row("d").map(|r| r.name.as_str()), Some("pod-3"));
        assert_eq!(s.resource_version, "9");
    }

    #[test]
    fn header_clicks_cycle_ascending_descending_unsorted() {
        let asc = SortKey::toggled(None, "Age".into());
        assert_eq!(asc.as_ref().map(|k| k.descending), Some(false));
        let desc = SortKey::toggled(asc.as_ref(), "Age".into());
        assert_eq!(desc.as_ref().map(|k| k.descending), Some(true));
        assert_eq!(SortKey::toggled(desc.as_ref(), "Age".into()), None);
        let other = SortKey::toggled(desc.as_ref(), "Name".into());
        assert_eq!(
            other.map(|k| (k.column, k.descending)),
            Some(("Name".into(), false))
        );
    }

    #[test]
    fn sort_keys_round_trip() {
        assert_eq!(
            SortKey::parse("Age:desc").map(|k| k.to_param()),
            Some("Age:desc".into())
        );
        assert_eq!(SortKey::parse("Name").map(|k| k.descending), Some(false));
        assert_eq!(SortKey::parse(""), None);
    }
}
