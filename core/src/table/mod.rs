//! Live tables: what crosses the wire ([`wire`]), the cell text `kubectl get` prints
//! ([`format`]), and the rows a browser keeps, filters and sorts ([`state`]).

pub mod format;
pub mod state;
pub mod wire;
