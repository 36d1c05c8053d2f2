//! Portico's integration tests, one binary: a module per area, each against real
//! local clusters (kube-apiserver, the controller-manager, the scheduler, and simulated
//! or real nodes) that [`kit`] starts on first use and shares. `scripts/test.sh` runs
//! each area in a process of its own (`cargo test -p server --test it -- AREA::`), so
//! each gets fresh clusters, as when they were binaries of their own; one
//! `cargo test --test it` runs them all on the same clusters.
// Tests stop loudly at the first surprise.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

use portico_test_kit as kit;

mod apiserver_restart;
mod attack;
mod base_path;
mod cluster;
mod corpus;
mod deploy;
mod identity;
mod leader;
mod live_logs;
mod live_socket;
mod live_tables;
mod real_node;
mod source_map;
mod stacks;
mod traces;
mod writes;
