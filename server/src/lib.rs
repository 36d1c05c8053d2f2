#![recursion_limit = "256"]
//! Portico's server. `main.rs` only wires these together.
//!
//! The layers, each allowed to use only those below it:
//!
//! ```text
//!   web        router, state, health, site files, the UI's Backend
//!    │
//!    ├── exec       a terminal into a container, as the person
//!    ├── watch      live tables: Table API client, shared feeds, SSE streams
//!    ├── reconcile  the Stack controller and its leader election
//!    └── auth       identity modes, sessions, sign-in, CSRF, access reviews
//!    │
//!   cluster    client configuration, per-caller clients, the kind registry, API errors
//!    │
//!   portico-core   (its own crate) wire types, live protocol, schema and table logic
//! ```
//!
//! No layer below `web` uses the `app` crate (Leptos): they share types with the UI
//! through `portico-core` only.
//!
//! `watch` may use `auth` (a viewer's access is reviewed); `exec` uses `watch` for what
//! every live thing shares (places, memory budget, shutdown) and `auth`; `reconcile` uses neither
//! `watch` nor `auth`. `terminal` (plain text of what programs print) and
//! `portal_metrics` (what the portal counts) are leaves any layer may use. `config`,
//! `telemetry` and `self_check` (`--check`, for `helm test`) belong to the binary's
//! edge.

pub mod auth;
pub mod cluster;
pub mod config;
pub mod exec;
pub mod portal_metrics;
pub mod reconcile;
pub mod self_check;
pub mod telemetry;
pub mod terminal;
pub mod watch;
pub mod web;
