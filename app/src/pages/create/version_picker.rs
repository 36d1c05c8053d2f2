//! Picking another served version of the kind for a new object.

use leptos::prelude::*;
use leptos_router::hooks::{query_signal, use_navigate};

use portico_core::encode::percent_encode;
use portico_core::resource::ResourceRef;

/// A select of the kind's served versions (storage first) for a new object; picking
/// one reloads the form from that version's schema, keeping what was typed.
pub fn version_picker(
    resource: &ResourceRef,
    versions: Vec<String>,
    editing: bool,
) -> Option<AnyView> {
    if editing || versions.len() < 2 {
        return None;
    }
    let current = resource.version.clone();
    let resource = resource.clone();
    let navigate = use_navigate();
    let (ns_param, _) = query_signal::<String>("ns");
    Some(
        view! {
            <label class="version-picker">"Version "
                <select data-testid="version-picker" on:change:target=move |ev| {
                    let mut next = resource.clone();
                    next.version = ev.target().value();
                    let query = ns_param.get_untracked().map(|ns| format!("?ns={}", percent_encode(&ns))).unwrap_or_default();
                    navigate(&format!("{}/new{query}", next.page_path()), Default::default());
                }>
                    {versions.into_iter().enumerate().map(|(i, v)| {
                        let label = if i == 0 { format!("{v} (storage)") } else { v.clone() };
                        view! { <option value=v.clone() selected=v == current>{label}</option> }
                    }).collect_view()}
                </select>
            </label>
        }
        .into_any(),
    )
}
