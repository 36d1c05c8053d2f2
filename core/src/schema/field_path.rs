//! Where a form field is, said once: the steps into the object (to read and write it)
//! and the API server's notation for them (to match its messages and the browser's).

use super::validate::child_path;
use super::value::Seg;

/// A field's place in the object: `segs` and the text `spec.items[0].name`, always
/// made together so they cannot disagree.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct FieldPath {
    segs: Vec<Seg>,
    text: String,
}

impl FieldPath {
    /// A top-level field such as `spec`.
    pub fn top(name: &str) -> Self {
        Self {
            segs: vec![Seg::Key(name.to_string())],
            text: name.to_string(),
        }
    }

    /// The steps into the object.
    pub fn segs(&self) -> &[Seg] {
        &self.segs
    }

    /// The API server's notation: `spec.items[0].name`, map entries `spec.labels[key]`.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// A property of the object here.
    pub fn property(&self, name: &str) -> Self {
        self.step(Seg::Key(name.to_string()), child_path(&self.text, name))
    }

    /// An item of the list here.
    pub fn item(&self, index: usize) -> Self {
        self.step(Seg::Index(index), format!("{}[{index}]", self.text))
    }

    /// An entry of the map here.
    pub fn entry(&self, key: &str) -> Self {
        self.step(Seg::Key(key.to_string()), format!("{}[{key}]", self.text))
    }

    /// An id for the field's input, unique within the form.
    pub fn input_id(&self) -> String {
        format!("f-{}", self.text.replace(['.', '[', ']'], "-"))
    }

    fn step(&self, seg: Seg, text: String) -> Self {
        let mut segs = Vec::with_capacity(self.segs.len() + 1);
        segs.extend_from_slice(&self.segs);
        segs.push(seg);
        Self { segs, text }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::value::path_string;

    #[test]
    fn steps_and_text_agree_with_the_api_servers_notation() {
        let path = FieldPath::top("spec")
            .property("items")
            .item(3)
            .property("labels")
            .entry("app.kubernetes.io/name");
        assert_eq!(path.text(), "spec.items[3].labels[app.kubernetes.io/name]");
        assert_eq!(
            path.text(),
            path_string(path.segs(), &[false, false, false, false, true])
        );
        assert_eq!(FieldPath::top("spec").property("a").input_id(), "f-spec-a");
    }
}
