//! What one person and a replica may hold: open streams and feeds ([`limits`]) and
//! the bytes of live tables ([`memory`]).

pub mod limits;
pub mod memory;
