//! Talking to the API server: the portal's client configuration, a client per caller
//! over connections every person's requests share, the registry of every kind the
//! cluster serves, one classification of the API server's failures, and the metrics and
//! trace layers on every client. The crate `portico-cluster`: uses `portico-core` and
//! nothing else of Portico's (no Leptos, no web); the server and the reconciler build
//! on it.

pub mod caller;
pub mod config;
pub mod connections;
pub mod crd_read;
pub mod error;
pub mod pool;
pub mod registry;
pub mod request_metrics;
pub mod request_trace;
