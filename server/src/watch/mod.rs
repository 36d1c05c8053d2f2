//! Live tables: the Table API client, the hub that shares one upstream watch per
//! (resource, namespace, selectors) among all viewers, and the SSE route.

pub mod access;
pub mod children;
pub mod coalesce;
pub mod hub;
pub mod limits;
pub mod sse;
pub mod table_api;
