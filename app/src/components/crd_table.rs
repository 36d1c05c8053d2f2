//! A filterable table of CRDs.

use leptos::prelude::*;

use portico_core::payload::CrdSummary;

#[component]
pub fn CrdTable(crds: Vec<CrdSummary>, filter: Signal<String>) -> impl IntoView {
    let total = crds.len();
    let crds = StoredValue::new(crds);
    let visible = Memo::new(move |_| {
        let f = filter.get();
        crds.with_value(|all| {
            all.iter()
                .filter(|c| c.matches(&f))
                .cloned()
                .collect::<Vec<_>>()
        })
    });
    view! {
        <p class="count" data-testid="crd-count">
            {move || {
                let shown = visible.with(Vec::len);
                if shown == total {
                    format!("{total} resource types")
                } else {
                    format!("{shown} of {total} resource types")
                }
            }}
        </p>
        <table class="grid" data-testid="crd-table">
            <thead>
                <tr>
                    <th>"Kind"</th>
                    <th>"Group"</th>
                    <th>"Versions"</th>
                    <th>"Scope"</th>
                    <th>"Short names"</th>
                    <th>"Name"</th>
                </tr>
            </thead>
            <tbody>
                <For each=move || visible.get() key=|c| c.name.clone() let:crd>
                    <CrdRow crd/>
                </For>
            </tbody>
        </table>
        <Show when=move || visible.with(Vec::is_empty)>
            <p class="empty">"No resource type matches the filter."</p>
        </Show>
    }
}

#[component]
fn CrdRow(crd: CrdSummary) -> impl IntoView {
    let versions = crd
        .served_versions()
        .map(|v| {
            let class = if v.storage { "pill storage" } else { "pill" };
            let title = if v.storage {
                "storage version"
            } else {
                "served"
            };
            view! { <span class=class title=title>{v.name.clone()}</span> }
        })
        .collect_view();
    let pending = (!crd.established).then(|| {
        view! {
            <span class="warn" title="The API server has not accepted its names yet">
                " not established"
            </span>
        }
    });
    let problem = crd.problem.clone().map(|reason| {
        view! { <p class="warn small" data-testid="crd-problem">{reason}</p> }
    });
    // The kind leads to its objects (in the version the API server stores).
    let href = crd.served_versions().next().map(|v| {
        crate::base::url(
            &portico_core::resource::ResourceRef::new(&crd.group, &v.name, &crd.plural).page_path(),
        )
    });
    let kind = match href {
        Some(href) => view! { <a class="kind-name" href=href>{crd.kind.clone()}</a> }.into_any(),
        None => view! { <span class="kind-name">{crd.kind.clone()}</span> }.into_any(),
    };
    view! {
        <tr data-crd=crd.name.clone()>
            <td class="kind">{kind}{pending}{problem}</td>
            <td class="mono">{crd.group.clone()}</td>
            <td>{versions}</td>
            <td>{crd.scope.clone()}</td>
            <td class="mono">{crd.short_names.join(", ")}</td>
            <td class="mono subtle">{crd.name.clone()}</td>
        </tr>
    }
}
