//! The HTTP face: the router and its middleware, the state handlers draw their narrow
//! parts from, health checks, `/metrics`, the compiled site's files, and the implementation of the
//! UI's `Backend` (objects, detail pages, permissions). Uses every layer below.

pub mod assets;
pub mod backend;
pub(crate) mod health;
pub mod metrics_route;
pub mod router;
pub mod state;
