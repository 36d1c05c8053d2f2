//! What the API server sends: its Table lists and watches ([`table_api`], behind
//! [`source`]) and a watch's answer split into events ([`event_lines`]).

pub(crate) mod event_lines;
pub mod source;
pub mod table_api;
