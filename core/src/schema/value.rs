//! Reading and writing inside a JSON value by path, for form fields bound to one
//! object. Total: writing through a mismatched shape replaces it.

use serde_json::{Map, Value};

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Seg {
    Key(String),
    Index(usize),
}

/// The API server's notation: `spec.items[0].name`; map keys as `spec.labels[key]`.
pub fn path_string(segs: &[Seg], map_keys: &[bool]) -> String {
    let mut out = String::new();
    for (i, seg) in segs.iter().enumerate() {
        match seg {
            Seg::Key(k) if map_keys.get(i).copied().unwrap_or(false) => {
                out.push_str(&format!("[{k}]"))
            }
            Seg::Key(k) => {
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(k);
            }
            Seg::Index(n) => out.push_str(&format!("[{n}]")),
        }
    }
    out
}

pub fn get<'a>(root: &'a Value, segs: &[Seg]) -> Option<&'a Value> {
    segs.iter().try_fold(root, |v, seg| match seg {
        Seg::Key(k) => v.get(k.as_str()),
        Seg::Index(i) => v.get(*i),
    })
}

/// Sets (or with `None`, removes) the value at `segs`, creating objects and arrays
/// on the way.
pub fn set(root: &mut Value, segs: &[Seg], new: Option<Value>) {
    let Some((last, parents)) = segs.split_last() else {
        if let Some(v) = new {
            *root = v;
        }
        return;
    };
    let mut node = root;
    for seg in parents {
        node = match seg {
            Seg::Key(k) => {
                if !node.is_object() {
                    *node = Value::Object(Map::new());
                }
                let Value::Object(map) = node else { return };
                map.entry(k.clone()).or_insert(Value::Null)
            }
            Seg::Index(i) => {
                if !node.is_array() {
                    *node = Value::Array(Vec::new());
                }
                let Value::Array(items) = node else { return };
                if items.len() <= *i {
                    items.resize(*i + 1, Value::Null);
                }
                let Some(item) = items.get_mut(*i) else {
                    return;
                };
                item
            }
        };
    }
    match (last, new) {
        (Seg::Key(k), Some(v)) => {
            if !node.is_object() {
                *node = Value::Object(Map::new());
            }
            if let Value::Object(map) = node {
                map.insert(k.clone(), v);
            }
        }
        (Seg::Key(k), None) => {
            if let Value::Object(map) = node {
                map.remove(k);
            }
        }
        (Seg::Index(i), Some(v)) => {
            if !node.is_array() {
                *node = Value::Array(Vec::new());
            }
            if let Value::Array(items) = node {
                if items.len() <= *i {
                    items.resize(*i + 1, Value::Null);
                }
                if let Some(item) = items.get_mut(*i) {
                    *item = v;
                }
            }
        }
        (Seg::Index(i), None) => {
            if let Value::Array(items) = node
                && *i < items.len()
            {
                items.remove(*i);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn k(s: &str) -> Seg {
        Seg::Key(s.into())
    }

    #[test]
    fn set_creates_removes_and_replaces() {
        let mut v = json!({});
        set(
            &mut v,
            &[k("spec"), k("tags"), Seg::Index(1)],
            Some(json!("b")),
        );
        assert_eq!(v, json!({"spec": {"tags": [null, "b"]}}));
        set(&mut v, &[k("spec"), k("tags"), Seg::Index(0)], None);
        assert_eq!(v, json!({"spec": {"tags": ["b"]}}));
        set(&mut v, &[k("spec"), k("tags"), k("x")], Some(json!(1)));
        assert_eq!(v, json!({"spec": {"tags": {"x": 1}}}));
        assert_eq!(get(&v, &[k("spec"), k("tags"), k("x")]), Some(&json!(1)));
        set(&mut v, &[k("spec")], None);
        assert_eq!(v, json!({}));
    }

    #[test]
    fn paths_use_the_api_servers_notation() {
        let segs = [k("spec"), k("items"), Seg::Index(0), k("name")];
        assert_eq!(path_string(&segs, &[]), "spec.items[0].name");
        let segs = [k("spec"), k("env"), k("A")];
        assert_eq!(path_string(&segs, &[false, false, true]), "spec.env[A]");
    }
}
