//! The parts of pages that are about Stacks and read from the server themselves: how to
//! connect (with the password on request), a change of version or plan previewed before
//! it is applied, the volumes deleted Stacks kept, and the plan and version picker
//! beside the Stack form.

pub mod bind;
pub mod change;
pub mod connection;
pub mod deletion;
pub mod kept;
pub mod picker;
pub mod stack_fields;

use portico_core::encode::percent_encode;

/// The Provision form's path: a Stack's create form made for people.
pub const PROVISION_FORM: &str = "/provision/new";

/// The Provision form with the catalog's `choice` chosen.
pub fn offer_path(choice: &str) -> String {
    format!("{PROVISION_FORM}?spec.choice={}", percent_encode(choice))
}
