//! Finding a field by name or description in a form of hundreds.

use leptos::prelude::*;

use portico_core::schema::form::{Field, Widget};

use super::model::use_form;

/// A field of the form, for the search: where it is and what it says.
#[derive(Clone, PartialEq)]
struct Entry {
    path: String,
    name: String,
    summary: String,
    haystack: String,
}

fn entries(field: &Field, out: &mut Vec<Entry>) {
    if !field.name.is_empty() {
        let summary = field.help.lines().next().unwrap_or_default();
        out.push(Entry {
            path: field.path.clone(),
            name: field.name.clone(),
            summary: summary.chars().take(120).collect(),
            haystack: format!("{} {}", field.name, field.help).to_lowercase(),
        });
    }
    match &field.widget {
        Widget::Object(children) => children.iter().for_each(|c| entries(c, out)),
        Widget::List(item) | Widget::Map(item) => entries(item, out),
        _ => {}
    }
}

/// Results shown at most; a narrower query finds the rest.
const SEARCH_RESULTS: usize = 12;

/// Finds fields by name or description and jumps to one (opening the sections on the
/// way).
#[component]
pub fn FieldSearch(form: Field) -> impl IntoView {
    let model = use_form();
    let mut all = Vec::new();
    entries(&form, &mut all);
    let count = all.len();
    let all = StoredValue::new(all);
    let query = RwSignal::new(String::new());
    let results = Memo::new(move |_| {
        let q = query.get().trim().to_lowercase();
        if q.is_empty() {
            return (vec![], 0);
        }
        all.with_value(|all| {
            // Name matches before description matches.
            let mut hits: Vec<&Entry> = all.iter().filter(|e| e.haystack.contains(&q)).collect();
            hits.sort_by_key(|e| !e.name.to_lowercase().contains(&q));
            let total = hits.len();
            (
                hits.into_iter()
                    .take(SEARCH_RESULTS)
                    .cloned()
                    .collect::<Vec<_>>(),
                total,
            )
        })
    });
    view! {
        <div class="field-search">
            <input type="search" data-testid="field-search" aria-label="Find a field"
                placeholder=format!("Find one of {count} fields by name or description")
                bind:value=query/>
            {move || {
                let (hits, total) = results.get();
                (!query.with(|q| q.trim().is_empty())).then(|| view! {
                    <ul class="search-results">
                        {hits.into_iter().map(|e| {
                            let path = e.path.clone();
                            view! {
                                <li><button type="button" class="link-btn"
                                    on:click=move |_| model.bring_into_view(path.clone())>
                                    <span class="mono">{e.path.clone()}</span>
                                    <span class="subtle">{e.summary.clone()}</span>
                                </button></li>
                            }
                        }).collect_view()}
                        {(total == 0).then(|| view! { <li class="subtle">"No field matches."</li> })}
                        {(total > SEARCH_RESULTS).then(|| view! {
                            <li class="subtle">{format!("{} more; type more to narrow.", total - SEARCH_RESULTS)}</li>
                        })}
                    </ul>
                })
            }}
        </div>
    }
}
