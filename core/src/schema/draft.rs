//! The object a create or edit page works on, as one value: name and namespace are
//! read from its metadata, the form edits its `spec`, the YAML view edits all of it,
//! and a conflict is resolved by a three-way merge that keeps every edit. Pure: the
//! page holds the object in a signal and calls these on it.

use serde_json::{Map, Value, json};

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum DraftError {
    #[error("Not valid YAML: {0}")]
    NotYaml(String),
    #[error("The YAML must describe one object (key: value pairs).")]
    NotAnObject,
    #[error("metadata must be key: value pairs (name, labels, …), not {0}.")]
    BadMetadata(&'static str),
    #[error("spec must be key: value pairs, not {0}.")]
    BadSpec(&'static str),
}

/// Metadata that identifies the object being edited and guards concurrent writes: the
/// YAML view cannot change it.
const IDENTITY: [&str; 4] = ["name", "namespace", "resourceVersion", "uid"];

/// Deepest nesting the merge walks; deeper values are taken whole (JSON from the API
/// server nests far less).
const MAX_MERGE_DEPTH: usize = 64;

#[derive(Debug, Clone, PartialEq)]
pub struct Draft {
    /// The whole object as it will be sent (status never is).
    pub object: Value,
    /// For an edit: the object the edits are relative to (as read, or as the server
    /// had it at the last conflict).
    pub original: Option<Value>,
    pub namespaced: bool,
}

fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "true/false",
        Value::Number(_) => "a number",
        Value::String(_) => "text",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

impl Draft {
    /// A new object of a kind, starting from `spec`.
    pub fn create(
        api_version: &str,
        kind: &str,
        namespaced: bool,
        namespace: &str,
        spec: Value,
    ) -> Self {
        let metadata = if namespaced {
            json!({ "name": "", "namespace": namespace })
        } else {
            json!({ "name": "" })
        };
        let object = json!({
            "apiVersion": api_version,
            "kind": kind,
            "metadata": metadata,
            "spec": spec,
        });
        Self {
            object,
            original: None,
            namespaced,
        }
    }

    /// An existing object, as read from the API server.
    pub fn edit(object: Value, namespaced: bool) -> Self {
        let mut draft = Self {
            object: object.clone(),
            original: Some(object),
            namespaced,
        };
        draft.normalize();
        draft
    }

    pub fn editing(&self) -> bool {
        self.original.is_some()
    }

    pub fn name(&self) -> &str {
        Self::name_of(&self.object)
    }

    /// The namespace, for a namespaced kind.
    pub fn namespace(&self) -> Option<&str> {
        Self::namespace_of(&self.object, self.namespaced)
    }

    /// A draft object's name (for pages that hold only the object).
    pub fn name_of(object: &Value) -> &str {
        object
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or_default()
    }

    pub fn namespace_of(object: &Value, namespaced: bool) -> Option<&str> {
        if !namespaced {
            return None;
        }
        object
            .pointer("/metadata/namespace")
            .and_then(Value::as_str)
    }

    pub fn set_name(&mut self, name: &str) {
        if !self.editing()
            && let Some(metadata) = self.metadata_mut()
        {
            metadata.insert("name".into(), json!(name));
        }
    }

    pub fn set_namespace(&mut self, namespace: &str) {
        if !self.editing()
            && self.namespaced
            && let Some(metadata) = self.metadata_mut()
        {
            metadata.insert("namespace".into(), json!(namespace));
        }
    }

    /// The same object under another served version of its kind.
    pub fn set_api_version(&mut self, api_version: &str) {
        if let Some(map) = self.object.as_object_mut() {
            map.insert("apiVersion".into(), json!(api_version));
        }
    }

    fn metadata_mut(&mut self) -> Option<&mut Map<String, Value>> {
        if !self.object.is_object() {
            self.object = json!({});
        }
        let metadata = self
            .object
            .as_object_mut()?
            .entry("metadata")
            .or_insert_with(|| json!({}));
        if !metadata.is_object() {
            *metadata = json!({});
        }
        metadata.as_object_mut()
    }

    /// Keeps the shape every page relies on: metadata is an object, no status, no
    /// namespace on a cluster-scoped object. A missing spec stays missing (the form
    /// creates it when a field is set), so an object without one saves unchanged.
    fn normalize(&mut self) {
        let namespaced = self.namespaced;
        if let Some(metadata) = self.metadata_mut()
            && !namespaced
        {
            metadata.remove("namespace");
        }
        if let Value::Object(object) = &mut self.object {
            // Status goes through its own subresource; a form never sends it.
            object.remove("status");
        }
    }

    /// What a save sends.
    pub fn body(&self) -> Value {
        self.object.clone()
    }

    pub fn to_yaml(&self) -> String {
        serde_yaml::to_string(&self.object).unwrap_or_default()
    }

    /// Takes the YAML view's text as the whole object. An edit keeps its identity
    /// (kind, name, namespace, resourceVersion, uid); a new object keeps its kind.
    /// Nothing changes when the text is refused.
    pub fn apply_yaml(&mut self, text: &str) -> Result<(), DraftError> {
        let parsed: Value =
            serde_yaml::from_str(text).map_err(|e| DraftError::NotYaml(e.to_string()))?;
        self.apply_object(parsed)
    }

    /// [`Draft::apply_yaml`] for text already parsed (the browser parses YAML with code
    /// it fetches only when YAML is first used).
    pub fn apply_object(&mut self, parsed: Value) -> Result<(), DraftError> {
        let Value::Object(mut next) = parsed else {
            return Err(DraftError::NotAnObject);
        };
        match next.get("metadata") {
            None | Some(Value::Object(_)) => {}
            Some(other) => return Err(DraftError::BadMetadata(kind_of(other))),
        }
        match next.get("spec") {
            None | Some(Value::Object(_)) | Some(Value::Null) => {}
            Some(other) => return Err(DraftError::BadSpec(kind_of(other))),
        }
        for key in ["apiVersion", "kind"] {
            if let Some(v) = self.object.get(key) {
                next.insert(key.into(), v.clone());
            }
        }
        if self.editing() {
            let mut metadata = next
                .remove("metadata")
                .and_then(|m| match m {
                    Value::Object(m) => Some(m),
                    _ => None,
                })
                .unwrap_or_default();
            for key in IDENTITY {
                match self.object.pointer(&format!("/metadata/{key}")) {
                    Some(v) => metadata.insert(key.into(), v.clone()),
                    None => metadata.remove(key),
                };
            }
            next.insert("metadata".into(), Value::Object(metadata));
        }
        self.object = Value::Object(next);
        self.normalize();
        Ok(())
    }

    /// After a conflict: `latest` is what the server has now. The edits made since
    /// `original` are applied on top of it and it becomes the new original (so the next
    /// save carries its resourceVersion). Returns the paths both sides changed
    /// differently, where the person's edit was kept.
    pub fn rebase(&mut self, latest: Value) -> Vec<String> {
        let original = self.original.clone().unwrap_or(Value::Null);
        let mut merged = latest.clone();
        let mut conflicts = Vec::new();
        merge(
            &original,
            &self.object,
            &latest,
            &mut merged,
            String::new(),
            &mut conflicts,
            0,
        );
        // The next save is based on the server's version.
        for key in ["resourceVersion", "uid"] {
            if let (Some(v), Some(meta)) = (
                latest.pointer(&format!("/metadata/{key}")).cloned(),
                merged.get_mut("metadata").and_then(Value::as_object_mut),
            ) {
                meta.insert(key.into(), v);
            }
        }
        self.object = merged;
        self.original = Some(latest);
        self.normalize();
        conflicts.retain(|p| !p.starts_with("metadata.resourceVersion") && p != "status");
        conflicts
    }
}

/// Puts into `out` (which starts as `theirs`) every change `mine` made to `base`.
fn merge(
    base: &Value,
    mine: &Value,
    theirs: &Value,
    out: &mut Value,
    path: String,
    conflicts: &mut Vec<String>,
    depth: usize,
) {
    if mine == base {
        return; // Not edited: the server's value stands.
    }
    if let (Value::Object(b), Value::Object(m), Value::Object(t), Value::Object(o)) =
        (base, mine, theirs, &mut *out)
        && depth < MAX_MERGE_DEPTH
    {
        let keys: Vec<&String> = b.keys().chain(m.keys()).collect();
        let mut done = std::collections::HashSet::new();
        for key in keys {
            if !done.insert(key) {
                continue;
            }
            let child = if path.is_empty() {
                key.clone()
            } else {
                format!("{path}.{key}")
            };
            match (b.get(key), m.get(key)) {
                (Some(bv), None) => {
                    // Removed by the person.
                    if t.get(key).is_some_and(|tv| tv != bv) {
                        conflicts.push(child);
                    }
                    o.remove(key);
                }
                (bv, Some(mv)) => {
                    let bv = bv.cloned().unwrap_or(Value::Null);
                    let tv = t.get(key).cloned().unwrap_or(Value::Null);
                    let slot = o.entry(key.clone()).or_insert(Value::Null);
                    merge(&bv, mv, &tv, slot, child, conflicts, depth + 1);
                }
                (None, None) => {}
            }
        }
        return;
    }
    if theirs != base && theirs != mine {
        conflicts.push(path);
    }
    *out = mine.clone();
}

#[cfg(test)]
mod tests {
    use super::*;

    fn edited() -> Draft {
        Draft::edit(
            json!({"apiVersion": "x.io/v1", "kind": "Thing",
                   "metadata": {"name": "a", "resourceVersion": "1", "uid": "u"},
                   "spec": {"size": 1, "tags": ["x"], "mode": "fast"},
                   "status": {"ready": true}}),
            false,
        )
    }

    #[test]
    fn a_new_object_derives_name_and_namespace_from_itself() {
        let mut d = Draft::create("x.io/v1", "Thing", true, "team-a", json!({"size": 2}));
        d.set_name("web");
        assert_eq!((d.name(), d.namespace()), ("web", Some("team-a")));
        d.set_namespace("team-b");
        assert_eq!(
            d.body()["metadata"],
            json!({"name": "web", "namespace": "team-b"})
        );
        let cluster = Draft::create("x.io/v1", "Thing", false, "team-a", json!({}));
        assert_eq!(cluster.namespace(), None);
        assert_eq!(cluster.body()["metadata"], json!({"name": ""}));
    }

    #[test]
    fn an_edit_never_sends_status_and_keeps_its_identity_through_yaml() {
        let mut d = edited();
        assert_eq!(d.body().get("status"), None);
        d.set_name("renamed");
        assert_eq!(d.name(), "a");
        d.apply_yaml(
            "apiVersion: other/v9\nkind: Other\nmetadata:\n  name: b\n  labels: {team: x}\nspec:\n  size: 5\nstatus: {ready: false}\n",
        )
        .expect("valid YAML");
        let body = d.body();
        assert_eq!(body["apiVersion"], "x.io/v1");
        assert_eq!(body["kind"], "Thing");
        assert_eq!(body["metadata"]["name"], "a");
        assert_eq!(body["metadata"]["resourceVersion"], "1");
        assert_eq!(body["metadata"]["labels"], json!({"team": "x"}));
        assert_eq!(body["spec"], json!({"size": 5}));
        assert_eq!(body.get("status"), None);
    }

    #[test]
    fn yaml_that_is_not_an_object_is_refused_and_nothing_is_lost() {
        let mut d = Draft::create("x.io/v1", "Thing", true, "ns", json!({"size": 2}));
        let before = d.clone();
        for (text, error) in [
            ("metadata: foo", DraftError::BadMetadata("text")),
            ("metadata: [1, 2]", DraftError::BadMetadata("a list")),
            ("spec: 3", DraftError::BadSpec("a number")),
            ("- a\n- b", DraftError::NotAnObject),
            ("just text", DraftError::NotAnObject),
        ] {
            assert_eq!(d.apply_yaml(text), Err(error), "{text}");
            assert_eq!(d, before);
        }
        assert!(matches!(d.apply_yaml("a: [b"), Err(DraftError::NotYaml(_))));
        // A new object takes name and namespace from the YAML.
        d.apply_yaml("metadata: {name: from-yaml, namespace: other}\nspec: {size: 3}")
            .expect("valid");
        assert_eq!((d.name(), d.namespace()), ("from-yaml", Some("other")));
        assert_eq!(d.body()["kind"], "Thing");
    }

    #[test]
    fn loading_and_saving_unchanged_changes_nothing() {
        let object = json!({"apiVersion": "x.io/v1", "kind": "Thing",
            "metadata": {"name": "a", "namespace": "n", "labels": {"k": "v"}},
            "spec": {"deep": {"list": [{"a": 1}, {"b": [2, 3]}]}, "n": null}});
        let d = Draft::edit(object.clone(), true);
        assert_eq!(d.body(), object);
        let mut again = d.clone();
        again.apply_yaml(&d.to_yaml()).expect("own YAML");
        assert_eq!(again.body(), object);
    }

    #[test]
    fn a_conflict_keeps_every_edit_on_top_of_the_servers_version() {
        let mut d = edited();
        d.object["spec"]["size"] = json!(3); // mine
        d.object["spec"].as_object_mut().map(|s| s.remove("tags"));
        let latest = json!({"apiVersion": "x.io/v1", "kind": "Thing",
            "metadata": {"name": "a", "resourceVersion": "2", "uid": "u"},
            "spec": {"size": 1, "tags": ["x"], "mode": "slow", "added": true},
            "status": {"ready": false}});
        let conflicts = d.rebase(latest.clone());
        assert_eq!(conflicts, Vec::<String>::new());
        assert_eq!(
            d.body()["spec"],
            json!({"size": 3, "mode": "slow", "added": true})
        );
        assert_eq!(d.body()["metadata"]["resourceVersion"], "2");
        assert_eq!(d.original, Some(latest));
        // Both changed the same field: mine is kept and the clash reported.
        d.object["spec"]["mode"] = json!("mine");
        let conflicts = d.rebase(json!({"apiVersion": "x.io/v1", "kind": "Thing",
            "metadata": {"name": "a", "resourceVersion": "3"},
            "spec": {"size": 1, "mode": "theirs", "added": true}}));
        assert_eq!(conflicts, ["spec.mode"]);
        assert_eq!(d.body()["spec"]["mode"], "mine");
        assert_eq!(d.body()["metadata"]["resourceVersion"], "3");
    }

    #[test]
    fn an_object_without_a_spec_is_saved_without_one() {
        let object = json!({"apiVersion": "x.io/v1", "kind": "Rules",
            "metadata": {"name": "r"}, "rules": [{"alert": "Down"}]});
        assert_eq!(Draft::edit(object.clone(), false).body(), object);
    }

    #[test]
    fn a_cluster_scoped_edit_has_no_namespace_to_refetch() {
        let d = Draft::edit(
            json!({"apiVersion": "x.io/v1", "kind": "Thing", "metadata": {"name": "c"}, "spec": {}}),
            false,
        );
        assert_eq!(d.namespace(), None);
    }
}
