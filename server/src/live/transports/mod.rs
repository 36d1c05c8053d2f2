//! What carries the views: the tab's WebSocket ([`socket`]) and SSE for scripts
//! ([`sse`]).

pub(crate) mod socket;
pub(crate) mod sse;
