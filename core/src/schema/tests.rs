//! The seed CRDs' rules, real-world-sized schemas, and properties over generated ones.

use proptest::prelude::*;
use serde_json::{Value, json};

use super::form::{Field, Widget, initial_value, linked_value, spec_form};
use super::openapi::Schema;
use super::validate::{is_date_time, validate};

/// The openAPIV3Schema of version `index` of a CRD under `end2end/fixtures`.
fn fixture_schema(file: &str, index: usize) -> Schema {
    let path = format!("{}/../end2end/fixtures/{file}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).expect("fixture file");
    let crd: Value = serde_yaml::from_str(&text).expect("fixture YAML");
    Schema::from_value(&crd["spec"]["versions"][index]["schema"]["openAPIV3Schema"])
}

/// The openAPIV3Schema of a seed CRD's first version.
fn seed_schema(file: &str) -> Schema {
    fixture_schema(&format!("seeds/{file}"), 0)
}

/// Every field of a form, depth first.
fn all_fields(field: &Field) -> Vec<&Field> {
    let mut out = vec![field];
    match &field.widget {
        Widget::Object(children) | Widget::Choice(children) => {
            out.extend(children.iter().flat_map(all_fields))
        }
        Widget::List(item) | Widget::Map(item) => out.extend(all_fields(item)),
        _ => {}
    }
    out
}

#[test]
fn hand_written_large_crd_gives_a_full_form_in_every_version() {
    for version in [0, 1] {
        let schema = fixture_schema("large/databasecluster-crd.yaml", version);
        let form = spec_form(&schema);
        let fields = all_fields(&form);
        assert!(fields.len() > 300, "only {} fields", fields.len());
        let widget = |path: &str| {
            &fields
                .iter()
                .find(|f| f.path == path)
                .unwrap_or_else(|| panic!("{path}"))
                .widget
        };
        assert!(matches!(widget("spec.engine"), Widget::Select(o) if o.len() == 3));
        assert_eq!(widget("spec.storage.size"), &Widget::IntOrString);
        assert!(matches!(
            widget("spec.podTemplate.overrides"),
            Widget::Yaml(_)
        ));
        assert!(matches!(
            widget("spec.users[*].privileges"),
            Widget::List(_)
        ));
        assert!(matches!(widget("spec.parameters"), Widget::Map(_)));
        assert_eq!(widget("spec.tls.caBundle"), &Widget::Bytes);
        assert_eq!(widget("spec.maintenance.pausedUntil"), &Widget::DateTime);
        let nullable = fields
            .iter()
            .find(|f| f.path == "spec.storage.storageClassName")
            .expect("storageClassName");
        assert!(nullable.nullable);
        let target = fields
            .iter()
            .find(|f| f.path == "spec.backup.target")
            .expect("backup target");
        let labels: Vec<_> = target
            .alternatives
            .iter()
            .map(|a| a.label.as_str())
            .collect();
        assert_eq!(labels, ["s3", "gcs", "azure", "pvc"]);
        assert!(target.exclusive);
        assert!(!fields.iter().any(|f| f.path.starts_with("status")));
    }
    let v1 = fixture_schema("large/databasecluster-crd.yaml", 1);
    let v1_form = spec_form(&v1);
    let defaults = initial_value(&v1_form);
    assert_eq!(defaults["instances"], json!(3));
    // As the API server does: a default inside an absent object waits for the object.
    assert_eq!(defaults.get("backup"), None);
    let mut with_backup = json!({"backup": {}});
    super::form::apply_defaults(&v1_form, &mut with_backup);
    assert_eq!(with_backup["backup"]["schedule"], json!("0 3 * * *"));
    let errors = validate(
        &v1,
        &json!({"spec": {"engine": "oracle", "version": "8", "instances": 12,
            "storage": {"size": "10Gi", "accessModes": []},
            "tls": {"dnsNames": ["a", "a"]},
            "bootstrap": {"initdb": {}, "clone": {"fromCluster": "a"}},
            "backup": {"target": {"s3": {"bucket": "Bad_Bucket", "credentialsSecret": "s"}}}}}),
        "",
    );
    let mut got = paths(&errors);
    got.sort();
    assert_eq!(
        got,
        [
            "spec.backup.target.s3.bucket",
            "spec.bootstrap",
            "spec.engine",
            "spec.instances",
            "spec.storage.accessModes",
            "spec.tls.dnsNames[1]",
            "spec.version",
        ]
    );
}

#[test]
fn object_alternatives_hide_the_others_fields() {
    let schema = Schema::from_value(&json!({"type": "object", "properties": {"spec": {
        "type": "object",
        "properties": {"s3": {"type": "string"}, "pvc": {"type": "string"}, "note": {"type": "string"}},
        "oneOf": [{"required": ["s3"]}, {"required": ["pvc"]}]
    }}}));
    let form = spec_form(&schema);
    assert_eq!(form.alternatives.len(), 2);
    assert_eq!(form.chosen_alternative(&json!({"pvc": "x"})), Some(1));
    assert_eq!(form.chosen_alternative(&json!({"note": "x"})), None);
    assert_eq!(form.hidden_by(Some(0)), ["pvc"]);
    assert_eq!(form.hidden_by(None), Vec::<String>::new());
    // Alternatives naming a property the object lacks are no choice the form can show.
    let odd = Schema::from_value(&json!({"type": "object", "properties": {"spec": {
        "type": "object", "properties": {"a": {"type": "string"}},
        "oneOf": [{"required": ["a"]}, {"required": ["zzz"]}]
    }}}));
    assert!(spec_form(&odd).alternatives.is_empty());
}

fn paths(errors: &[super::validate::FieldError]) -> Vec<&str> {
    errors.iter().map(|e| e.path.as_str()).collect()
}

#[test]
fn crdkind_enforces_choice_pattern_and_replicas_bounds() {
    let schema = seed_schema("000-crdkind-crd.yaml");
    let ok = json!({"spec": {"choice": "mysql", "replicas": 3}});
    assert!(validate(&schema, &ok, "").is_empty());
    let bad = json!({"spec": {"choice": "postgres", "replicas": 11}});
    let errors = validate(&schema, &bad, "");
    assert_eq!(paths(&errors), ["spec.choice", "spec.replicas"]);
    assert!(errors[0].message.contains("(mysql|tomcat)"), "{errors:?}");
    assert_eq!(errors[1].message, "Must be at most 10.");
    let zero = validate(&schema, &json!({"spec": {"replicas": 0}}), "");
    assert_eq!(zero[0].message, "Must be at least 1.");
    let spec = spec_form(&schema);
    let Widget::Object(fields) = spec.widget else {
        panic!("object expected")
    };
    assert_eq!(fields[1].constraints, ["1 to 10"]);
}

#[test]
fn at_requires_schedule_with_its_pattern_and_command() {
    let schema = seed_schema("001-at-crd.yaml");
    let errors = validate(&schema, &json!({"spec": {}}), "");
    assert_eq!(paths(&errors), ["spec.command", "spec.schedule"]);
    assert!(errors.iter().all(|e| e.message == "Required."));
    let errors = validate(
        &schema,
        &json!({"spec": {"command": "echo", "schedule": "tomorrow"}}),
        "",
    );
    assert_eq!(paths(&errors), ["spec.schedule"]);
    let ok = json!({"spec": {"command": "echo", "schedule": "2030-01-01T00:00:00Z"}});
    assert!(validate(&schema, &ok, "").is_empty());
    // Status exists in the schema, but the form is the spec's alone.
    assert_eq!(spec_form(&schema).path, "spec");
}

#[test]
fn virtulmachine_requires_cpu_and_memory() {
    let schema = seed_schema("004-virtulmachine-crd.yaml");
    let errors = validate(&schema, &json!({"spec": {"cpu": "1"}}), "");
    assert_eq!(paths(&errors), ["spec.memory"]);
}

#[test]
fn website_spec_is_free_form_yaml() {
    let schema = seed_schema("002-website-crd.yaml");
    assert!(matches!(spec_form(&schema).widget, Widget::Yaml(_)));
    let anything =
        json!({"spec": {"gitRepo": "https://example.com/x.git", "nested": {"a": [1, 2]}}});
    assert!(validate(&schema, &anything, "").is_empty());
}

#[test]
fn keywords_map_to_widgets_and_defaults_prefill() {
    let schema = Schema::from_value(&json!({
        "type": "object",
        "properties": {"spec": {"type": "object", "required": ["mode"], "properties": {
            "mode": {"type": "string", "enum": ["a", "b"], "default": "a"},
            "port": {"x-kubernetes-int-or-string": true},
            "when": {"type": "string", "format": "date-time"},
            "blob": {"type": "string", "format": "byte"},
            "tags": {"type": "array", "items": {"type": "string"}, "uniqueItems": true, "maxItems": 3},
            "env": {"type": "object", "additionalProperties": {"type": "string"}},
            "template": {"type": "object", "x-kubernetes-embedded-resource": true, "x-kubernetes-preserve-unknown-fields": true},
            "limits": {"type": "object", "properties": {"cpu": {"type": "integer", "default": 2}}},
            "target": {"oneOf": [{"required": ["a"]}, {"required": ["b"]}]},
            "ratio": {"type": "number", "minimum": 0, "exclusiveMinimum": true, "maximum": 1}
        }, "x-kubernetes-validations": [{"rule": "self.mode != 'b' || has(self.port)", "message": "b needs a port"}]}}
    }));
    let spec = spec_form(&schema);
    assert_eq!(spec.rules[0].message, "b needs a port");
    let Widget::Object(fields) = &spec.widget else {
        panic!("object")
    };
    let widget = |n: &str| &fields.iter().find(|f| f.name == n).expect(n).widget;
    assert_eq!(
        widget("mode"),
        &Widget::Select(vec![json!("a"), json!("b")])
    );
    assert_eq!(widget("port"), &Widget::IntOrString);
    assert_eq!(widget("when"), &Widget::DateTime);
    assert_eq!(widget("blob"), &Widget::Bytes);
    assert!(matches!(widget("tags"), Widget::List(_)));
    assert!(matches!(widget("env"), Widget::Map(_)));
    assert!(matches!(widget("template"), Widget::Yaml(_)));
    assert!(matches!(widget("limits"), Widget::Object(_)));
    assert!(matches!(widget("target"), Widget::Choice(c) if c.len() == 2));
    let ratio = fields.iter().find(|f| f.name == "ratio").expect("ratio");
    assert_eq!(ratio.constraints, ["> 0", "≤ 1"]);
    assert_eq!(initial_value(&spec_form(&schema)), json!({"mode": "a"}));

    let errors = validate(
        &schema,
        &json!({"spec": {"mode": "c", "port": 1.5, "when": "soon", "blob": "@@", "tags": ["x", "x", "y", "z"],
                         "env": {"A": 1}, "target": {"a": 1, "b": 2}, "ratio": 0}}),
        "",
    );
    assert_eq!(
        paths(&errors),
        [
            "spec.blob",
            "spec.env[A]",
            "spec.mode",
            "spec.port",
            "spec.ratio",
            "spec.tags",
            "spec.tags[1]",
            "spec.target",
            "spec.when"
        ]
    );
}

#[test]
fn date_times_follow_rfc3339() {
    for ok in [
        "2025-01-31T12:00:00Z",
        "2025-01-31T12:00:00.123+02:00",
        "2025-01-31t12:00:00z",
    ] {
        assert!(is_date_time(ok), "{ok}");
    }
    for bad in [
        "2025-01-31",
        "2025-01-31T12:00:00",
        "2025-01-31T12:00:00.Z",
        "x025-01-31T12:00:00Z",
        "",
    ] {
        assert!(!is_date_time(bad), "{bad}");
    }
}

/// A real-world-sized CRD: hundreds of fields, deep nesting.
fn big_schema(breadth: usize, depth: usize) -> Value {
    if depth == 0 {
        return json!({"type": "string", "maxLength": 10, "pattern": "^[a-z]+$"});
    }
    let props: serde_json::Map<String, Value> = (0..breadth)
        .map(|i| (format!("f{i}"), big_schema(breadth, depth - 1)))
        .collect();
    json!({"type": "object", "properties": props, "required": ["f0"]})
}

#[test]
fn large_schemas_build_and_validate() {
    let schema =
        Schema::from_value(&json!({"type": "object", "properties": {"spec": big_schema(6, 4)}}));
    let spec = spec_form(&schema);
    fn count(f: &super::form::Field) -> usize {
        match &f.widget {
            Widget::Object(fields) => 1 + fields.iter().map(count).sum::<usize>(),
            _ => 1,
        }
    }
    assert!(count(&spec) > 1000, "{}", count(&spec));
    let errors = validate(
        &schema,
        &json!({"spec": {"f1": {"f0": {"f0": {"f0": "UPPER"}}}}}),
        "",
    );
    assert!(paths(&errors).contains(&"spec.f0"));
    assert!(paths(&errors).contains(&"spec.f1.f0.f0.f0"));
}

fn arb_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        any::<f64>().prop_map(|n| json!(n)),
        prop_oneof![
            Just("type"),
            Just("object"),
            Just("string"),
            Just("integer"),
            Just("array"),
            Just("number"),
            Just("properties"),
            Just("items"),
            Just("enum"),
            Just("pattern"),
            Just("(a|b"),
            Just("^x$"),
            Just("date-time"),
            Just("byte"),
            Just("int32"),
            Just("")
        ]
        .prop_map(|s| Value::String(s.to_string())),
    ];
    leaf.prop_recursive(6, 64, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
            prop::collection::vec(
                (
                    prop_oneof![
                        Just("type"),
                        Just("properties"),
                        Just("items"),
                        Just("required"),
                        Just("enum"),
                        Just("pattern"),
                        Just("minimum"),
                        Just("maximum"),
                        Just("additionalProperties"),
                        Just("oneOf"),
                        Just("anyOf"),
                        Just("allOf"),
                        Just("not"),
                        Just("x-kubernetes-list-type"),
                        Just("x-kubernetes-list-map-keys"),
                        Just("x-kubernetes-validations"),
                        Just("format"),
                        Just("default"),
                        Just("x-kubernetes-int-or-string"),
                        Just("x-kubernetes-preserve-unknown-fields"),
                        Just("minItems"),
                        Just("uniqueItems"),
                        Just("spec"),
                        Just("a")
                    ],
                    inner
                ),
                0..6
            )
            .prop_map(|kv| Value::Object(
                kv.into_iter().map(|(k, v)| (k.to_string(), v)).collect()
            )),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// Any schema gives a form, and checking any value against it terminates
    /// without panicking.
    #[test]
    fn any_schema_yields_a_form_and_validation_never_panics(schema in arb_json(), value in arb_json()) {
        let root = json!({"type": "object", "properties": {"spec": schema}});
        let parsed = Schema::from_value(&root);
        let _ = spec_form(&parsed);
        let _ = initial_value(&spec_form(&parsed));
        let _ = validate(&parsed, &json!({"spec": value}), "");
    }

    /// A value is accepted exactly when it is within an integer field's bounds.
    #[test]
    fn integer_bounds_are_exact(lo in -1000i64..1000, span in 0i64..1000, v in -3000i64..3000) {
        let hi = lo + span;
        let schema = Schema::from_value(&json!({"type": "integer", "minimum": lo, "maximum": hi}));
        let errors = validate(&schema, &json!(v), "x");
        prop_assert_eq!(errors.is_empty(), (lo..=hi).contains(&v));
    }
}

/// One schema node of a generated schema: `keywords` (bits) choose which keywords it
/// carries; `child` is nested under properties, items, map values and alternatives.
fn node(keywords: u32, child: Option<Value>, width: usize) -> Value {
    let mut s = serde_json::Map::new();
    let bit = |n: u32| keywords & (1 << n) != 0;
    let kind = ["object", "array", "string", "integer"][(keywords & 3) as usize];
    s.insert("type".into(), json!(kind));
    if let Some(child) = child {
        let mut props = serde_json::Map::new();
        props.insert("next".into(), child.clone());
        for i in 0..width {
            props.insert(
                format!("p{i}"),
                json!({"type": "string", "pattern": format!("^[a-z]{{0,{i}}}$")}),
            );
        }
        s.insert("type".into(), json!("object"));
        s.insert("properties".into(), Value::Object(props));
        if bit(2) {
            s.insert("required".into(), json!(["next"]));
        }
        if bit(3) {
            s.insert("anyOf".into(), json!([{"required": ["next"]}, {"required": ["p0"]}, {"not": {"required": ["p1"]}}]));
        }
        if bit(4) {
            s.insert("oneOf".into(), json!([{"required": ["next"]}, {"anyOf": [{"required": ["p0"]}, {"required": ["p1"]}]}]));
        }
        if bit(5) {
            s.insert("allOf".into(), json!([{"required": ["next"]}]));
        }
        if bit(6) {
            s.insert("additionalProperties".into(), child);
            s.remove("properties");
        }
        if bit(7) {
            s.insert("x-kubernetes-validations".into(), json!([{"rule": "has(self.next)", "fieldPath": ".next", "messageExpression": "'no'"}]));
        }
    }
    if bit(8) {
        s.insert("x-kubernetes-int-or-string".into(), json!(true));
        s.insert(
            "pattern".into(),
            json!("^(\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))(([KMGTPE]i)|[numkMGTPE])?$"),
        );
    }
    if bit(9) {
        s.insert("enum".into(), json!(["a", 1, null]));
    }
    if bit(10) {
        s.insert("x-kubernetes-preserve-unknown-fields".into(), json!(true));
    }
    if bit(11) {
        s.insert("nullable".into(), json!(true));
        s.insert("default".into(), json!({"next": {}}));
    }
    if bit(12) {
        s.insert(
            "format".into(),
            json!(["int32", "int64", "date-time", "byte"][(keywords >> 13) as usize % 4]),
        );
    }
    Value::Object(s)
}

/// A schema `depth` levels deep, each level `width` properties wide beside the next
/// level, with the keywords of each level drawn from `levels`.
fn generated_schema(depth: usize, width: usize, levels: &[u32]) -> Value {
    let mut schema = node(levels[0], None, 0);
    for i in 1..depth {
        let level = node(levels[i % levels.len()], Some(schema), width);
        schema = if levels[i % levels.len()] & (1 << 14) != 0 {
            json!({"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["p0"], "items": level})
        } else {
            level
        };
    }
    json!({"type": "object", "properties": {"spec": schema}})
}

/// A value shaped like `generated_schema`'s: `next` nested `depth` times, lists of one.
fn generated_value(depth: usize) -> Value {
    let mut value = json!("x");
    for i in 0..depth {
        value = if i % 3 == 2 {
            json!([{"next": value, "p0": "a"}, {"next": null, "p0": "a"}])
        } else {
            json!({"next": value, "p0": "abc", "p1": 5})
        };
    }
    json!({"spec": value})
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// Schemas up to 64 deep and 5,000 nodes, narrow and wide, every keyword: the
    /// form builds, every codec and validation terminates (without panicking or
    /// overflowing the stack). How long they take is not asserted: a budget in a test
    /// fails on a busy machine for no reason of the code's.
    #[test]
    fn generated_schemas_up_to_depth_64_and_5000_nodes_build_and_terminate(
        depth in 1usize..=64,
        width in 0usize..=80,
        levels in prop::collection::vec(any::<u32>(), 1..8),
    ) {
        let width = width.min(5000 / depth.max(1));
        let root = generated_schema(depth, width, &levels);
        let schema = Schema::from_value(&root);
        let form = spec_form(&schema);
        let _ = initial_value(&form);
        let value = generated_value(depth);
        let _ = validate(&schema, &value, "");
        let _ = super::text::retyped(&form, &value["spec"]);
        let mut draft = super::draft::Draft::edit(value.clone(), true);
        let _ = draft.apply_yaml(&draft.to_yaml());
    }
}

#[test]
fn a_links_values_take_the_fields_types() {
    let schema = Schema::from_value(&json!({"type": "object", "properties": {"spec": {
        "type": "object",
        "properties": {"reattach": {"type": "boolean"}, "replicas": {"type": "integer"},
            "name": {"type": "string"}, "inner": {"type": "object", "properties": {"on": {"type": "boolean"}}}}
    }}}));
    let form = spec_form(&schema);
    assert_eq!(linked_value(&form, "spec.reattach", "true"), json!(true));
    assert_eq!(linked_value(&form, "spec.inner.on", "false"), json!(false));
    assert_eq!(linked_value(&form, "spec.replicas", "3"), json!(3));
    // A text field keeps the text, and a value that is not of the type stays text (the
    // form then shows the field's error).
    assert_eq!(linked_value(&form, "spec.name", "true"), json!("true"));
    assert_eq!(linked_value(&form, "spec.reattach", "yes"), json!("yes"));
    assert_eq!(linked_value(&form, "spec.unknown", "1"), json!("1"));
}
