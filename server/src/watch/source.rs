//! Where a feed's rows come from: the API server's Table list and watch, behind a
//! trait so the hub's recovery paths (410 Gone, printer-column changes, an upstream
//! that keeps failing) can be driven deterministically in tests.

use futures::StreamExt;
use futures::stream::BoxStream;
use kube::core::WatchEvent;
use portico_core::table::wire::TableQuery;

use super::table_api::{self, ListPage, RawTable, TableError};

/// The events of one watch, in order, until the server ends it.
pub type WatchEvents = BoxStream<'static, Result<WatchEvent<RawTable>, TableError>>;

#[async_trait::async_trait]
pub trait FeedSource: Send + Sync + 'static {
    /// Lists a page of the resource as a Table: at most `limit` rows, from `from`
    /// (the previous page's continue token).
    async fn list(
        &self,
        query: &TableQuery,
        limit: usize,
        from: Option<&str>,
    ) -> Result<ListPage, TableError>;
    /// Watches the resource as Tables from `resource_version`.
    async fn watch(
        &self,
        query: &TableQuery,
        resource_version: &str,
    ) -> Result<WatchEvents, TableError>;
}

/// The API server, through one identity's client.
pub struct ApiServer(pub kube::Client);

#[async_trait::async_trait]
impl FeedSource for ApiServer {
    async fn list(
        &self,
        query: &TableQuery,
        limit: usize,
        from: Option<&str>,
    ) -> Result<ListPage, TableError> {
        table_api::list(&self.0, query, limit, from).await
    }

    async fn watch(
        &self,
        query: &TableQuery,
        resource_version: &str,
    ) -> Result<WatchEvents, TableError> {
        Ok(table_api::watch(&self.0, query, resource_version)
            .await?
            .boxed())
    }
}
