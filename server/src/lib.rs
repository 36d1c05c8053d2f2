#![recursion_limit = "256"]
//! Portico's server: configuration, the cluster-facing modules and the HTTP router.
//! `main.rs` only wires these together.

pub mod assets;
pub mod clients;
pub mod cluster_backend;
pub mod config;
pub mod csrf;
pub mod detail;
pub mod discovery;
pub mod health;
pub mod http;
pub mod identity;
pub mod kube_client;
pub mod login;
pub mod objects;
pub mod proxy_tls;
pub mod session;
pub mod stacks;
pub mod state;
pub mod telemetry;
pub mod watch;
