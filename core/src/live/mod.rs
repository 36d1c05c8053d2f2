//! The live connection's protocol ([`protocol`]), the bounded log buffer a viewer
//! keeps ([`log_buffer`]), the lines of a workload's merged log ([`tagged_line`]) and
//! a terminal's own socket ([`terminal`]).

pub mod log_buffer;
pub mod protocol;
pub mod tagged_line;
pub mod terminal;
