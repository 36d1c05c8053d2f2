//! A CRD's openAPIV3Schema, read leniently: every keyword Portico understands, taken
//! from any JSON value without panicking. Malformed keywords are ignored (the API
//! server already validated the CRD; a schema Portico cannot read becomes YAML).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// A CEL rule from `x-kubernetes-validations`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct CelRule {
    pub rule: String,
    pub message: String,
    /// A CEL expression the API server evaluates for the message; shown when there is
    /// no fixed `message`.
    pub message_expression: String,
    /// Where the API server reports a failure (`.spec.x`, relative to the schema that
    /// declares the rule); empty for the schema itself.
    pub field_path: String,
}

/// `additionalProperties`: absent, `true`/`false`, or a schema for the values.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub enum Additional {
    #[default]
    Absent,
    Allowed(bool),
    Schema(Box<Schema>),
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Schema {
    /// `string`, `integer`, `number`, `boolean`, `object`, `array`, or empty.
    pub kind: String,
    pub format: String,
    pub description: String,
    pub title: String,
    pub default: Option<Value>,
    pub enumeration: Vec<Value>,
    pub pattern: Option<String>,
    pub minimum: Option<f64>,
    pub maximum: Option<f64>,
    pub exclusive_minimum: bool,
    pub exclusive_maximum: bool,
    pub min_length: Option<u64>,
    pub max_length: Option<u64>,
    pub min_items: Option<u64>,
    pub max_items: Option<u64>,
    pub unique_items: bool,
    /// `x-kubernetes-list-type`: `atomic`, `set` or `map` (empty when absent).
    pub list_type: String,
    /// `x-kubernetes-list-map-keys`: what identifies an item of a `map` list.
    pub list_map_keys: Vec<String>,
    pub min_properties: Option<u64>,
    pub max_properties: Option<u64>,
    pub required: Vec<String>,
    pub nullable: bool,
    /// Properties in the order the CRD lists them.
    pub properties: Vec<(String, Schema)>,
    pub items: Option<Box<Schema>>,
    pub additional: Additional,
    pub int_or_string: bool,
    pub preserve_unknown_fields: bool,
    pub embedded_resource: bool,
    pub one_of: Vec<Schema>,
    pub any_of: Vec<Schema>,
    pub all_of: Vec<Schema>,
    /// `not`: the value must fail this schema (Istio uses it beside `oneOf` to say
    /// "none of these, or exactly one").
    pub not: Option<Box<Schema>>,
    pub validations: Vec<CelRule>,
}

/// Deepest nesting read; deeper parts are left to YAML (and cycles cannot occur in
/// JSON values, so this bounds the work on hostile input).
pub const MAX_DEPTH: usize = 64;

fn string(map: &Map<String, Value>, key: &str) -> String {
    map.get(key)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

fn strings(map: &Map<String, Value>, key: &str) -> Vec<String> {
    map.get(key)
        .and_then(Value::as_array)
        .map(|r| {
            r.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

fn number(map: &Map<String, Value>, key: &str) -> Option<f64> {
    map.get(key).and_then(Value::as_f64)
}

fn count(map: &Map<String, Value>, key: &str) -> Option<u64> {
    map.get(key).and_then(Value::as_u64)
}

fn flag(map: &Map<String, Value>, key: &str) -> bool {
    map.get(key).and_then(Value::as_bool).unwrap_or(false)
}

fn list(map: &Map<String, Value>, key: &str, depth: usize) -> Vec<Schema> {
    map.get(key)
        .and_then(Value::as_array)
        .map(|items| items.iter().map(|v| read(v, depth + 1)).collect())
        .unwrap_or_default()
}

impl Schema {
    /// Reads a schema from any JSON value; never panics.
    pub fn from_value(value: &Value) -> Self {
        read(value, 0)
    }

    /// The schema of a property, if declared.
    pub fn property(&self, name: &str) -> Option<&Schema> {
        self.properties
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, s)| s)
    }

    pub fn is_required(&self, name: &str) -> bool {
        self.required.iter().any(|r| r == name)
    }
}

fn read(value: &Value, depth: usize) -> Schema {
    let Some(map) = value.as_object() else {
        return Schema::default();
    };
    if depth > MAX_DEPTH {
        // Too deep to render as a form: keep it editable as YAML.
        return Schema {
            preserve_unknown_fields: true,
            ..Schema::default()
        };
    }
    let properties = map
        .get("properties")
        .and_then(Value::as_object)
        .map(|props| {
            props
                .iter()
                .map(|(k, v)| (k.clone(), read(v, depth + 1)))
                .collect()
        })
        .unwrap_or_default();
    let additional = match map.get("additionalProperties") {
        Some(Value::Bool(b)) => Additional::Allowed(*b),
        Some(v @ Value::Object(_)) => Additional::Schema(Box::new(read(v, depth + 1))),
        _ => Additional::Absent,
    };
    let validations = map
        .get("x-kubernetes-validations")
        .and_then(Value::as_array)
        .map(|rules| {
            rules
                .iter()
                .filter_map(Value::as_object)
                .map(|r| CelRule {
                    rule: string(r, "rule"),
                    message: string(r, "message"),
                    message_expression: string(r, "messageExpression"),
                    field_path: string(r, "fieldPath"),
                })
                .collect()
        })
        .unwrap_or_default();
    // OpenAPI v3 in CRDs uses boolean exclusive bounds.
    Schema {
        kind: string(map, "type"),
        format: string(map, "format"),
        description: string(map, "description"),
        title: string(map, "title"),
        default: map.get("default").cloned(),
        enumeration: map
            .get("enum")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default(),
        pattern: map
            .get("pattern")
            .and_then(Value::as_str)
            .map(str::to_string),
        minimum: number(map, "minimum"),
        maximum: number(map, "maximum"),
        exclusive_minimum: flag(map, "exclusiveMinimum"),
        exclusive_maximum: flag(map, "exclusiveMaximum"),
        min_length: count(map, "minLength"),
        max_length: count(map, "maxLength"),
        min_items: count(map, "minItems"),
        max_items: count(map, "maxItems"),
        // CRDs may not set uniqueItems; `x-kubernetes-list-type: set` says the same.
        unique_items: flag(map, "uniqueItems")
            || map.get("x-kubernetes-list-type").and_then(Value::as_str) == Some("set"),
        list_type: string(map, "x-kubernetes-list-type"),
        list_map_keys: strings(map, "x-kubernetes-list-map-keys"),
        min_properties: count(map, "minProperties"),
        max_properties: count(map, "maxProperties"),
        required: strings(map, "required"),
        nullable: flag(map, "nullable"),
        properties,
        items: map
            .get("items")
            .filter(|v| v.is_object())
            .map(|v| Box::new(read(v, depth + 1))),
        additional,
        int_or_string: flag(map, "x-kubernetes-int-or-string"),
        preserve_unknown_fields: flag(map, "x-kubernetes-preserve-unknown-fields"),
        embedded_resource: flag(map, "x-kubernetes-embedded-resource"),
        one_of: list(map, "oneOf", depth),
        any_of: list(map, "anyOf", depth),
        all_of: list(map, "allOf", depth),
        not: map
            .get("not")
            .filter(|v| v.is_object())
            .map(|v| Box::new(read(v, depth + 1))),
        validations,
    }
}
