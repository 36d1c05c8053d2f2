//! The API server's Table format (`as=Table;g=meta.k8s.io;v=v1`): the columns and
//! cells `kubectl get` prints, for lists and for watch events. kube-rs has no helper
//! for it, so requests are built by hand and sent through `Client`.

use std::sync::Arc;

use futures::{Stream, StreamExt};
use kube::core::WatchEvent;
use portico_core::payload::ApiRejection;
use portico_core::table::wire::{Column, Row, TableQuery, TableSnapshot};
use serde::Deserialize;

use crate::cluster::error::{ApiError, Failure};
use crate::live::rows::added_columns::AddedColumns;
use crate::live::upstream::event_lines::{LinesError, event_lines};

pub const TABLE_ACCEPT: &str = "application/json;as=Table;g=meta.k8s.io;v=v1";

/// Server-side watch timeout; the hub re-watches from the last resourceVersion.
const WATCH_TIMEOUT_SECONDS: u32 = 290;
/// The most of a refusal's body read: a Status is a few hundred bytes.
const REFUSAL_BYTES: usize = 64 * 1024;

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
    /// Where the next page of a `limit`ed list starts.
    #[serde(default, rename = "continue")]
    next: Option<String>,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct RawObject {
    #[serde(default)]
    metadata: RawMeta,
}

/// The part of a row's object metadata a row keeps. Only these fields are read:
/// the rest (managedFields' `fieldsV1` above all, often most of the bytes) is skipped
/// without being built, which keeps a 10,000-row list from costing tens of megabytes
/// on its way through.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawMeta {
    uid: Option<String>,
    name: Option<String>,
    namespace: Option<String>,
    resource_version: Option<String>,
    creation_timestamp: Option<String>,
    deletion_timestamp: Option<serde::de::IgnoredAny>,
    #[serde(default, deserialize_with = "null_as_default")]
    owner_references: Vec<RawOwner>,
    #[serde(default, deserialize_with = "null_as_default")]
    managed_fields: Vec<RawManagedFields>,
}

/// A `managedFields` entry: only when, and whether it was a status write (its
/// `fieldsV1`, the bulk of it, is never read).
#[derive(Debug, Clone, Deserialize)]
struct RawManagedFields {
    #[serde(default)]
    time: Option<String>,
    #[serde(default)]
    subresource: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
struct RawOwner {
    uid: String,
}

/// A row with its object's metadata (`O` = [`RawObject`]), or with the whole
/// object (`serde_json::Value`) when the table has added columns.
#[derive(Debug, Clone, Deserialize)]
#[serde(bound(deserialize = "O: Deserialize<'de>"))]
struct RawRow<O = RawObject> {
    #[serde(default, deserialize_with = "null_as_default")]
    cells: Vec<serde_json::Value>,
    #[serde(default = "Option::default")]
    object: Option<O>,
}

/// A Table as the API server sends it, for a list or inside one watch event.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(bound(deserialize = "O: Deserialize<'de>"))]
pub struct RawTable<O = RawObject> {
    #[serde(default)]
    metadata: RawListMeta,
    #[serde(
        default,
        rename = "columnDefinitions",
        deserialize_with = "null_as_default"
    )]
    column_definitions: Vec<Column>,
    #[serde(default = "Vec::new", deserialize_with = "null_as_default")]
    rows: Vec<RawRow<O>>,
}

/// A Table of whole objects, for a table with added columns.
type WholeTable = RawTable<serde_json::Value>;

impl WholeTable {
    /// The Table as if asked for metadata only, with the added columns' definitions
    /// (when it has columns) and cells.
    fn with_added(self, added: &AddedColumns) -> RawTable {
        let mut column_definitions = self.column_definitions;
        if !column_definitions.is_empty() {
            let added_definitions = added.definitions_beside(&column_definitions);
            column_definitions.extend(added_definitions);
        }
        let rows = self
            .rows
            .into_iter()
            .map(|row| {
                let mut cells = row.cells;
                let object = row.object.map(|object| {
                    cells.extend(added.cells(&object));
                    RawObject::deserialize(&object).unwrap_or_default()
                });
                RawRow { cells, object }
            })
            .collect();
        RawTable {
            metadata: self.metadata,
            column_definitions,
            rows,
        }
    }
}

impl RawTable {
    pub fn columns(&self) -> &[Column] {
        &self.column_definitions
    }

    pub fn resource_version(&self) -> Option<&str> {
        self.metadata.resource_version.as_deref()
    }

    /// The rows that carry object metadata (with `includeObject=Metadata`, all of
    /// them), read with `columns` as [`read_columns`] made them (a watch event's Table
    /// has none of its own): their date columns are the creation ages.
    pub fn into_rows(self, columns: &[Column]) -> Vec<Row> {
        let ages: Vec<usize> = columns
            .iter()
            .enumerate()
            .filter(|(_, c)| c.kind == "date")
            .map(|(i, _)| i)
            .collect();
        self.rows
            .into_iter()
            .filter_map(to_row)
            .map(|mut row| {
                anchor_ages(&mut row, &ages);
                row
            })
            .collect()
    }
}

/// Whether a date column is the object's creation time. The API server sends such a
/// cell as an age as of the request ("5m"), which would stay "5m" on the page and
/// make two lists of the same object, seconds apart, two different rows.
/// `creation_ages` names a CRD version's date columns whose JSONPath is
/// `.metadata.creationTimestamp`, read from its definition: a CRD's column may carry
/// a description of its own ("Time since resource was created"), which says nothing
/// of its source, and every date column of a CRD is sent as an age. Without it (a
/// built-in kind, or a CRD not read yet) the description tells: a CRD's default one
/// ends with its JSONPath, a built-in kind's quotes the field's own documentation.
/// Built-in kinds declare their Age column as a string; it is read as the date it is.
/// A built-in *date* column of the creation time (a ClusterRole's or Role's "Created
/// At") is sent as the timestamp itself, which kubectl prints as it is: not an age.
fn is_creation_age(column: &Column, creation_ages: Option<&[String]>) -> bool {
    match (column.kind.as_str(), creation_ages) {
        ("date", Some(names)) => names.contains(&column.name),
        ("date", None) => column.description.ends_with(".metadata.creationTimestamp"),
        ("string", None) => column
            .description
            .starts_with("CreationTimestamp is a timestamp"),
        _ => false,
    }
}

/// The columns as the page reads them: creation ages are dates (their cells carry
/// the creation time, see [`RawTable::into_rows`]); every other date column is text,
/// printed as the API server sent it (an age it computed, or a timestamp), as kubectl
/// prints it. `creation_ages`: see [`is_creation_age`].
pub fn read_columns(columns: &[Column], creation_ages: Option<&[String]>) -> Vec<Column> {
    columns
        .iter()
        .map(|column| {
            let mut column = column.clone();
            if is_creation_age(&column, creation_ages) {
                column.kind = "date".into();
            } else if column.kind == "date" {
                column.kind = "string".into();
            }
            column
        })
        .collect()
}

/// Puts the creation time itself in the age cells at `ages`: the page counts the
/// age from it, as kubectl would print it now.
fn anchor_ages(row: &mut Row, ages: &[usize]) {
    let Some(created) = &row.created else {
        return;
    };
    for &i in ages {
        if let Some(cell) = row.cells.get_mut(i) {
            *cell = serde_json::Value::String(created.clone());
        }
    }
}

fn to_row(raw: RawRow) -> Option<Row> {
    let meta = raw.object?.metadata;
    // RFC 3339 times of one form (seconds, UTC): the greatest text is the latest.
    let changed = meta
        .managed_fields
        .iter()
        .filter(|entry| entry.subresource.as_deref().is_none_or(str::is_empty))
        .filter_map(|entry| entry.time.clone())
        .max();
    Some(Row {
        uid: meta.uid?,
        name: meta.name.unwrap_or_default(),
        namespace: meta.namespace,
        resource_version: meta.resource_version.unwrap_or_default(),
        created: meta.creation_timestamp,
        deleting: meta.deletion_timestamp.is_some(),
        owners: meta.owner_references.into_iter().map(|o| o.uid).collect(),
        cells: raw.cells,
        changed,
    })
}

fn request(
    query: &TableQuery,
    extra: &[(&str, &str)],
) -> Result<http::Request<Vec<u8>>, TableError> {
    let mut qs = form_urlencoded::Serializer::new(String::new());
    // Added columns read anything in the object; kubectl's need its metadata only.
    let include = if query.columns.is_some() {
        "Object"
    } else {
        "Metadata"
    };
    qs.append_pair("includeObject", include);
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

/// Lists a page of the resource as a Table, at most `limit` rows from `from` (the
/// previous page's continue token, `None` for the first): columns, one row per
/// object, the list's resourceVersion to watch from, and where the next page starts.
/// Every page of one list is the same snapshot of the collection. `creation_ages`:
/// see [`read_columns`].
pub async fn list(
    client: &kube::Client,
    query: &TableQuery,
    limit: usize,
    from: Option<&str>,
    creation_ages: Option<&[String]>,
) -> Result<ListPage, TableError> {
    let limit = limit.to_string();
    let mut extra = vec![("limit", limit.as_str())];
    if let Some(token) = from {
        extra.push(("continue", token));
    }
    let request = request(query, &extra)?;
    let mut table: RawTable = match AddedColumns::of(query) {
        Some(added) => client
            .request::<WholeTable>(request)
            .await?
            .with_added(&added),
        None => client.request(request).await?,
    };
    let next = table.metadata.next.take().filter(|t| !t.is_empty());
    let resource_version = table.resource_version().unwrap_or_default().to_string();
    let columns = read_columns(
        &std::mem::take(&mut table.column_definitions),
        creation_ages,
    );
    let rows = table.into_rows(&columns);
    Ok(ListPage {
        table: TableSnapshot {
            columns,
            rows: rows.into_iter().map(Arc::new).collect(),
            resource_version,
        },
        next,
    })
}

/// One page of a list.
#[derive(Debug)]
pub struct ListPage {
    pub table: TableSnapshot,
    /// The continue token of the next page; `None` on the last.
    pub next: Option<String>,
}

impl ListPage {
    /// A whole list in one page.
    pub fn whole(table: TableSnapshot) -> Self {
        Self { table, next: None }
    }
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
    // Read with Portico's own line reader rather than kube's `request_events`, which
    // keeps an 8 KB buffer per watch (see `event_lines`); failures are told apart as
    // kube tells them.
    let response = client.send(req.map(kube::client::Body::from)).await?;
    let status = response.status();
    if !status.is_success() {
        return Err(refusal(status, response.into_body()).await.into());
    }
    let added = AddedColumns::of(query).map(Arc::new);
    Ok(event_lines(response.into_body())
        .filter_map(move |line| std::future::ready(watch_event(line, added.as_deref()))))
}

/// The event on a watch's `line`, or `None` for what ends a watch quietly (the
/// connection ended mid-event: the feed watches again) and an incomplete last line.
fn watch_event(
    line: Result<bytes::Bytes, LinesError>,
    added: Option<&AddedColumns>,
) -> Option<Result<WatchEvent<RawTable>, TableError>> {
    let line = match line {
        Ok(line) => line,
        Err(LinesError::TooLong) => return Some(Err(TableError::Decode)),
        Err(LinesError::Read(error)) => {
            return (!ends_quietly(error.as_ref())).then(|| {
                let error = std::io::Error::other(error);
                Err(TableError::Transport(kube::Error::ReadEvents(error)))
            });
        }
    };
    let parsed = match added {
        None => serde_json::from_slice::<WatchEvent<RawTable>>(&line),
        Some(added) => serde_json::from_slice::<WatchEvent<WholeTable>>(&line)
            .map(|event| with_added(event, added)),
    };
    match parsed {
        Ok(event) => Some(Ok(event)),
        Err(error) if error.is_eof() => None,
        // An error the API server wrote in place of an event, else not a Table.
        Err(_) => Some(Err(
            match serde_json::from_slice::<kube::core::Status>(&line) {
                Ok(status) => kube::Error::Api(status.boxed()).into(),
                Err(_) => TableError::Decode,
            },
        )),
    }
}

/// A watch event of whole objects as one of metadata, with the added columns.
fn with_added(event: WatchEvent<WholeTable>, added: &AddedColumns) -> WatchEvent<RawTable> {
    match event {
        WatchEvent::Added(t) => WatchEvent::Added(t.with_added(added)),
        WatchEvent::Modified(t) => WatchEvent::Modified(t.with_added(added)),
        WatchEvent::Deleted(t) => WatchEvent::Deleted(t.with_added(added)),
        WatchEvent::Bookmark(b) => WatchEvent::Bookmark(b),
        WatchEvent::Error(e) => WatchEvent::Error(e),
    }
}

/// Whether `error` is the end of a connection mid-answer, which kube ends a watch on
/// without an error (the feed watches again from where it was).
fn ends_quietly(error: &(dyn std::error::Error + Send + Sync + 'static)) -> bool {
    // HTTP/1.1's chunk decoder says so only in words.
    if error.to_string().contains("unexpected EOF during chunk") {
        return true;
    }
    let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(error);
    // As deep as kube looks.
    for _ in 0..16 {
        let Some(error) = cause else { break };
        if error
            .downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::UnexpectedEof)
        {
            return true;
        }
        cause = error.source();
    }
    false
}

/// The API server's refusal of a request, in its own words where it gave them (at
/// most [`REFUSAL_BYTES`] of them), as kube reports refusals.
async fn refusal(status: http::StatusCode, body: kube::client::Body) -> kube::Error {
    use http_body_util::BodyExt as _;
    let read = http_body_util::Limited::new(body, REFUSAL_BYTES)
        .collect()
        .await;
    let text = match read {
        Ok(collected) => String::from_utf8_lossy(&collected.to_bytes()).into_owned(),
        Err(error) => return kube::Error::ReadEvents(std::io::Error::other(error)),
    };
    let status = serde_json::from_str::<kube::core::Status>(&text).unwrap_or_else(|_| {
        kube::core::Status::failure(text.trim(), "Failed to parse error data")
            .with_code(status.as_u16())
    });
    kube::Error::Api(status.boxed())
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
        let rows = table.into_rows(&[]);
        assert_eq!(rows.len(), 1);
        assert_eq!(rows[0].owners, ["p1"]);
        assert_eq!(
            rows[0].cells,
            [serde_json::json!("a"), serde_json::Value::Null]
        );
    }

    #[test]
    fn creation_ages_carry_the_creation_time_and_other_dates_print_as_sent() {
        let table: RawTable = serde_json::from_str(
            r#"{"columnDefinitions":[
                {"name":"Age","type":"date","description":"Custom resource definition column (in JSONPath format): .metadata.creationTimestamp"},
                {"name":"Last","type":"date","description":"Custom resource definition column (in JSONPath format): .status.last"},
                {"name":"AGE","type":"string","description":"CreationTimestamp is a timestamp representing the server time when this object was created."},
                {"name":"Created At","type":"date","description":"CreationTimestamp is a timestamp representing the server time when this object was created."}],
            "rows":[{"cells":["5m","3m","5m","2026-01-02T03:04:05Z"],"object":{"metadata":{"name":"a","uid":"u",
                "creationTimestamp":"2026-01-02T03:04:05Z"}}}]}"#,
        )
        .expect("parses");
        let columns = read_columns(table.columns(), None);
        let kinds: Vec<&str> = columns.iter().map(|c| c.kind.as_str()).collect();
        assert_eq!(kinds, ["date", "string", "date", "string"]);
        let rows = table.into_rows(&columns);
        assert_eq!(
            rows[0].cells,
            [
                "2026-01-02T03:04:05Z",
                "3m",
                "2026-01-02T03:04:05Z",
                "2026-01-02T03:04:05Z"
            ]
        );
        // kubectl prints a ClusterRole's "Created At" as the timestamp, not an age.
        assert_eq!(
            portico_core::table::format::cell_text(&rows[0].cells[3], &columns[3].kind, 0),
            "2026-01-02T03:04:05Z"
        );
    }

    #[test]
    fn a_crds_definition_names_its_creation_ages_whatever_their_descriptions() {
        // cert-manager's and Argo Rollouts' Age columns: JSONPath
        // .metadata.creationTimestamp, descriptions of their own; the API server sends
        // every CRD date column as an age.
        let table: RawTable = serde_json::from_str(
            r#"{"columnDefinitions":[
                {"name":"Age","type":"date","description":"CreationTimestamp is a timestamp representing the server time when this object was created."},
                {"name":"Since","type":"date","description":"Time since resource was created"},
                {"name":"Last","type":"date","description":"Custom resource definition column (in JSONPath format): .metadata.creationTimestamp"},
                {"name":"Created","type":"string","description":"CreationTimestamp is a timestamp representing the server time when this object was created."}],
            "rows":[{"cells":["5m9s","5m9s","3m","2026-01-02T03:04:05Z"],"object":{"metadata":{"name":"a","uid":"u",
                "creationTimestamp":"2026-01-02T03:04:05Z"}}}]}"#,
        )
        .expect("parses");
        let ages = ["Age".to_string(), "Since".to_string()];
        let columns = read_columns(table.columns(), Some(&ages));
        let kinds: Vec<&str> = columns.iter().map(|c| c.kind.as_str()).collect();
        // "Last" reads another field (its definition says so, whatever the text);
        // a CRD's string column is text as sent.
        assert_eq!(kinds, ["date", "date", "string", "string"]);
        let rows = table.into_rows(&columns);
        assert_eq!(
            rows[0].cells,
            [
                "2026-01-02T03:04:05Z",
                "2026-01-02T03:04:05Z",
                "3m",
                "2026-01-02T03:04:05Z"
            ]
        );
    }

    #[test]
    fn rows_without_metadata_or_uid_are_skipped() {
        let table: RawTable = serde_json::from_str(
            r#"{"rows":[{"cells":["x"]},{"cells":null,"object":{"metadata":{"name":"n"}}}]}"#,
        )
        .expect("parses");
        assert!(table.into_rows(&[]).is_empty());
    }
}
