//! About how many bytes a row and a change take in memory: what the tables, the
//! histories and the shared rows count, and [`crate::live::budgets::memory`] bounds. A leaf of the
//! live layer (it uses nothing of it), so that everything that holds rows can count
//! them without an import circle through the budget.

use portico_core::table::wire::{Row, TableDelta};

/// About what a row takes in memory: its strings plus the structures around them.
pub fn row_bytes(row: &Row) -> usize {
    const ROW: usize = 160;
    const STRING: usize = 24;
    let strings = [
        Some(&row.uid),
        Some(&row.name),
        row.namespace.as_ref(),
        Some(&row.resource_version),
        row.created.as_ref(),
        row.changed.as_ref(),
    ];
    let text: usize = strings.iter().flatten().map(|s| s.len() + STRING).sum();
    let owners: usize = row.owners.iter().map(|o| o.len() + STRING).sum();
    let cells: usize = row.cells.iter().map(value_bytes).sum();
    ROW + text + owners + cells
}

/// A delta kept in a feed's history.
pub fn delta_bytes(delta: &TableDelta) -> usize {
    let upserts: usize = delta.upserts.iter().map(|row| row_bytes(row)).sum();
    let deletes: usize = delta.deletes.iter().map(|uid| uid.len() + 24).sum();
    64 + upserts + deletes + delta.resource_version.len()
}

fn value_bytes(value: &serde_json::Value) -> usize {
    use serde_json::Value;
    const VALUE: usize = 32;
    match value {
        Value::String(s) => VALUE + s.len(),
        // Cells are scalars; a structured one (rare) is counted by its JSON.
        Value::Array(_) | Value::Object(_) => VALUE + value.to_string().len() * 2,
        _ => VALUE,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rows_size_grows_with_its_text() {
        let row = |cell: &str| Row {
            uid: "u".into(),
            name: "n".into(),
            namespace: None,
            resource_version: "1".into(),
            created: None,
            deleting: false,
            owners: vec![],
            changed: None,
            cells: vec![serde_json::Value::from(cell)],
        };
        assert_eq!(
            row_bytes(&row(&"x".repeat(1000))) - row_bytes(&row("")),
            1000
        );
    }
}
