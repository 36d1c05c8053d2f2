//! A CustomResourceDefinition read tolerantly. A CRD's author controls its JSON, and
//! one too deep for serde_json (past 128 levels: about 64 nested `properties`) would
//! otherwise fail the whole list the registry reads, so that no kind loads. Each CRD
//! is decoded on its own: whole when it can be, else as an outline (names, versions,
//! printer columns, conditions) with the reason, so it is listed and its objects can
//! be tabled, only its form is missing.

use std::borrow::Cow;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    CustomResourceColumnDefinition, CustomResourceDefinition, CustomResourceDefinitionNames,
    CustomResourceDefinitionSpec, CustomResourceDefinitionStatus, CustomResourceDefinitionVersion,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use serde::{Deserialize, Deserializer};
use serde_json::value::RawValue;

/// A CRD as the registry keeps it: whole, or its outline and why the rest was not read.
#[derive(Debug, Clone)]
pub struct ReadCrd {
    /// Without schemas when `unreadable` says why.
    pub crd: CustomResourceDefinition,
    pub unreadable: Option<String>,
}

impl ReadCrd {
    /// Decodes one CRD's JSON; fails only when not even its outline can be read.
    pub fn from_json(json: &str) -> Result<Self, serde_json::Error> {
        match serde_json::from_str::<CustomResourceDefinition>(json) {
            Ok(crd) => Ok(Self {
                crd,
                unreadable: None,
            }),
            Err(error) => {
                // Where in the JSON says nothing to a person reading the CRD list.
                let error = error.to_string();
                let error = error.split(" at line ").next().unwrap_or_default();
                // Unknown fields (schemas, managedFields) are skipped by serde_json
                // without recursing, so no depth stops the outline.
                let outline: Outline = serde_json::from_str(json)?;
                Ok(Self {
                    crd: outline.into_crd(),
                    unreadable: Some(format!(
                        "Portico could not read this definition's schemas ({error}); its objects can be listed, but there is no form for them."
                    )),
                })
            }
        }
    }
}

impl<'de> Deserialize<'de> for ReadCrd {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        // Captured without decoding (no depth limit applies), then decoded alone.
        let raw = Box::<RawValue>::deserialize(deserializer)?;
        Self::from_json(raw.get()).map_err(serde::de::Error::custom)
    }
}

impl kube::Resource for ReadCrd {
    type DynamicType = ();
    type Scope = kube::core::ClusterResourceScope;

    fn kind(dt: &()) -> Cow<'_, str> {
        CustomResourceDefinition::kind(dt)
    }
    fn group(dt: &()) -> Cow<'_, str> {
        CustomResourceDefinition::group(dt)
    }
    fn version(dt: &()) -> Cow<'_, str> {
        CustomResourceDefinition::version(dt)
    }
    fn plural(dt: &()) -> Cow<'_, str> {
        CustomResourceDefinition::plural(dt)
    }
    fn meta(&self) -> &ObjectMeta {
        &self.crd.metadata
    }
    fn meta_mut(&mut self) -> &mut ObjectMeta {
        &mut self.crd.metadata
    }
}

/// The parts of a CRD the registry needs besides schemas; metadata without
/// managedFields, which mirror the schema's depth.
#[derive(Deserialize)]
struct Outline {
    metadata: OutlineMeta,
    spec: OutlineSpec,
    #[serde(default)]
    status: Option<CustomResourceDefinitionStatus>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct OutlineMeta {
    name: Option<String>,
    uid: Option<String>,
    resource_version: Option<String>,
    generation: Option<i64>,
    creation_timestamp: Option<Time>,
    deletion_timestamp: Option<Time>,
    #[serde(default)]
    labels: Option<std::collections::BTreeMap<String, String>>,
    #[serde(default)]
    annotations: Option<std::collections::BTreeMap<String, String>>,
}

#[derive(Deserialize)]
struct OutlineSpec {
    group: String,
    names: CustomResourceDefinitionNames,
    scope: String,
    versions: Vec<OutlineVersion>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct OutlineVersion {
    name: String,
    served: bool,
    storage: bool,
    #[serde(default)]
    additional_printer_columns: Option<Vec<CustomResourceColumnDefinition>>,
    #[serde(default)]
    deprecated: Option<bool>,
    #[serde(default)]
    deprecation_warning: Option<String>,
}

impl Outline {
    fn into_crd(self) -> CustomResourceDefinition {
        let m = self.metadata;
        CustomResourceDefinition {
            metadata: ObjectMeta {
                name: m.name,
                uid: m.uid,
                resource_version: m.resource_version,
                generation: m.generation,
                creation_timestamp: m.creation_timestamp,
                deletion_timestamp: m.deletion_timestamp,
                labels: m.labels,
                annotations: m.annotations,
                ..ObjectMeta::default()
            },
            spec: CustomResourceDefinitionSpec {
                group: self.spec.group,
                names: self.spec.names,
                scope: self.spec.scope,
                versions: self
                    .spec
                    .versions
                    .into_iter()
                    .map(|v| CustomResourceDefinitionVersion {
                        name: v.name,
                        served: v.served,
                        storage: v.storage,
                        additional_printer_columns: v.additional_printer_columns,
                        deprecated: v.deprecated,
                        deprecation_warning: v.deprecation_warning,
                        ..CustomResourceDefinitionVersion::default()
                    })
                    .collect(),
                ..CustomResourceDefinitionSpec::default()
            },
            status: self.status,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A CRD whose schema nests `properties` `levels` deep.
    fn nested(levels: usize) -> serde_json::Value {
        let mut schema = json!({"type": "string"});
        for _ in 0..levels {
            schema = json!({"type": "object", "properties": {"next": schema}});
        }
        json!({
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": "deeps.hostile.test", "resourceVersion": "7",
                         "managedFields": [{"fieldsV1": schema.clone()}]},
            "spec": {
                "group": "hostile.test", "scope": "Namespaced",
                "names": {"plural": "deeps", "kind": "Deep"},
                "versions": [{"name": "v1", "served": true, "storage": true,
                    "additionalPrinterColumns": [{"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}],
                    "schema": {"openAPIV3Schema": schema}}]
            },
            "status": {"conditions": [{"type": "Established", "status": "True"}]}
        })
    }

    #[test]
    fn a_crd_too_deep_to_decode_is_read_as_its_outline_with_the_reason() {
        let list = format!(
            r#"{{"kind":"CustomResourceDefinitionList","apiVersion":"apiextensions.k8s.io/v1","metadata":{{"resourceVersion":"9"}},"items":[{},{}]}}"#,
            nested(3),
            nested(70)
        );
        let list: kube::core::ObjectList<ReadCrd> =
            serde_json::from_str(&list).expect("the list decodes");
        let [shallow, deep] = &list.items[..] else {
            panic!("two items")
        };
        assert!(shallow.unreadable.is_none());
        assert!(shallow.crd.spec.versions[0].schema.is_some());
        let reason = deep.unreadable.as_deref().expect("a reason");
        assert!(reason.contains("recursion limit"), "{reason}");
        assert_eq!(deep.crd.spec.names.plural, "deeps");
        assert_eq!(deep.crd.metadata.resource_version.as_deref(), Some("7"));
        assert!(deep.crd.spec.versions[0].schema.is_none());
        assert_eq!(
            deep.crd.spec.versions[0]
                .additional_printer_columns
                .as_ref()
                .map(Vec::len),
            Some(1)
        );
        assert!(deep.crd.status.is_some());
    }

    #[test]
    fn watch_events_carry_deep_crds_too() {
        let line = format!(r#"{{"type":"MODIFIED","object":{}}}"#, nested(90));
        let event: kube::core::WatchEvent<ReadCrd> =
            serde_json::from_str(&line).expect("the event decodes");
        let kube::core::WatchEvent::Modified(crd) = event else {
            panic!("modified")
        };
        assert!(crd.unreadable.is_some());
    }

    #[test]
    fn not_even_an_outline_is_an_error() {
        assert!(ReadCrd::from_json(r#"{"metadata":{},"spec":"none"}"#).is_err());
    }
}
