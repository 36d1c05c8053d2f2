//! Components receive data; they never fetch it.

pub mod crd_table;
pub mod error_banner;
