//! Checks a value against a schema the way the API server's structural schema
//! validation does, with messages that say what to change. Field paths use the API
//! server's notation (`spec.items[0].name`, `spec.labels[key]`) so that dry-run causes
//! and these errors land on the same form fields. CEL rules need the server: they are
//! checked by dry-run, not here.

use std::cell::RefCell;
use std::collections::{HashMap, HashSet};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::openapi::{Additional, Schema};

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FieldError {
    pub path: String,
    pub message: String,
}

/// The path of `key` inside the object at `path`.
pub fn child_path(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

fn show(value: &Value) -> String {
    match value {
        Value::String(s) => format!("\"{s}\""),
        other => other.to_string(),
    }
}

/// Every problem with `value` under `schema`, at `path`.
pub fn validate(schema: &Schema, value: &Value, path: &str) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let mut run = Run::default();
    run.check(schema, value, path, &mut errors, 0);
    errors
}

/// One validation: whether a (schema node, value node) pair passes is worked out once,
/// so `anyOf`/`oneOf` nested in alternatives cost a product, not a power.
#[derive(Default)]
struct Run {
    passes: HashMap<(usize, usize), bool>,
}

thread_local! {
    /// Compiled patterns, by source: compiled once, not on every keystroke. A pattern
    /// this engine cannot compile (lookarounds, say) is `None`: the API server checks it.
    static PATTERNS: RefCell<HashMap<String, Option<regex_lite::Regex>>> = RefCell::new(HashMap::new());
}

/// Patterns kept at most; a page holds a handful of schemas, so this only bounds
/// hostile input.
const MAX_PATTERNS: usize = 4096;

pub(crate) fn pattern_matches(pattern: &str, text: &str) -> Option<bool> {
    PATTERNS.with(|cache| {
        let mut cache = cache.borrow_mut();
        if !cache.contains_key(pattern) {
            if cache.len() >= MAX_PATTERNS {
                cache.clear();
            }
            cache.insert(pattern.to_string(), regex_lite::Regex::new(pattern).ok());
        }
        cache
            .get(pattern)
            .and_then(Option::as_ref)
            .map(|re| re.is_match(text))
    })
}

fn push(errors: &mut Vec<FieldError>, path: &str, message: String) {
    errors.push(FieldError {
        path: path.to_string(),
        message,
    });
}

fn type_ok(schema: &Schema, value: &Value) -> Result<(), String> {
    if schema.int_or_string {
        return match value {
            Value::String(_) => Ok(()),
            Value::Number(n) if n.is_i64() || n.is_u64() => Ok(()),
            _ => Err("Must be a whole number or a string (for example 80 or \"http\").".into()),
        };
    }
    let ok = match schema.kind.as_str() {
        "string" => value.is_string(),
        "integer" => value.is_i64() || value.is_u64(),
        "number" => value.is_number(),
        "boolean" => value.is_boolean(),
        "object" => value.is_object(),
        "array" => value.is_array(),
        _ => true,
    };
    if ok {
        return Ok(());
    }
    Err(match schema.kind.as_str() {
        "string" => "Must be text.".into(),
        "integer" => "Must be a whole number.".into(),
        "number" => "Must be a number.".into(),
        "boolean" => "Must be true or false.".into(),
        "object" => "Must be an object (key: value pairs).".into(),
        _ => "Must be a list.".into(),
    })
}

impl Run {
    fn check(
        &mut self,
        schema: &Schema,
        value: &Value,
        path: &str,
        errors: &mut Vec<FieldError>,
        depth: usize,
    ) {
        if depth > super::openapi::MAX_DEPTH {
            return;
        }
        if value.is_null() {
            if !schema.nullable && !schema.kind.is_empty() {
                push(
                    errors,
                    path,
                    "Give this field a value, or remove it.".into(),
                );
            }
            return;
        }
        if let Err(message) = type_ok(schema, value) {
            push(errors, path, message);
            return;
        }
        if !schema.enumeration.is_empty() && !schema.enumeration.contains(value) {
            let allowed: Vec<String> = schema.enumeration.iter().map(show).collect();
            push(
                errors,
                path,
                format!(
                    "Must be one of {}; got {}.",
                    allowed.join(", "),
                    show(value)
                ),
            );
        }
        match value {
            Value::String(s) => Self::check_string(schema, s, path, errors),
            Value::Number(_) => Self::check_number(schema, value, path, errors),
            Value::Array(items) => self.check_array(schema, items, path, errors, depth),
            Value::Object(map) => self.check_object(schema, map, path, errors, depth),
            _ => {}
        }
        self.check_alternatives(schema, value, path, errors, depth);
    }

    fn check_string(schema: &Schema, s: &str, path: &str, errors: &mut Vec<FieldError>) {
        let len = s.chars().count() as u64;
        if let Some(min) = schema.min_length
            && len < min
        {
            push(
                errors,
                path,
                format!("Must be at least {min} characters long."),
            );
        }
        if let Some(max) = schema.max_length
            && len > max
        {
            push(
                errors,
                path,
                format!("Must be at most {max} characters long; it has {len}."),
            );
        }
        if let Some(pattern) = &schema.pattern
            && pattern_matches(pattern, s) == Some(false)
        {
            push(
                errors,
                path,
                format!("Must match the pattern {pattern}; got \"{s}\"."),
            );
        }
        match schema.format.as_str() {
            "date-time" if !is_date_time(s) => push(
                errors,
                path,
                "Must be a date and time like 2025-01-31T12:00:00Z.".into(),
            ),
            "byte" if !is_base64(s) => push(errors, path, "Must be base64-encoded.".into()),
            _ => {}
        }
    }

    fn check_number(schema: &Schema, value: &Value, path: &str, errors: &mut Vec<FieldError>) {
        let Some(n) = value.as_f64() else { return };
        if let Some(min) = schema.minimum {
            if schema.exclusive_minimum && n <= min {
                push(errors, path, format!("Must be greater than {min}."));
            } else if n < min {
                push(errors, path, format!("Must be at least {min}."));
            }
        }
        if let Some(max) = schema.maximum {
            if schema.exclusive_maximum && n >= max {
                push(errors, path, format!("Must be less than {max}."));
            } else if n > max {
                push(errors, path, format!("Must be at most {max}."));
            }
        }
        let fits = match schema.format.as_str() {
            "int32" => value.as_i64().is_some_and(|n| i32::try_from(n).is_ok()),
            "int64" => value.is_i64(),
            _ => true,
        };
        if !fits {
            let (lo, hi) = if schema.format == "int32" {
                (i64::from(i32::MIN), i64::from(i32::MAX))
            } else {
                (i64::MIN, i64::MAX)
            };
            push(errors, path, format!("Must be between {lo} and {hi}."));
        }
    }

    fn check_array(
        &mut self,
        schema: &Schema,
        items: &[Value],
        path: &str,
        errors: &mut Vec<FieldError>,
        depth: usize,
    ) {
        let n = items.len() as u64;
        if let Some(min) = schema.min_items
            && n < min
        {
            push(errors, path, format!("Needs at least {min} items."));
        }
        if let Some(max) = schema.max_items
            && n > max
        {
            push(
                errors,
                path,
                format!("Allows at most {max} items; remove {}.", n - max),
            );
        }
        if schema.unique_items {
            for (i, _) in repeats(items, Value::to_string) {
                push(
                    errors,
                    &format!("{path}[{i}]"),
                    "Duplicates an earlier item.".into(),
                );
            }
        }
        if schema.list_type == "map" && !schema.list_map_keys.is_empty() {
            for (i, key) in repeats(items, |item| list_map_key(&schema.list_map_keys, item)) {
                push(
                    errors,
                    &format!("{path}[{i}]"),
                    format!("Another item already has {key}; each must be different."),
                );
            }
        }
        if let Some(item_schema) = &schema.items {
            for (i, item) in items.iter().enumerate() {
                self.check(
                    item_schema,
                    item,
                    &format!("{path}[{i}]"),
                    errors,
                    depth + 1,
                );
            }
        }
    }

    fn check_object(
        &mut self,
        schema: &Schema,
        map: &serde_json::Map<String, Value>,
        path: &str,
        errors: &mut Vec<FieldError>,
        depth: usize,
    ) {
        for name in &schema.required {
            if !map.contains_key(name) {
                push(errors, &child_path(path, name), "Required.".into());
            }
        }
        let n = map.len() as u64;
        if let Some(min) = schema.min_properties
            && n < min
        {
            push(errors, path, format!("Needs at least {min} entries."));
        }
        if let Some(max) = schema.max_properties
            && n > max
        {
            push(errors, path, format!("Allows at most {max} entries."));
        }
        for (key, value) in map {
            match schema.property(key) {
                Some(prop) => self.check(prop, value, &child_path(path, key), errors, depth + 1),
                None => {
                    if let Additional::Schema(values) = &schema.additional {
                        self.check(values, value, &format!("{path}[{key}]"), errors, depth + 1);
                    }
                }
            }
        }
    }

    fn check_alternatives(
        &mut self,
        schema: &Schema,
        value: &Value,
        path: &str,
        errors: &mut Vec<FieldError>,
        depth: usize,
    ) {
        for alt in &schema.all_of {
            self.check(alt, value, path, errors, depth + 1);
        }
        if let Some(not) = &schema.not
            && self.passes(not, value, path, depth + 1)
        {
            push(
                errors,
                path,
                "Is one of the forms this field must not take.".into(),
            );
        }
        let mut passing = |alts: &[Schema]| {
            alts.iter()
                .filter(|alt| self.passes(alt, value, path, depth + 1))
                .count()
        };
        if !schema.any_of.is_empty() && passing(&schema.any_of) == 0 {
            push(
                errors,
                path,
                "Must match at least one of the allowed forms.".into(),
            );
        }
        if !schema.one_of.is_empty() && passing(&schema.one_of) != 1 {
            push(
                errors,
                path,
                "Must match exactly one of the allowed forms.".into(),
            );
        }
    }

    /// Whether `value` passes `alt`, worked out once per pair.
    fn passes(&mut self, alt: &Schema, value: &Value, path: &str, depth: usize) -> bool {
        let key = (
            std::ptr::from_ref(alt) as usize,
            std::ptr::from_ref(value) as usize,
        );
        if let Some(known) = self.passes.get(&key) {
            return *known;
        }
        let mut found = Vec::new();
        self.check(alt, value, path, &mut found, depth);
        let ok = found.is_empty();
        self.passes.insert(key, ok);
        ok
    }
}

/// The items whose `key` an earlier item already had, with that key.
fn repeats(items: &[Value], key: impl Fn(&Value) -> String) -> Vec<(usize, String)> {
    let mut seen = HashSet::new();
    items
        .iter()
        .enumerate()
        .filter_map(|(i, item)| {
            let k = key(item);
            (!seen.insert(k.clone())).then_some((i, k))
        })
        .collect()
}

/// An item's identity in a `map` list, as `name="a", port=80`.
fn list_map_key(keys: &[String], item: &Value) -> String {
    keys.iter()
        .map(|k| {
            format!(
                "{k}={}",
                item.get(k).map(show).unwrap_or_else(|| "—".into())
            )
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// RFC 3339 date-time: `YYYY-MM-DDTHH:MM:SS[.frac](Z|±HH:MM)`.
pub fn is_date_time(s: &str) -> bool {
    let b = s.as_bytes();
    let at = |k: usize| b.get(k).copied();
    let digits =
        |r: std::ops::Range<usize>| b.get(r).is_some_and(|d| d.iter().all(u8::is_ascii_digit));
    if b.len() < 20
        || !digits(0..4)
        || at(4) != Some(b'-')
        || !digits(5..7)
        || at(7) != Some(b'-')
        || !digits(8..10)
    {
        return false;
    }
    if !matches!(at(10), Some(b'T' | b't'))
        || !digits(11..13)
        || at(13) != Some(b':')
        || !digits(14..16)
        || at(16) != Some(b':')
        || !digits(17..19)
    {
        return false;
    }
    let mut i = 19;
    if at(i) == Some(b'.') {
        i += 1;
        let start = i;
        while at(i).is_some_and(|c| c.is_ascii_digit()) {
            i += 1;
        }
        if i == start {
            return false;
        }
    }
    match at(i) {
        Some(b'Z' | b'z') => i + 1 == b.len(),
        Some(b'+' | b'-') => {
            b.len() == i + 6
                && digits(i + 1..i + 3)
                && at(i + 3) == Some(b':')
                && digits(i + 4..i + 6)
        }
        _ => false,
    }
}

fn is_base64(s: &str) -> bool {
    let trimmed = s.trim_end_matches('=');
    s.len().is_multiple_of(4)
        && s.len() - trimmed.len() <= 2
        && trimmed
            .bytes()
            .all(|c| c.is_ascii_alphanumeric() || c == b'+' || c == b'/')
}
