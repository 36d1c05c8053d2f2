//! Resource usage from the metrics API (`metrics.k8s.io`, served by metrics-server):
//! what a page asks for, what it gets back, and the figures as `kubectl top` prints
//! them (CPU in millicores, memory in MiB).

use serde::{Deserialize, Serialize};

/// Whose usage a page shows.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum UsageTarget {
    /// One Pod, container by container, beside each container's requests and limits.
    Pod { namespace: String, name: String },
    /// One node, beside what it can allocate.
    Node { name: String },
    /// A workload's or a Stack's Pods (a label selector), Pod by Pod, with requests
    /// and limits summed over each Pod's containers.
    Workload { namespace: String, selector: String },
    /// Every Pod of a namespace (`None`: of every namespace), usage only: a Pod
    /// table's usage columns.
    Table { namespace: Option<String> },
}

/// The answer: figures, or why there are none.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Usage {
    /// The cluster serves no metrics API, or it does not answer: one sentence.
    NotServed(String),
    Measured(UsageReport),
}

/// The latest figures of a target.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct UsageReport {
    /// Containers, Pods or the node, by name (a table's: `namespace/name`).
    pub rows: Vec<UsageRow>,
    /// When the newest figure was measured (RFC 3339), where the API says.
    pub measured_at: Option<String>,
    /// What has no figure yet, in a sentence each (a Pod metrics-server has not
    /// measured twice yet).
    pub missing: Vec<String>,
    /// Whether the rows stop short of the target's Pods (a table's first
    /// [`TABLE_ROWS`], a workload's first [`WORKLOAD_ROWS`]).
    pub truncated: bool,
}

/// Most Pods a table's usage names.
pub const TABLE_ROWS: usize = 10_000;
/// Most Pods a workload's panel names.
pub const WORKLOAD_ROWS: usize = 200;

/// One row: CPU and memory in use, with what was asked for and the ceiling.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UsageRow {
    pub name: String,
    pub cpu: Amounts,
    pub memory: Amounts,
}

/// A resource's figures: millicores for CPU, bytes for memory. `ceiling` is the
/// limit (a node's: what it can allocate).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Amounts {
    pub used: u64,
    pub request: Option<u64>,
    pub ceiling: Option<u64>,
}

impl Amounts {
    /// The share of the ceiling in use, in percent, where there is a ceiling.
    pub fn percent_of_ceiling(&self) -> Option<u64> {
        let ceiling = self.ceiling.filter(|c| *c > 0)?;
        Some(self.used.saturating_mul(100) / ceiling)
    }
}

/// CPU as `kubectl top` prints it: `1004m`.
pub fn cpu_text(millicores: u64) -> String {
    format!("{millicores}m")
}

/// Memory as `kubectl top` prints it: `12Mi` (whole MiB, rounded down).
pub fn memory_text(bytes: u64) -> String {
    format!("{}Mi", bytes / (1024 * 1024))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn figures_print_as_kubectl_top_prints_them() {
        assert_eq!(cpu_text(1004), "1004m");
        assert_eq!(memory_text(12 * 1024 * 1024 + 5), "12Mi");
        assert_eq!(memory_text(0), "0Mi");
    }

    #[test]
    fn a_share_needs_a_ceiling() {
        let a = Amounts {
            used: 250,
            request: Some(100),
            ceiling: Some(500),
        };
        assert_eq!(a.percent_of_ceiling(), Some(50));
        assert_eq!(
            Amounts {
                ceiling: Some(0),
                ..a
            }
            .percent_of_ceiling(),
            None
        );
        assert_eq!(Amounts::default().percent_of_ceiling(), None);
    }
}
