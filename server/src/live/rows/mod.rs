//! Rows held once for everyone: interned rows and changes ([`intern`]), a feed's
//! table ([`table_rows`]) and recent changes ([`history`]), what applying a change made
//! ([`transitions`]), the cells of added columns ([`added_columns`]) and their sizes
//! ([`sizes`]).

pub mod added_columns;
pub mod history;
pub mod intern;
pub mod sizes;
pub mod table_rows;
pub(crate) mod transitions;
