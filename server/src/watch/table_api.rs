//! The API server's Table format (`as=Table;g=meta.k8s.io;v=v1`): the columns and
//! cells `kubectl get` prints, for lists and for watch events. kube-rs has no helper
//! for it, so requests are built by hand and sent through `Client`.

use std::sync::Arc;

use futures::{Stream, StreamExt};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::core::WatchEvent;
use portico_core::payload::ApiRejection;
use portico_core::table::wire::{Column, Row, TableQuery, TableSnapshot};
use serde::Deserialize;

use crate::cluster::error::{ApiError, Failure};

pub const TABLE_ACCEPT: &str = "application/json;as=Table;g=meta.k8s.io;v=v1";

/// Server-side watch timeout; the hub re-watches from the last resourceVersion.
const WATCH_TIMEOUT_SECONDS: u32 = 290;

#[derive(Debug, thiserror::Error)]
pub enum TableError {
    #[error("{}", .0.message)]
    Rejected(ApiRejection),
    #[error("the resource version is too old (410 Gone); a fresh list is needed")]
    Gone,
    #[error("talking to the API server: {0}")]
    Transport(kube::Error),
    /// A line of the response was not what the Table format promises.
    #[error("the API server sent something Portico could not read")]
    Decode,
    #[error("building the request: {0}")]
    Request(String),
}

impl From<kube::Error> for TableError {
    fn from(err: kube::Error) -> Self {
        let err = ApiError::from(err);
        match (err.failure(), err) {
            (Failure::Gone, _) => Self::Gone,
            // kube reports a watch line it cannot decode as an empty Status.
            (_, ApiError::Refused(r)) if r.code == 0 => Self::Decode,
            (_, ApiError::Refused(r)) => Self::Rejected(r),
            (_, ApiError::Transport(e)) => Self::Transport(e),
        }
    }
}

/// Watch events carry `"columnDefinitions": null` (the columns come with the list
/// only); `#[serde(default)]` alone rejects null.
fn null_as_default<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Default + Deserialize<'de>,
{
    Ok(Option::<T>::deserialize(deserializer)?.unwrap_or_default())
}

#[derive(Debug, Clone, Default, Deserialize)]
struct RawListMeta {
    #[serde(default, rename = "resourceVersion")]
    resource_version: Option<String>,
}

#[derive(Debug, Clone, Default, Deserialize)]
struct RawObject {
    #[serde(default)]
    metadata: ObjectMeta,
}

#[derive(Debug, Clone, Deserialize)]
struct RawRow {
    #[serde(default, deserialize_with = "null_as_default")]
    cells: Vec<serde_json::Value>,
    #[serde(default)]
    object: Option<RawObject>,
}

/// A Table as the API server sends it, for a list or inside one watch event.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct RawTable {
    #[serde(default)]
    metadata: RawListMeta,
    #[serde(
        default,
        rename = "columnDefinitions",
        deserialize_with = "null_as_default"
    )]
    column_definitions: Vec<Column>,
    #[serde(default, deserialize_with = "null_as_default")]
    rows: Vec<RawRow>,
}

impl RawTable {
    pub fn columns(&self) -> &[Column] {
        &self.column_definitions
    }

    pub fn resource_version(&self) -> Option<&str> {
        self.metadata.resource_version.as_deref()
    }

    /// The rows that carry object metadata (with `includeObject=Metadata`, all of them).
    pub fn into_rows(self) -> Vec<Row> {
        self.rows.into_iter().filter_map(to_row).collect()
    }
}

fn to_row(raw: RawRow) -> Option<Row> {
    let meta = raw.object?.metadata;
    Some(Row {
        uid: meta.uid?,
        name: meta.name.unwrap_or_default(),
        namespace: meta.namespace,
        resource_version: meta.resource_version.unwrap_or_default(),
        created: meta.creation_timestamp.map(|t| t.0.to_string()),
        deleting: meta.deletion_timestamp.is_some(),
        owners: meta
            .owner_references
            .unwrap_or_default()
            .into_iter()
            .map(|o| o.uid)
            .collect(),
        cells: raw.cells,
    })
}

fn request(
    query: &TableQuery,
    extra: &[(&str, &str)],
) -> Result<http::Request<Vec<u8>>, TableError> {
    let mut qs = form_urlencoded::Serializer::new(String::new());
    qs.append_pair("includeObject", "Metadata");
    if let Some(sel) = query.label_selector.as_deref().filter(|s| !s.is_empty()) {
        qs.append_pair("labelSelector", sel);
    }
    if let Some(sel) = query.field_selector.as_deref().filter(|s| !s.is_empty()) {
        qs.append_pair("fieldSelector", sel);
    }
    for (k, v) in extra {
        qs.append_pair(k, v);
    }
    let uri = format!(
        "{}?{}",
        query.resource().collection_path(query.namespace.as_deref()),
        qs.finish()
    );
    http::Request::get(uri)
        .header(http::header::ACCEPT, TABLE_ACCEPT)
        .body(Vec::new())
        .map_err(|e| TableError::Request(e.to_string()))
}

/// Lists the resource as a Table: columns, one row per object, and the list's
/// resourceVersion to watch from.
pub async fn list(client: &kube::Client, query: &TableQuery) -> Result<TableSnapshot, TableError> {
    let table: RawTable = client.request(request(query, &[])?).await?;
    let resource_version = table.resource_version().unwrap_or_default().to_string();
    let columns = table.column_definitions.clone();
    Ok(TableSnapshot {
        columns,
        rows: table.into_rows().into_iter().map(Arc::new).collect(),
        resource_version,
    })
}

/// Watches the resource as Tables from `resource_version`, with bookmarks.
pub async fn watch(
    client: &kube::Client,
    query: &TableQuery,
    resource_version: &str,
) -> Result<impl Stream<Item = Result<WatchEvent<RawTable>, TableError>> + use<>, TableError> {
    let timeout = WATCH_TIMEOUT_SECONDS.to_string();
    let req = request(
        query,
        &[
            ("watch", "true"),
            ("resourceVersion", resource_version),
            ("allowWatchBookmarks", "true"),
            ("timeoutSeconds", &timeout),
        ],
    )?;
    let events = client.request_events::<RawTable>(req).await?;
    Ok(events.map(|event| event.map_err(TableError::from)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn watch_event_tables_with_null_columns_parse() {
        let line = r#"{"type":"MODIFIED","object":{"kind":"Table","apiVersion":"meta.k8s.io/v1",
            "metadata":{"resourceVersion":"42"},"columnDefinitions":null,
            "rows":[{"cells":["a",null],"object":{"kind":"PartialObjectMetadata",
            "apiVersion":"meta.k8s.io/v1","metadata":{"name":"a","uid":"u","resourceVersion":"42",
            "ownerReferences":[{"apiVersion":"v1","kind":"X","name":"p","uid":"p1"}]}}}]}}"#;
        let event: WatchEvent<RawTable> = serde_json::from_str(line).expect("parses");
        let WatchEvent::Modified(table) = event else {
            panic!("modified expected")
        };
        assert!(table.columns().is_empty());
        let rows = table.into_rows();
        assert_eq!(rows.len(), 1);
        assert_eq!(rows[0].owners, ["p1"]);
        assert_eq!(
            rows[0].cells,
            [serde_json::json!("a"), serde_json::Value::Null]
        );
    }

    #[test]
    fn rows_without_metadata_or_uid_are_skipped() {
        let table: RawTable = serde_json::from_str(
            r#"{"rows":[{"cells":["x"]},{"cells":null,"object":{"metadata":{"name":"n"}}}]}"#,
        )
        .expect("parses");
        assert!(table.into_rows().is_empty());
    }
}
