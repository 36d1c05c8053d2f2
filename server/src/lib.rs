#![recursion_limit = "256"]
//! Portico's server. `main.rs` only wires these together.
//!
//! The layers, each allowed to use only those below it:
//!
//! ```text
//!   web        router, state, health, site files, the UI's Backend
//!    │
//!    ├── exec       a terminal into a container, as the person
//!    ├── live       live views: upstream watches, shared rows and feeds, budgets,
//!    │              views, logs, the WebSocket and SSE
//!    └── auth       identity modes, sessions, sign-in, CSRF, access reviews
//!    │
//!   reconcile  (crate portico-reconciler) the Stack and StackBinding controllers
//!    │
//!   cluster    (crate portico-cluster) client configuration, per-caller clients,
//!    │          the kind registry, API errors
//!   portico-core   wire types, live protocol, schema and table logic
//! ```
//!
//! The three lower layers are crates of their own, so Cargo holds them to the rule:
//! the reconciler and the cluster layer cannot reach `live`, `auth`, `web` or
//! Leptos, and a change up here recompiles neither. They are re-exported under their
//! layer's name. Inside this crate the rule is kept by reading: no layer below `web`
//! uses the `app` crate (Leptos); they share types with the UI through
//! `portico-core` only.
//!
//! `live` may use `auth` (a viewer's access is reviewed); `exec` uses `live` for what
//! every live thing shares (places, memory budget, shutdown) and `auth`. `portal_metrics`
//! (what the portal counts) is a leaf any layer may use. `config`, `telemetry` and
//! `self_check` (`--check`, for `helm test`) belong to the binary's edge.

pub use portico_cluster as cluster;
pub use portico_reconciler as reconcile;

pub mod auth;
pub mod config;
pub mod exec;
pub mod live;
pub mod portal_metrics;
pub mod self_check;
pub mod telemetry;
pub mod web;
