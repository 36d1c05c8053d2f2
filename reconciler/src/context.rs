//! What every reconcile of a Stack works with, shared by the controller that wires
//! the watches ([`super::controller`]) and the step that carries a reconcile out
//! ([`super::provision`]), so that neither needs the other for it.

use std::collections::HashMap;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use kube::runtime::reflector::Store;

use super::catalog::LiveCatalog;
use super::executor::Executor;
use super::metrics::Metrics;
use super::stack::Stack;
use super::stores::Stores;

/// How long a Stack's triggers are gathered before it is reconciled: its children
/// appear within a few hundred milliseconds of each other, and one reconcile then
/// sees them all.
pub(super) const DEBOUNCE: Duration = Duration::from_millis(500);

/// Counters a test or a benchmark reads.
#[derive(Debug, Default)]
pub struct ReconcileStats {
    pub reconciles: AtomicU64,
    pub failures: AtomicU64,
}

/// What every reconcile works with.
pub(super) struct Context {
    pub(super) executor: Executor,
    pub(super) catalog: LiveCatalog,
    pub(super) stats: Arc<ReconcileStats>,
    pub(super) metrics: Arc<Metrics>,
    /// Consecutive failures per Stack, for exponential backoff.
    pub(super) attempts: Mutex<HashMap<String, u32>>,
    pub(super) stores: Stores,
    pub(super) stacks: Store<Stack>,
}
