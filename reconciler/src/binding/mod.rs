//! Bindings: a `StackBinding` hands a Stack's connection details to a workload as
//! environment variables ([`projection`]), carried out by its own controller beside the
//! Stack reconciler, on the same elected replica.

pub mod controller;
pub mod kind;
pub mod projection;
