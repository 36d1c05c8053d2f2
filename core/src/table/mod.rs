//! Live tables: what crosses the wire ([`wire`]), the cell text `kubectl get` prints
//! ([`format`]), the rows a browser keeps, filters and sorts ([`state`]), and the
//! columns a person adds ([`added_columns`]) and filters by ([`column_filters`]).

pub mod added_columns;
pub mod column_filters;
pub mod format;
pub mod state;
pub mod wire;
