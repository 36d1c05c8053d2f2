//! The seam between the UI's server functions and the server's Kubernetes code. The
//! [`Backend`] trait is declared with the endpoints (`crate::api`), one method per
//! server function; the server implements it and provides a [`SharedBackend`] as
//! Leptos context.

use std::sync::Arc;

pub use crate::api::Backend;
pub use crate::error::BackendError;

pub type SharedBackend = Arc<dyn Backend>;
