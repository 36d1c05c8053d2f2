//! What one person and a replica may hold: open streams and feeds ([`limits`]) and
//! the bytes of live tables ([`memory`]), and the answers kept so that asking
//! again costs nothing ([`lookups`]).

pub mod limits;
pub mod lookups;
pub mod memory;
