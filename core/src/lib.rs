//! Portico's ground floor, shared by the UI (`app`, compiled to wasm and into the
//! server) and the server's lower layers: what crosses the wire ([`payload`],
//! [`table::wire`], [`live::protocol`], [`owner_tree`]), how resources are addressed
//! ([`resource`], [`base_path`]), and the pure logic both sides run ([`schema`],
//! [`table`]). It knows nothing of Leptos or of a Kubernetes client, as `kube-core`
//! knows nothing of `kube-client`.

pub mod access;
pub mod backoff;
pub mod base_path;
pub mod encode;
pub mod find;
pub mod live;
pub mod overview;
pub mod owner_tree;
pub mod payload;
pub mod portico_kinds;
pub mod readiness;
pub mod resource;
pub mod schema;
pub mod table;
pub mod terminal;
pub mod usage;
