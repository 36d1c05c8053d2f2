//! The live connection's protocol ([`protocol`]) and the bounded log buffer a viewer
//! keeps ([`log_buffer`]).

pub mod log_buffer;
pub mod protocol;
