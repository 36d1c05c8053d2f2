//! The live connection's protocol ([`protocol`]), the bounded log buffer a viewer
//! keeps ([`log_buffer`]) and the lines of a workload's merged log ([`tagged_line`]).

pub mod log_buffer;
pub mod protocol;
pub mod tagged_line;
