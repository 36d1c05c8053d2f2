//! openAPIV3Schema → the form model the create/edit pages render: one field per
//! property, a widget per type, constraints and CEL rules as help, and a YAML editor
//! for whatever a form cannot express. Pure and total: any schema yields a form.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::openapi::{Additional, CelRule, Schema};

/// Nesting beyond which sections become YAML editors (readability, not safety).
const MAX_FORM_DEPTH: usize = 12;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Widget {
    Text,
    Integer,
    Number,
    Boolean,
    /// `enum`: a select of these values.
    Select(Vec<Value>),
    DateTime,
    /// `format: byte`: base64 text.
    Bytes,
    IntOrString,
    Object(Vec<Field>),
    /// An array; the field describes one item.
    List(Box<Field>),
    /// `additionalProperties` with a schema: key/value rows; the field describes a value.
    Map(Box<Field>),
    /// `oneOf` / `anyOf` with alternatives that differ in shape.
    Choice(Vec<Field>),
    /// Edited as YAML; the reason is shown to the user.
    Yaml(String),
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Field {
    /// Property name (empty for list items and map values).
    pub name: String,
    /// The API server's path notation, e.g. `spec.replicas`; items use `[*]`.
    pub path: String,
    pub help: String,
    pub required: bool,
    pub nullable: bool,
    pub default: Option<Value>,
    /// What the schema demands, in words ("1 to 10", "matches (mysql|tomcat)").
    pub constraints: Vec<String>,
    pub rules: Vec<CelRule>,
    /// For an object whose `oneOf`/`anyOf` alternatives each require some of its
    /// properties: the choice between them (the form shows one alternative's fields).
    pub alternatives: Vec<Alternative>,
    /// `oneOf` (exactly one) rather than `anyOf` (at least one).
    pub exclusive: bool,
    /// For a list of `x-kubernetes-list-type: map`: the properties that identify an
    /// item (shown on each row; two items may not share them).
    pub list_keys: Vec<String>,
    /// An example of what to type, when the schema says more than its type
    /// (quantities: "500m, 2Gi").
    pub placeholder: String,
    pub widget: Widget,
}

/// One alternative of an object's `oneOf`/`anyOf`, by the properties it requires.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Alternative {
    pub label: String,
    pub required: Vec<String>,
}

impl Field {
    /// Properties that belong to some alternative but not to the `chosen` one: hidden.
    pub fn hidden_by(&self, chosen: Option<usize>) -> Vec<String> {
        let Some(chosen) = chosen.and_then(|c| self.alternatives.get(c)) else {
            return vec![];
        };
        self.alternatives
            .iter()
            .flat_map(|a| a.required.iter())
            .filter(|p| !chosen.required.contains(p))
            .cloned()
            .collect()
    }

    /// The alternative `value` already satisfies (all its required properties set).
    pub fn chosen_alternative(&self, value: &Value) -> Option<usize> {
        let map = value.as_object()?;
        self.alternatives
            .iter()
            .position(|a| !a.required.is_empty() && a.required.iter().all(|p| map.contains_key(p)))
    }
}

/// The form for a CRD version's `spec` (status is never editable). A schema without
/// a `spec` property (or with an untyped one) gives a YAML editor.
pub fn spec_form(root: &Schema) -> Field {
    match root.property("spec") {
        Some(spec) => build(spec, "spec", "spec", root.is_required("spec"), 0),
        None => Field {
            name: "spec".into(),
            path: "spec".into(),
            help: String::new(),
            required: false,
            nullable: false,
            default: None,
            constraints: vec![],
            rules: vec![],
            alternatives: vec![],
            exclusive: false,
            list_keys: vec![],
            placeholder: String::new(),
            widget: Widget::Yaml("The schema declares no spec; edit the object as YAML.".into()),
        },
    }
}

fn describe(schema: &Schema) -> Vec<String> {
    let mut out = Vec::new();
    let bound = |v: f64| {
        if v.fract() == 0.0 && v.abs() < 1e15 {
            format!("{}", v as i64)
        } else {
            v.to_string()
        }
    };
    match (schema.minimum, schema.maximum) {
        (Some(lo), Some(hi)) if !schema.exclusive_minimum && !schema.exclusive_maximum => {
            out.push(format!("{} to {}", bound(lo), bound(hi)))
        }
        (lo, hi) => {
            if let Some(lo) = lo {
                let op = if schema.exclusive_minimum { ">" } else { "≥" };
                out.push(format!("{op} {}", bound(lo)));
            }
            if let Some(hi) = hi {
                let op = if schema.exclusive_maximum { "<" } else { "≤" };
                out.push(format!("{op} {}", bound(hi)));
            }
        }
    }
    match (schema.min_length, schema.max_length) {
        (Some(lo), Some(hi)) => out.push(format!("{lo} to {hi} characters")),
        (Some(lo), None) => out.push(format!("at least {lo} characters")),
        (None, Some(hi)) => out.push(format!("at most {hi} characters")),
        _ => {}
    }
    match (schema.min_items, schema.max_items) {
        (Some(lo), Some(hi)) => out.push(format!("{lo} to {hi} items")),
        (Some(lo), None) => out.push(format!("at least {lo} items")),
        (None, Some(hi)) => out.push(format!("at most {hi} items")),
        _ => {}
    }
    if schema.unique_items {
        out.push("no duplicates".into());
    }
    if schema.list_type == "map" && !schema.list_map_keys.is_empty() {
        out.push(format!("one item per {}", schema.list_map_keys.join(" + ")));
    }
    if is_quantity(schema) {
        out.push("a quantity: a number with an optional unit (m, k, M, G, Ki, Mi, Gi…)".into());
    } else if let Some(p) = &schema.pattern {
        out.push(format!("matches {p}"));
    }
    match schema.format.as_str() {
        "" => {}
        "int32" => out.push("a 32-bit whole number".into()),
        "int64" => out.push("a 64-bit whole number".into()),
        "byte" => out.push("base64-encoded".into()),
        "date-time" => out.push("a date and time (RFC 3339)".into()),
        other => out.push(format!("format {other}")),
    }
    out
}

/// A Kubernetes resource quantity (`500m`, `2Gi`): an int-or-string whose pattern is
/// the quantity grammar, as controller-gen writes it for `resource.Quantity`.
fn is_quantity(schema: &Schema) -> bool {
    schema.int_or_string
        && schema
            .pattern
            .as_deref()
            .is_some_and(|p| p.contains("[KMGTPE]i"))
}

fn yaml_reason(schema: &Schema) -> Option<String> {
    if schema.embedded_resource {
        return Some("An embedded Kubernetes object: edit it as YAML.".into());
    }
    let declares_nothing =
        schema.properties.is_empty() && matches!(schema.additional, Additional::Absent);
    if schema.preserve_unknown_fields && declares_nothing {
        return Some("This part accepts any fields: edit it as YAML.".into());
    }
    if schema.kind.is_empty()
        && !schema.int_or_string
        && schema.one_of.is_empty()
        && schema.any_of.is_empty()
    {
        return Some("The schema does not say what this is: edit it as YAML.".into());
    }
    None
}

/// Builds the field for `schema` at `path`.
pub fn build(schema: &Schema, name: &str, path: &str, required: bool, depth: usize) -> Field {
    let mut widget = widget(schema, path, depth);
    let mut rules = Vec::new();
    for rule in &schema.validations {
        // A rule reporting on a property (`fieldPath: .port`) is shown on that field.
        let target = rule
            .field_path
            .strip_prefix('.')
            .map(|p| p.split(['.', '[']).next().unwrap_or_default());
        let child = match (&mut widget, target) {
            (Widget::Object(children), Some(name)) if !name.is_empty() => {
                children.iter_mut().find(|c| c.name == name)
            }
            _ => None,
        };
        match child {
            Some(child) => child.rules.push(rule.clone()),
            None => rules.push(rule.clone()),
        }
    }
    Field {
        name: name.to_string(),
        path: path.to_string(),
        help: if schema.description.is_empty() {
            schema.title.clone()
        } else {
            schema.description.clone()
        },
        required,
        nullable: schema.nullable,
        default: schema.default.clone(),
        constraints: describe(schema),
        rules,
        alternatives: object_alternatives(schema),
        exclusive: !schema.one_of.is_empty(),
        list_keys: if schema.list_type == "map" {
            schema.list_map_keys.clone()
        } else {
            vec![]
        },
        placeholder: if is_quantity(schema) {
            "e.g. 500m or 2Gi".into()
        } else {
            String::new()
        },
        widget,
    }
}

/// An object's `oneOf`/`anyOf` as a choice, when every alternative names properties
/// the object declares (the structural-schema way to say "set a or b").
fn object_alternatives(schema: &Schema) -> Vec<Alternative> {
    if schema.kind != "object" || schema.properties.is_empty() {
        return vec![];
    }
    let alternatives = if schema.one_of.is_empty() {
        &schema.any_of
    } else {
        &schema.one_of
    };
    let usable = alternatives.iter().all(|alt| {
        !alt.required.is_empty() && alt.required.iter().all(|p| schema.property(p).is_some())
    });
    if !usable {
        return vec![];
    }
    alternatives
        .iter()
        .map(|alt| Alternative {
            label: if alt.title.is_empty() {
                alt.required.join(" + ")
            } else {
                alt.title.clone()
            },
            required: alt.required.clone(),
        })
        .collect()
}

fn widget(schema: &Schema, path: &str, depth: usize) -> Widget {
    if depth > MAX_FORM_DEPTH {
        return Widget::Yaml("Nested too deeply for a form: edit it as YAML.".into());
    }
    if let Some(reason) = yaml_reason(schema) {
        return Widget::Yaml(reason);
    }
    if schema.int_or_string {
        return Widget::IntOrString;
    }
    if !schema.enumeration.is_empty() {
        return Widget::Select(schema.enumeration.clone());
    }
    let alternatives: &[Schema] = if !schema.one_of.is_empty() {
        &schema.one_of
    } else {
        &schema.any_of
    };
    if schema.kind.is_empty() && !alternatives.is_empty() {
        return Widget::Choice(
            alternatives
                .iter()
                .enumerate()
                .map(|(i, alt)| {
                    let mut field = build(alt, "", path, false, depth + 1);
                    field.name = choice_label(alt, &field.widget, i);
                    field
                })
                .collect(),
        );
    }
    match schema.kind.as_str() {
        "string" => match schema.format.as_str() {
            "date-time" => Widget::DateTime,
            "byte" => Widget::Bytes,
            _ => Widget::Text,
        },
        "integer" => Widget::Integer,
        "number" => Widget::Number,
        "boolean" => Widget::Boolean,
        "array" => match &schema.items {
            Some(items) => Widget::List(Box::new(build(
                items,
                "",
                &format!("{path}[*]"),
                false,
                depth + 1,
            ))),
            None => Widget::Yaml(
                "A list whose items the schema does not describe: edit it as YAML.".into(),
            ),
        },
        "object" => {
            if schema.properties.is_empty()
                && let Additional::Schema(values) = &schema.additional
            {
                return Widget::Map(Box::new(build(
                    values,
                    "",
                    &format!("{path}[*]"),
                    false,
                    depth + 1,
                )));
            }
            if schema.properties.is_empty() {
                return Widget::Yaml("An object with free-form keys: edit it as YAML.".into());
            }
            Widget::Object(
                schema
                    .properties
                    .iter()
                    .map(|(n, s)| {
                        build(
                            s,
                            n,
                            &format!("{path}.{n}"),
                            schema.is_required(n),
                            depth + 1,
                        )
                    })
                    .collect(),
            )
        }
        _ => Widget::Yaml("An unknown type: edit it as YAML.".into()),
    }
}

/// What a user picks an alternative by: its title, the properties it requires, or
/// its shape.
fn choice_label(alt: &Schema, widget: &Widget, index: usize) -> String {
    if !alt.title.is_empty() {
        return alt.title.clone();
    }
    if !alt.required.is_empty() {
        return alt.required.join(" + ");
    }
    let shape = match widget {
        Widget::Text | Widget::DateTime | Widget::Bytes => "text",
        Widget::Integer => "whole number",
        Widget::Number => "number",
        Widget::Boolean => "yes/no",
        Widget::Select(_) => "one of a list",
        Widget::IntOrString => "number or text",
        Widget::Object(_) | Widget::Map(_) => "object",
        Widget::List(_) => "list",
        Widget::Choice(_) | Widget::Yaml(_) => "YAML",
    };
    format!("{} ({shape})", index + 1)
}

/// Whether `value` has the JSON shape `widget` edits (to preselect an alternative).
pub fn shape_fits(widget: &Widget, value: &Value) -> bool {
    match widget {
        Widget::Text | Widget::DateTime | Widget::Bytes => value.is_string(),
        Widget::Integer => value.is_i64() || value.is_u64(),
        Widget::Number => value.is_number(),
        Widget::Boolean => value.is_boolean(),
        Widget::Select(options) => options.contains(value),
        Widget::IntOrString => value.is_string() || value.is_i64(),
        Widget::Object(_) | Widget::Map(_) => value.is_object(),
        Widget::List(_) => value.is_array(),
        Widget::Choice(_) | Widget::Yaml(_) => true,
    }
}

/// The value a link's `?spec.x=text` puts into a form: typed as the schema types the
/// field (`true` for a boolean, `3` for an integer), else the text as it is.
pub fn linked_value(form: &Field, key: &str, text: &str) -> Value {
    fn find<'a>(field: &'a Field, path: &str) -> Option<&'a Field> {
        if field.path == path {
            return Some(field);
        }
        match &field.widget {
            Widget::Object(children) => children
                .iter()
                .filter(|c| path.starts_with(&c.path))
                .find_map(|c| find(c, path)),
            _ => None,
        }
    }
    let typed = find(form, key).and_then(|field| match field.widget {
        Widget::Boolean => text.parse::<bool>().ok().map(Value::Bool),
        Widget::Integer => text.parse::<i64>().ok().map(Value::from),
        _ => None,
    });
    typed.unwrap_or_else(|| Value::String(text.to_string()))
}

/// The defaults a new object starts with: an empty `spec` with defaults applied.
pub fn initial_value(form: &Field) -> Value {
    let mut value = Value::Object(Default::default());
    apply_defaults(form, &mut value);
    value
}

/// Fills in defaults the way the API server does: a property missing from an object
/// that exists gets its `default`, then defaults apply inside every value present
/// (items of lists, values of maps). Objects that are absent stay absent.
pub fn apply_defaults(field: &Field, value: &mut Value) {
    match (&field.widget, value) {
        (Widget::Object(children), Value::Object(map)) => {
            for child in children {
                if let Some(default) = &child.default
                    && !map.contains_key(&child.name)
                {
                    map.insert(child.name.clone(), default.clone());
                }
                if let Some(present) = map.get_mut(&child.name) {
                    apply_defaults(child, present);
                }
            }
        }
        (Widget::List(item), Value::Array(items)) => {
            for present in items {
                apply_defaults(item, present);
            }
        }
        (Widget::Map(entry), Value::Object(map)) => {
            for present in map.values_mut() {
                apply_defaults(entry, present);
            }
        }
        _ => {}
    }
}
