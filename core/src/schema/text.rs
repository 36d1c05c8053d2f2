//! What a form field shows for a value and what it makes of what is typed: one codec
//! per widget, so that showing a value and typing it back changes nothing.

use serde_json::Value;

use super::form::{Field, Widget};

/// The text an input shows for `value`.
pub fn shown(value: Option<&Value>) -> String {
    match value {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
    }
}

/// Parses what was typed into a number field; keeps unparsable text as a string.
pub fn typed_number(text: &str, integer: bool) -> Option<Value> {
    let t = text.trim();
    if t.is_empty() {
        return None;
    }
    let parsed = if integer {
        t.parse::<i64>().ok().map(Value::from)
    } else {
        t.parse::<f64>()
            .ok()
            .and_then(|f| serde_json::Number::from_f64(f).map(Value::Number))
    };
    Some(parsed.unwrap_or_else(|| Value::String(t.to_string())))
}

/// An int-or-string field: a whole number becomes a number, unless the field held
/// text before (`"1"` stays text: for a quantity both mean the same, and an edit
/// should not change the type).
pub fn typed_int_or_string(text: &str, previous: Option<&Value>) -> Option<Value> {
    if text.is_empty() {
        return None;
    }
    let was_text = matches!(previous, Some(Value::String(_)));
    match text.trim().parse::<i64>() {
        Ok(n) if !was_text => Some(Value::from(n)),
        _ => Some(Value::String(text.to_string())),
    }
}

/// `value` shown in `field`'s widgets and typed back in, everywhere the form has a
/// widget for it (what loading an object into the form and saving it does).
pub fn retyped(field: &Field, value: &Value) -> Value {
    retype(field, value, 0)
}

fn retype(field: &Field, value: &Value, depth: usize) -> Value {
    if depth > super::openapi::MAX_DEPTH {
        return value.clone();
    }
    let text = || shown(Some(value));
    let retyped = match (&field.widget, value) {
        (_, Value::Null) => Some(Value::Null),
        (Widget::Text | Widget::DateTime | Widget::Bytes, Value::String(_)) => {
            Some(Value::String(text()))
        }
        (Widget::Integer, _) => typed_number(&text(), true),
        (Widget::Number, Value::Number(_)) => match typed_number(&text(), false) {
            // 1 and 1.0 are the same number to the API server: keep what was there.
            Some(n) if n.as_f64() == value.as_f64() => Some(value.clone()),
            other => other,
        },
        (Widget::IntOrString, _) => typed_int_or_string(&text(), Some(value)),
        (Widget::Select(_), _) => serde_json::from_str(&value.to_string()).ok(),
        (Widget::Yaml(_), _) => serde_yaml::to_string(value)
            .ok()
            .and_then(|y| serde_yaml::from_str(&y).ok()),
        (Widget::Object(children), Value::Object(map)) => Some(Value::Object(
            map.iter()
                .map(|(k, v)| {
                    let v = match children.iter().find(|c| &c.name == k) {
                        Some(child) => retype(child, v, depth + 1),
                        None => v.clone(),
                    };
                    (k.clone(), v)
                })
                .collect(),
        )),
        (Widget::List(item), Value::Array(items)) => Some(Value::Array(
            items.iter().map(|v| retype(item, v, depth + 1)).collect(),
        )),
        (Widget::Map(entry), Value::Object(map)) => Some(Value::Object(
            map.iter()
                .map(|(k, v)| (k.clone(), retype(entry, v, depth + 1)))
                .collect(),
        )),
        _ => Some(value.clone()),
    };
    retyped.unwrap_or(Value::Null)
}

/// Where a field's documentation's first sentence ends: at a full stop and a space that
/// are not an abbreviation's ("e.g. 1Gi", "i.e. the pod"), nor followed by a lowercase
/// word; or at the first line break; else the whole text.
pub fn first_sentence_end(help: &str) -> usize {
    const ABBREVIATIONS: &[&str] = &["e.g", "i.e", "vs", "cf"];
    let line = help.find('\n').unwrap_or(help.len());
    let mut from = 0;
    while let Some(at) = help[from..line].find(". ").map(|i| from + i) {
        let word = help[..at]
            .rsplit(|c: char| c.is_whitespace() || c == '(')
            .next()
            .unwrap_or_default()
            .to_ascii_lowercase();
        let next = help[at + 2..].chars().next();
        let abbreviation = ABBREVIATIONS.contains(&word.as_str());
        if !abbreviation && !next.is_some_and(char::is_lowercase) {
            return at + 1;
        }
        from = at + 2;
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_first_sentence_ends_at_a_full_stop_not_at_an_abbreviation() {
        let help = "Size of each volume (mysql only), e.g. 1Gi. More here.";
        assert_eq!(
            &help[..first_sentence_end(help)],
            "Size of each volume (mysql only), e.g. 1Gi."
        );
        let lower = "Keeps it, i.e. the data. Then more.";
        assert_eq!(
            &lower[..first_sentence_end(lower)],
            "Keeps it, i.e. the data."
        );
        let lines = "One line\nanother. Yes.";
        assert_eq!(&lines[..first_sentence_end(lines)], "One line");
        assert_eq!(first_sentence_end("No stop at all"), 14);
        assert_eq!(first_sentence_end("Ends here."), 10);
    }
    use serde_json::json;

    #[test]
    fn typed_numbers_keep_what_cannot_be_parsed() {
        assert_eq!(typed_number("", true), None);
        assert_eq!(typed_number(" 12 ", true), Some(Value::from(12)));
        assert_eq!(typed_number("12a", true), Some(Value::String("12a".into())));
        assert_eq!(typed_number("1.5", true), Some(Value::String("1.5".into())));
        assert_eq!(typed_number("1.5", false), Some(json!(1.5)));
    }

    #[test]
    fn int_or_string_keeps_the_type_it_had() {
        assert_eq!(typed_int_or_string("80", None), Some(json!(80)));
        assert_eq!(typed_int_or_string("80", Some(&json!(8))), Some(json!(80)));
        assert_eq!(
            typed_int_or_string("1", Some(&json!("2"))),
            Some(json!("1"))
        );
        assert_eq!(typed_int_or_string("25%", None), Some(json!("25%")));
        assert_eq!(typed_int_or_string("", None), None);
    }
}
