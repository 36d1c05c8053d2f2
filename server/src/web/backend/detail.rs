//! One object as the detail page shows it: YAML without noise or secrets, conditions,
//! finalizers and the chain of owners above it.

use super::pod_summary::pod_summary;
use super::workload_selector::pod_selector;
use std::collections::HashSet;

use kube::api::DynamicObject;
use portico_core::payload::{Condition, Mention, ObjectDetail, OwnerLink};
use portico_core::resource::{KindFlags, ResourceRef};
use serde_json::Value;

use super::objects;
use crate::cluster::error::{ApiError, Failure, split_api_version};
use crate::cluster::registry::KindRegistry;

/// How far up the ownerReferences chain the page follows.
const MAX_OWNER_DEPTH: usize = 5;

/// Reads the object and follows its owners.
pub async fn object_detail(
    client: &kube::Client,
    kinds: &KindRegistry,
    resource: &ResourceRef,
    namespace: Option<&str>,
    name: &str,
) -> Result<ObjectDetail, ApiError> {
    let obj = objects::api_for(client, &objects::api_resource(resource), namespace)
        .get(name)
        .await?;
    let owners = owner_chain(client, kinds, &obj, namespace).await;
    let flags = kinds
        .lookup(&resource.group, &resource.plural)
        .map(|k| k.flags)
        .unwrap_or_default();
    Ok(summarize(obj, is_secret(resource), owners, flags))
}

/// The detail view of an object already read.
pub fn summarize(
    obj: DynamicObject,
    is_secret: bool,
    owners: Vec<OwnerLink>,
    flags: KindFlags,
) -> ObjectDetail {
    let meta = &obj.metadata;
    let types = obj.types.clone().unwrap_or_default();
    let conditions = obj
        .data
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .map(|list| list.iter().map(condition).collect())
        .unwrap_or_default();
    let mut labels: Vec<(String, String)> = meta
        .labels
        .clone()
        .unwrap_or_default()
        .into_iter()
        .collect();
    labels.sort();
    // Secrets have no status; for them nothing secret could leak through it anyway.
    let status = if is_secret {
        Value::Null
    } else {
        obj.data.get("status").cloned().unwrap_or(Value::Null)
    };
    let pod = (types.kind == "Pod" && types.api_version == "v1")
        .then(|| pod_summary(&obj.data))
        .flatten();
    let pod_selector = pod_selector(
        &types.kind,
        &types.api_version,
        meta.name.as_deref().unwrap_or_default(),
        &obj.data,
    );
    let mentions = mentions(
        &types.kind,
        &types.api_version,
        meta.namespace.as_deref(),
        &obj.data,
    );
    ObjectDetail {
        mentions,
        status,
        kind: types.kind,
        api_version: types.api_version,
        name: meta.name.clone().unwrap_or_default(),
        namespace: meta.namespace.clone(),
        uid: meta.uid.clone().unwrap_or_default(),
        created: meta.creation_timestamp.as_ref().map(|t| t.0.to_string()),
        deletion_timestamp: meta.deletion_timestamp.as_ref().map(|t| t.0.to_string()),
        finalizers: meta.finalizers.clone().unwrap_or_default(),
        labels,
        conditions,
        owners,
        yaml: display_yaml(obj, is_secret),
        flags,
        pod,
        pod_selector,
    }
}

/// What a StackBinding names: its Stack and its workload, each with its page.
fn mentions(kind: &str, api_version: &str, namespace: Option<&str>, data: &Value) -> Vec<Mention> {
    let binding = portico_core::portico_kinds::bindings();
    if kind != "StackBinding" || api_version != binding.api_version() {
        return Vec::new();
    }
    let spec = data.get("spec").cloned().unwrap_or(Value::Null);
    let mut out = Vec::new();
    let stack = text(&spec, "stack");
    if portico_core::resource::is_object_name(&stack) {
        out.push(Mention {
            role: "Stack".into(),
            kind: "Stack".into(),
            href: portico_core::portico_kinds::stacks().object_path(namespace, &stack),
            name: stack,
        });
    }
    let workload = spec.get("workload").cloned().unwrap_or(Value::Null);
    let (kind, name) = (text(&workload, "kind"), text(&workload, "name"));
    let resource = portico_core::portico_kinds::workload_resource(&kind);
    if let Some(resource) = resource.filter(|_| portico_core::resource::is_object_name(&name)) {
        out.push(Mention {
            role: "Workload".into(),
            href: resource.object_path(namespace, &name),
            kind,
            name,
        });
    }
    out
}

fn text(v: &Value, key: &str) -> String {
    v.get(key)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

fn condition(v: &Value) -> Condition {
    Condition {
        kind: text(v, "type"),
        status: text(v, "status"),
        reason: text(v, "reason"),
        message: text(v, "message"),
        last_transition_time: text(v, "lastTransitionTime"),
    }
}

/// Whether `resource` is the core Secrets, whose values never leave the server.
pub fn is_secret(resource: &ResourceRef) -> bool {
    resource.group.is_empty() && resource.plural == "secrets"
}

/// YAML for reading: managedFields dropped (noise), Secret values replaced, so no
/// secret ever reaches the page.
fn display_yaml(mut obj: DynamicObject, is_secret: bool) -> String {
    obj.metadata.managed_fields = None;
    if is_secret {
        if let Some(data) = obj.data.get_mut("data").and_then(Value::as_object_mut) {
            for value in data.values_mut() {
                *value = Value::String("<hidden>".into());
            }
        }
        drop_plain_copies(&mut obj);
    }
    serde_yaml::to_string(&obj).unwrap_or_else(|e| format!("# could not render as YAML: {e}"))
}

/// A Secret as the edit form may hold it: no `data` or `stringData`, and no
/// last-applied annotation (kubectl apply keeps the whole object, values included,
/// there). Saving puts the stored values back ([`keep_stored_secret_values`]).
pub fn strip_secret_values(obj: &mut DynamicObject) {
    if let Some(map) = obj.data.as_object_mut() {
        map.remove("data");
    }
    drop_plain_copies(obj);
}

/// Removes where a Secret's values also appear in plain text: `stringData`, and the
/// last-applied annotation kubectl apply writes with the whole object in it.
fn drop_plain_copies(obj: &mut DynamicObject) {
    if let Some(map) = obj.data.as_object_mut() {
        map.remove("stringData");
    }
    if let Some(annotations) = obj.metadata.annotations.as_mut() {
        annotations.remove("kubectl.kubernetes.io/last-applied-configuration");
    }
}

/// An edited Secret, saved: the form never saw the stored values, so an edit that
/// leaves `data` empty keeps them; keys the edit sets (in `data` or `stringData`) win.
pub fn keep_stored_secret_values(edited: &mut DynamicObject, stored: &DynamicObject) {
    let Some(stored_data) = stored.data.get("data").and_then(Value::as_object) else {
        return;
    };
    let Some(map) = edited.data.as_object_mut() else {
        return;
    };
    let data = map
        .entry("data")
        .or_insert_with(|| Value::Object(Default::default()));
    if !data.is_object() {
        *data = Value::Object(Default::default());
    }
    if let Some(data) = data.as_object_mut() {
        for (key, value) in stored_data {
            data.entry(key.clone()).or_insert_with(|| value.clone());
        }
    }
}

/// Follows the controller (or first) owner upward, level by level.
async fn owner_chain(
    client: &kube::Client,
    kinds: &KindRegistry,
    obj: &DynamicObject,
    namespace: Option<&str>,
) -> Vec<OwnerLink> {
    let mut chain = Vec::new();
    let mut seen = HashSet::new();
    let mut refs = obj.metadata.owner_references.clone().unwrap_or_default();
    for depth in 1..=MAX_OWNER_DEPTH {
        // Show every direct owner; follow the controller (or the first) upward.
        refs.sort_by_key(|r| !r.controller.unwrap_or(false));
        let Some(next) = refs.first().cloned() else {
            break;
        };
        let mut followed = None;
        for r in &refs {
            let (group, version) = split_api_version(&r.api_version);
            let mut link = OwnerLink {
                kind: r.kind.clone(),
                name: r.name.clone(),
                controller: r.controller.unwrap_or(false),
                depth,
                href: None,
                note: None,
            };
            match kinds.resolve(group, version, &r.kind) {
                Some(kind) => {
                    let ns = if kind.namespaced { namespace } else { None };
                    let page = kind.resource(Some(version));
                    link.href = Some(page.object_path(ns, &r.name));
                    if r.uid == next.uid && seen.insert(r.uid.clone()) {
                        let api = objects::api_for(client, &objects::api_resource(&page), ns);
                        match api.get(&r.name).await {
                            Ok(owner) => followed = Some(owner),
                            Err(e) => link.note = Some(unfollowed(&e.into())),
                        }
                    }
                }
                None => link.note = Some("its kind is not served by this cluster".into()),
            }
            chain.push(link);
        }
        match followed {
            Some(owner) => refs = owner.metadata.owner_references.unwrap_or_default(),
            None => break,
        }
    }
    chain
}

/// Why an owner could not be read, for the owner list.
fn unfollowed(error: &ApiError) -> String {
    match error.failure() {
        Failure::NotFound => "not found: deleted, or waiting for garbage collection".into(),
        Failure::Forbidden => "you may not read it".into(),
        _ => error.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn object(value: Value) -> DynamicObject {
        serde_json::from_value(value).expect("object")
    }

    #[test]
    fn secrets_never_reach_the_yaml() {
        let secret = object(serde_json::json!({
            "apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": "db", "annotations": {
                "kubectl.kubernetes.io/last-applied-configuration": "{\"data\":{\"password\":\"c2VjcmV0\"}}"
            }},
            "data": {"password": "c2VjcmV0"},
            "stringData": {"token": "plain"}
        }));
        let d = summarize(secret, true, vec![], KindFlags::default());
        assert!(!d.yaml.contains("c2VjcmV0"), "{}", d.yaml);
        assert!(!d.yaml.contains("plain"), "{}", d.yaml);
        assert!(d.yaml.contains("password: <hidden>"), "{}", d.yaml);
    }

    #[test]
    fn an_edited_secret_is_saved_with_the_values_the_form_never_saw() {
        let stored = object(serde_json::json!({
            "apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": "db", "annotations": {
                "kubectl.kubernetes.io/last-applied-configuration": "{\"data\":{\"password\":\"c2VjcmV0\"}}"
            }},
            "data": {"password": "c2VjcmV0", "user": "YWRh"}
        }));
        let mut for_form = stored.clone();
        strip_secret_values(&mut for_form);
        let text = serde_json::to_string(&for_form).expect("json");
        assert!(
            !text.contains("c2VjcmV0") && !text.contains("YWRh"),
            "{text}"
        );

        // The form sends it back without `data`, and with one key of its own.
        let mut edited = for_form;
        edited.data["data"] = serde_json::json!({"user": "Ym9i"});
        keep_stored_secret_values(&mut edited, &stored);
        assert_eq!(
            edited.data["data"],
            serde_json::json!({"password": "c2VjcmV0", "user": "Ym9i"})
        );
    }

    #[test]
    fn conditions_finalizers_and_deletion_are_read() {
        let o = object(serde_json::json!({
            "apiVersion": "infra.sealyun.com/v1", "kind": "VirtulMachine",
            "metadata": {"name": "vm", "uid": "u1", "finalizers": ["infra.sealyun.com/cleanup"],
                         "deletionTimestamp": "2026-01-01T00:00:00Z",
                         "managedFields": [{"manager": "x"}]},
            "status": {"conditions": [{"type": "Ready", "status": "False", "reason": "Waiting", "message": "no host"}]}
        }));
        let d = summarize(o, false, vec![], KindFlags::default());
        assert_eq!(d.finalizers, ["infra.sealyun.com/cleanup"]);
        assert_eq!(
            d.deletion_timestamp.as_deref(),
            Some("2026-01-01T00:00:00Z")
        );
        assert_eq!(d.conditions.len(), 1);
        assert_eq!(d.conditions[0].reason, "Waiting");
        assert!(!d.yaml.contains("managedFields"));
    }

    #[test]
    fn odd_conditions_do_not_panic() {
        let o = object(serde_json::json!({
            "apiVersion": "x/v1", "kind": "X", "metadata": {"name": "x"},
            "status": {"conditions": [1, null, {"type": 3}]}
        }));
        assert_eq!(
            summarize(o, false, vec![], KindFlags::default())
                .conditions
                .len(),
            3
        );
    }
}
