//! Checks a value against a schema the way the API server's structural schema
//! validation does, with messages that say what to change. Field paths use the API
//! server's notation (`spec.items[0].name`, `spec.labels[key]`) so that dry-run causes
//! and these errors land on the same form fields. CEL rules need the server: they are
//! checked by dry-run, not here.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::model::{Additional, Schema};

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
    check(schema, value, path, &mut errors, 0);
    errors
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

fn check(schema: &Schema, value: &Value, path: &str, errors: &mut Vec<FieldError>, depth: usize) {
    if depth > super::model::MAX_DEPTH {
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
        Value::String(s) => check_string(schema, s, path, errors),
        Value::Number(_) => check_number(schema, value, path, errors),
        Value::Array(items) => check_array(schema, items, path, errors, depth),
        Value::Object(map) => check_object(schema, map, path, errors, depth),
        _ => {}
    }
    check_alternatives(schema, value, path, errors, depth);
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
        // A pattern this engine cannot compile is left to the API server.
        && let Ok(re) = regex_lite::Regex::new(pattern)
        && !re.is_match(s)
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
    if schema.format == "int32" && (n < f64::from(i32::MIN) || n > f64::from(i32::MAX)) {
        push(errors, path, "Must fit in 32 bits (±2147483647).".into());
    }
}

fn check_array(
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
        for (i, item) in items.iter().enumerate() {
            if items[..i].contains(item) {
                push(
                    errors,
                    &format!("{path}[{i}]"),
                    "Duplicates an earlier item.".into(),
                );
            }
        }
    }
    if let Some(item_schema) = &schema.items {
        for (i, item) in items.iter().enumerate() {
            check(
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
            Some(prop) => check(prop, value, &child_path(path, key), errors, depth + 1),
            None => {
                if let Additional::Schema(values) = &schema.additional {
                    check(values, value, &format!("{path}[{key}]"), errors, depth + 1);
                }
            }
        }
    }
}

fn check_alternatives(
    schema: &Schema,
    value: &Value,
    path: &str,
    errors: &mut Vec<FieldError>,
    depth: usize,
) {
    for alt in &schema.all_of {
        check(alt, value, path, errors, depth + 1);
    }
    let passing = |alts: &[Schema]| {
        alts.iter()
            .filter(|alt| {
                let mut e = Vec::new();
                check(alt, value, path, &mut e, depth + 1);
                e.is_empty()
            })
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

/// RFC 3339 date-time: `YYYY-MM-DDTHH:MM:SS[.frac](Z|±HH:MM)`.
pub fn is_date_time(s: &str) -> bool {
    let b = s.as_bytes();
    let digits =
        |r: std::ops::Range<usize>| b.get(r).is_some_and(|d| d.iter().all(u8::is_ascii_digit));
    if b.len() < 20
        || !digits(0..4)
        || b[4] != b'-'
        || !digits(5..7)
        || b[7] != b'-'
        || !digits(8..10)
    {
        return false;
    }
    if !matches!(b[10], b'T' | b't')
        || !digits(11..13)
        || b[13] != b':'
        || !digits(14..16)
        || b[16] != b':'
        || !digits(17..19)
    {
        return false;
    }
    let mut i = 19;
    if b.get(i) == Some(&b'.') {
        i += 1;
        let start = i;
        while b.get(i).is_some_and(u8::is_ascii_digit) {
            i += 1;
        }
        if i == start {
            return false;
        }
    }
    match b.get(i) {
        Some(b'Z' | b'z') => i + 1 == b.len(),
        Some(b'+' | b'-') => {
            b.len() == i + 6 && digits(i + 1..i + 3) && b[i + 3] == b':' && digits(i + 4..i + 6)
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
