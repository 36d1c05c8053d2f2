//! Form fields generated from the schema's form model, bound to one JSON object.
//! The page provides a [`FormModel`]; every field and widget takes it from context
//! and knows its place by one [`FieldPath`](portico_core::schema::field_path::FieldPath).
//! Optional sections start closed and are only rendered once opened: a 300-field
//! schema is a page of headings, not a wall, and nesting costs nothing until shown.

mod collection;
mod field;
mod model;
mod object;
mod scalar;
mod search;
mod yaml;

pub use field::{FieldView, Messages};
pub use model::{FormModel, use_form};
pub use search::FieldSearch;
