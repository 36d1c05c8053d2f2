//! Live resource tables: the wire types shared by server and browser, kubectl's cell
//! formatting, and the pure state machine a viewer applies snapshots and deltas to.

pub mod format;
pub mod model;
pub mod state;
