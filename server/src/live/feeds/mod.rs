//! One upstream watch per query and identity ([`feed`]), shared through the
//! [`hub`]; a viewer's membership of one ([`subscription`]), whose bursts are merged by
//! [`coalesce`].

pub(crate) mod coalesce;
pub mod feed;
pub mod hub;
pub mod subscription;
