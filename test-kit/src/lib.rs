//! The test kit, shared by the integration tests and the benchmarks: a map, a module per
//! job. The first six, and `process::tool`, are re-exported at the root, so callers
//! write `kit::serve`, `kit::grant`, `kit::crd_kind`; the rest by module
//! (`kit::process::free_port`, `kit::stacks::watch_until`).
//!
//! - [`serving`]: Portico's router served on loopback, in each identity mode;
//! - [`people`]: the authorizer asked about someone, RBAC grants, tokens and clients;
//! - [`sign_in`]: signing in to Portico in token mode;
//! - [`objects`]: cluster objects set up and taken down (CRDs, namespaces, Pods);
//! - [`seeds`]: the seed CRD `CrdKind`, its one fixture builder;
//! - [`measure`]: `/proc` measurements, benchmark settings, percentiles;
//! - [`process`]: programs run beside the cluster, and the cluster's pinned tools;
//! - [`socket`]: the one WebSocket client of `/api/live` and `/api/exec`;
//! - [`stacks`], [`nodes`], [`jaeger`]: the reconciler driven, KWOK room, Jaeger.
// Tests stop loudly at the first surprise: so does what they are built from.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

pub mod jaeger;
pub mod measure;
pub mod nodes;
pub mod objects;
pub mod people;
pub mod process;
pub mod seeds;
pub mod serving;
pub mod sign_in;
pub mod socket;
pub mod stacks;

pub use measure::*;
pub use objects::*;
pub use people::*;
pub use process::tool;
pub use seeds::*;
pub use serving::*;
pub use sign_in::*;
