//! Container logs, live: one container's ([`container`]), split into lines by
//! [`lines`], paced by [`flow`]; a workload's merged ([`workload`]).

pub(crate) mod container;
pub mod flow;
pub mod lines;
pub(crate) mod workload;
