//! Where a feed's rows come from: the API server's Table list and watch, behind a
//! trait so the hub's recovery paths (410 Gone, printer-column changes, an upstream
//! that keeps failing) can be driven deterministically in tests.

use futures::StreamExt;
use futures::stream::BoxStream;
use kube::core::WatchEvent;
use portico_core::table::wire::TableQuery;

use portico_core::table::wire::Column;

use crate::cluster::registry::KindRegistry;
use crate::live::upstream::table_api::{self, ListPage, RawTable, TableError};

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
    /// `columns` as the page reads them (see [`table_api::read_columns`]), as
    /// [`FeedSource::list`] reads its own: a watch event's columns are compared
    /// with the feed's to see a change of printer columns.
    fn read_columns(&self, _query: &TableQuery, columns: &[Column]) -> Vec<Column> {
        table_api::read_columns(columns, None)
    }
}

/// The API server, through one identity's client; with the kinds' registry, a
/// CRD's date columns are read by its definition.
pub struct ApiServer {
    pub client: kube::Client,
    pub kinds: Option<KindRegistry>,
}

impl ApiServer {
    /// The names of `query`'s creation-age columns, if its kind is a CRD read.
    fn creation_ages(&self, query: &TableQuery) -> Option<Vec<String>> {
        self.kinds
            .as_ref()?
            .creation_age_columns(&query.group, &query.plural, &query.version)
    }
}

#[async_trait::async_trait]
impl FeedSource for ApiServer {
    async fn list(
        &self,
        query: &TableQuery,
        limit: usize,
        from: Option<&str>,
    ) -> Result<ListPage, TableError> {
        let ages = self.creation_ages(query);
        table_api::list(&self.client, query, limit, from, ages.as_deref()).await
    }

    async fn watch(
        &self,
        query: &TableQuery,
        resource_version: &str,
    ) -> Result<WatchEvents, TableError> {
        Ok(table_api::watch(&self.client, query, resource_version)
            .await?
            .boxed())
    }

    fn read_columns(&self, query: &TableQuery, columns: &[Column]) -> Vec<Column> {
        table_api::read_columns(columns, self.creation_ages(query).as_deref())
    }
}
