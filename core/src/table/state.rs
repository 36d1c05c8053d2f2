//! A viewer's copy of a live table: snapshot, deltas applied in order, and the
//! filtered, sorted view of it.

use std::cmp::Ordering;
use std::collections::HashMap;
use std::sync::Arc;

use serde_json::Value;

use super::column_filters::ColumnFilter;
use super::format::{cell_text, parse_timestamp};
use crate::table::wire::{Column, Row, TableDelta, TableSnapshot};

#[derive(Debug, Clone, Default, PartialEq)]
pub struct TableState {
    pub columns: Vec<Column>,
    rows: HashMap<String, Arc<Row>>,
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

    /// Every row, in no order.
    pub fn rows(&self) -> impl Iterator<Item = &Row> {
        self.rows.values().map(|row| &**row)
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
        self.rows.get(uid).map(|row| &**row)
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

    /// Rows matching every word of `filter` (in the name, namespace or any visible
    /// cell, case-insensitive), sorted by `sort`, else by namespace and name. Each
    /// row's sort value is computed once, not per comparison: 50,000 rows sort in
    /// tens of milliseconds in the browser.
    pub fn view(&self, filter: &str, sort: Option<&SortKey>, wide: bool, now: i64) -> Vec<&Row> {
        self.view_filtered(filter, &[], sort, wide, now)
    }

    /// [`Self::view`], also keeping only rows whose visible cells pass `by_column`.
    pub fn view_filtered(
        &self,
        filter: &str,
        by_column: &[ColumnFilter],
        sort: Option<&SortKey>,
        wide: bool,
        now: i64,
    ) -> Vec<&Row> {
        let visible = self.visible_columns(wide);
        let words: Vec<String> = filter.split_whitespace().map(str::to_lowercase).collect();
        // Each filter with its column's index, when that column is shown.
        let column_tests: Vec<(usize, &str, &ColumnFilter)> = by_column
            .iter()
            .filter_map(|f| {
                let i = visible
                    .iter()
                    .copied()
                    .find(|&i| self.columns.get(i).is_some_and(|c| c.name == f.column))?;
                Some((i, self.columns.get(i)?.kind.as_str(), f))
            })
            .collect();
        let matches = |row: &Row| {
            let passes_columns = column_tests.iter().all(|(i, kind, f)| {
                f.matches(&cell_text(
                    row.cells.get(*i).unwrap_or(&Value::Null),
                    kind,
                    now,
                ))
            });
            if !passes_columns {
                return false;
            }
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
        };
        let sort_index = sort.and_then(|s| {
            self.columns
                .iter()
                .position(|c| c.name == s.column)
                .map(|i| (i, s.descending))
        });
        let date = sort_index
            .and_then(|(i, _)| self.columns.get(i))
            .is_some_and(|c| c.kind == "date");
        let mut keyed: Vec<(SortValue<'_>, &Row)> = self
            .rows
            .values()
            .map(|row| &**row)
            .filter(|row| matches(row))
            .map(|row| {
                let value = sort_index.map_or(SortValue::Null, |(i, _)| {
                    SortValue::of(row.cells.get(i), date)
                });
                (value, row)
            })
            .collect();
        let descending = sort_index.is_some_and(|(_, d)| d);
        keyed.sort_unstable_by(|(va, a), (vb, b)| {
            let by_column = va.cmp_with(vb);
            let by_column = if descending {
                by_column.reverse()
            } else {
                by_column
            };
            by_column
                .then_with(|| a.namespace.cmp(&b.namespace))
                .then_with(|| a.name.cmp(&b.name))
        });
        keyed.into_iter().map(|(_, row)| row).collect()
    }

    /// Adds rows to a snapshot that arrives in parts.
    pub fn extend(&mut self, rows: Vec<Arc<Row>>) {
        for row in rows {
            self.rows.insert(row.uid.clone(), row);
        }
    }
}

/// A cell reduced to what sorting compares.
enum SortValue<'a> {
    Null,
    Number(f64),
    /// A timestamp, negated: newest first reads as "smallest age" first, as age
    /// columns sort in kubectl UIs.
    Time(std::cmp::Reverse<Option<i64>>),
    Text(&'a str),
    Other(String),
}

impl<'a> SortValue<'a> {
    fn of(cell: Option<&'a Value>, date: bool) -> Self {
        match cell.unwrap_or(&Value::Null) {
            Value::Null => Self::Null,
            Value::Number(n) => n.as_f64().map_or(Self::Null, Self::Number),
            Value::String(s) if date => Self::Time(std::cmp::Reverse(parse_timestamp(s))),
            Value::String(s) => Self::Text(s),
            other => Self::Other(other.to_string()),
        }
    }

    /// Nulls last; numbers by value; text naturally ("pod-2" < "pod-10").
    fn cmp_with(&self, other: &Self) -> Ordering {
        match (self, other) {
            (Self::Null, Self::Null) => Ordering::Equal,
            (Self::Null, _) => Ordering::Greater,
            (_, Self::Null) => Ordering::Less,
            (Self::Number(x), Self::Number(y)) => x.partial_cmp(y).unwrap_or(Ordering::Equal),
            (Self::Time(x), Self::Time(y)) => x.cmp(y),
            (Self::Text(x), Self::Text(y)) => natural_cmp(x, y),
            (x, y) => x.text().cmp(&y.text()),
        }
    }

    fn text(&self) -> String {
        match self {
            Self::Null => String::new(),
            Self::Number(n) => n.to_string(),
            Self::Time(t) => t.0.map(|t| t.to_string()).unwrap_or_default(),
            Self::Text(s) => format!("{s:?}"),
            Self::Other(s) => s.clone(),
        }
    }
}

/// Compares strings with embedded numbers by value ("pod-2" < "pod-10"), without
/// allocating (it runs for every comparison of a sort). Not `natord` (1.0.9, unchanged
/// since 2015): it skips whitespace, so "a b" and "ab" compare equal and kubectl cells
/// such as "Running 2" and "Running2" would tie, and it reads leading zeros as
/// fractions (strnatcmp: "1.05" before "1.5"); here whitespace counts and a run of
/// digits is its value.
fn natural_cmp(a: &str, b: &str) -> Ordering {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    let (mut i, mut j) = (0, 0);
    loop {
        match (a.get(i), b.get(j)) {
            (None, None) => return Ordering::Equal,
            (None, Some(_)) => return Ordering::Less,
            (Some(_), None) => return Ordering::Greater,
            (Some(x), Some(y)) if x.is_ascii_digit() && y.is_ascii_digit() => {
                let (na, next_i) = digit_run(a, i);
                let (nb, next_j) = digit_run(b, j);
                let o = na.len().cmp(&nb.len()).then_with(|| na.cmp(nb));
                if o != Ordering::Equal {
                    return o;
                }
                (i, j) = (next_i, next_j);
            }
            (Some(x), Some(y)) => {
                // Bytes of UTF-8 compare in the order of the characters they encode.
                let o = x.cmp(y);
                if o != Ordering::Equal {
                    return o;
                }
                (i, j) = (i + 1, j + 1);
            }
        }
    }
}

/// The digits from `start`, leading zeros left out, and where they end.
fn digit_run(s: &[u8], start: usize) -> (&[u8], usize) {
    let end = s
        .iter()
        .skip(start)
        .position(|c| !c.is_ascii_digit())
        .map_or(s.len(), |n| start + n);
    let digits = s.get(start..end).unwrap_or_default();
    let significant = digits
        .iter()
        .position(|&c| c != b'0')
        .unwrap_or(digits.len());
    (digits.get(significant..).unwrap_or_default(), end)
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
            ..Column::default()
        }
    }

    fn row(uid: &str, name: &str, cells: Vec<Value>) -> Arc<Row> {
        Arc::new(Row {
            uid: uid.into(),
            name: name.into(),
            namespace: Some("default".into()),
            resource_version: "1".into(),
            created: None,
            deleting: false,
            owners: vec![],
            changed: None,
            cells,
        })
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
    fn natural_order_compares_numbers_by_value_and_keeps_whitespace() {
        assert_eq!(natural_cmp("pod-2", "pod-10"), Ordering::Less);
        assert_eq!(natural_cmp("v1.5", "v1.05"), Ordering::Equal);
        assert_eq!(natural_cmp("Running 2", "Running2"), Ordering::Less);
        assert_eq!(natural_cmp("a", "a0"), Ordering::Less);
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
    fn column_filters_test_their_own_visible_column() {
        let s = state();
        let on = |column: &str, text: &str| {
            vec![ColumnFilter {
                column: column.into(),
                text: text.into(),
            }]
        };
        let tomcat = on("DBorWAS", "TOM");
        assert_eq!(
            names(s.view_filtered("", &tomcat, None, false, 0)),
            ["pod-2"]
        );
        let not_mysql = on("DBorWAS", "!mysql");
        assert_eq!(
            names(s.view_filtered("", &not_mysql, None, false, 0)),
            ["pod-1", "pod-2"]
        );
        // "pod" is in every Name cell, not in any DBorWAS cell.
        assert!(
            s.view_filtered("", &on("DBorWAS", "pod"), None, false, 0)
                .is_empty()
        );
        // A hidden column's filter holds nothing back; shown, it applies.
        assert_eq!(
            s.view_filtered("", &on("replicas", "7"), None, false, 0)
                .len(),
            3
        );
        assert_eq!(
            names(s.view_filtered("", &on("replicas", "7"), None, true, 0)),
            ["pod-1"]
        );
        // Filters and the text filter both apply.
        assert!(s.view_filtered("mysql", &tomcat, None, false, 0).is_empty());
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
