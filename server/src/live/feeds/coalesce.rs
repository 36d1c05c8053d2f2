//! Merging a burst of deltas into one, so a viewer receives at most one message per
//! read of its queue however many watch events arrived meanwhile.

use std::collections::HashMap;
use std::sync::Arc;

use portico_core::table::wire::{Row, TableDelta};

#[derive(Default)]
pub struct Coalescer {
    upserts: HashMap<String, Arc<Row>>,
    order: Vec<String>,
    deletes: Vec<String>,
    resource_version: String,
    merged: usize,
}

impl Coalescer {
    pub fn push(&mut self, delta: &TableDelta) {
        self.merged += 1;
        for uid in &delta.deletes {
            if self.upserts.remove(uid).is_some() {
                self.order.retain(|u| u != uid);
            }
            if !self.deletes.contains(uid) {
                self.deletes.push(uid.clone());
            }
        }
        for row in &delta.upserts {
            self.deletes.retain(|u| u != &row.uid);
            if self.upserts.insert(row.uid.clone(), row.clone()).is_none() {
                self.order.push(row.uid.clone());
            }
        }
        if !delta.resource_version.is_empty() {
            self.resource_version = delta.resource_version.clone();
        }
    }

    /// How many deltas were merged.
    pub fn merged(&self) -> usize {
        self.merged
    }

    /// How many rows the merged delta changes or deletes.
    pub fn rows(&self) -> usize {
        self.order.len() + self.deletes.len()
    }

    pub fn finish(mut self) -> TableDelta {
        let upserts = self
            .order
            .iter()
            .filter_map(|uid| self.upserts.remove(uid))
            .collect();
        TableDelta {
            upserts,
            deletes: self.deletes,
            resource_version: self.resource_version,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(uid: &str, rv: &str) -> Arc<Row> {
        Arc::new(Row {
            uid: uid.into(),
            name: uid.into(),
            namespace: None,
            resource_version: rv.into(),
            created: None,
            deleting: false,
            owners: vec![],
            changed: None,
            cells: vec![],
        })
    }

    fn delta(upserts: Vec<Arc<Row>>, deletes: &[&str], rv: &str) -> TableDelta {
        TableDelta {
            upserts,
            deletes: deletes.iter().map(|s| s.to_string()).collect(),
            resource_version: rv.into(),
        }
    }

    #[test]
    fn later_changes_win_and_order_is_kept() {
        let mut c = Coalescer::default();
        c.push(&delta(vec![row("a", "1")], &[], "1"));
        c.push(&delta(vec![row("b", "2")], &[], "2"));
        c.push(&delta(vec![row("a", "3")], &[], "3"));
        c.push(&delta(vec![], &["b"], "4"));
        assert_eq!(c.merged(), 4);
        let d = c.finish();
        assert_eq!(d.upserts, vec![row("a", "3")]);
        assert_eq!(d.deletes, vec!["b".to_string()]);
        assert_eq!(d.resource_version, "4");
    }

    #[test]
    fn an_upsert_after_a_delete_cancels_the_delete() {
        let mut c = Coalescer::default();
        c.push(&delta(vec![], &["a"], "1"));
        c.push(&delta(vec![row("a", "2")], &[], "2"));
        let d = c.finish();
        assert!(d.deletes.is_empty());
        assert_eq!(d.upserts, vec![row("a", "2")]);
    }
}
