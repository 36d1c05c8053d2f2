//! What deleting a Stack does to its data, said in its delete dialog before anything
//! is deleted: what goes, what stays (deletionPolicy Retain), and how to get it back.

use leptos::prelude::*;

use portico_core::payload::StackData;

/// What deleting a Stack does to its data: what goes, what stays, and how to get it back.
#[component]
pub fn StackDataNotice(
    data: RwSignal<Option<Result<StackData, String>>>,
    name: String,
) -> impl IntoView {
    let notice = move || {
        let name = name.clone();
        match data.get() {
            None => view! { <p class="subtle small">"Looking at its data…"</p> }.into_any(),
            Some(Err(e)) => view! { <p class="field-error small">{e}</p> }.into_any(),
            Some(Ok(d)) if !d.holds_data => view! {
                <p class="small" data-testid="delete-removes">"Removed with it: its workload, Services and Pods. It holds no data."</p>
            }.into_any(),
            Some(Ok(d)) => {
                let volumes = if d.volumes.is_empty() {
                    d.volumes_unknown.clone().unwrap_or_else(|| "no volumes yet".into())
                } else {
                    d.volumes.iter().map(|v| format!("{} ({})", v.name, v.size)).collect::<Vec<_>>().join(", ")
                };
                let secret = d.secret.clone().map(|s| format!("Secret {s}")).unwrap_or_else(|| "its credentials Secret".into());
                if d.keeps && d.secret_goes_with_it == Some(true) {
                    // Made before deletionPolicy: the volumes stay, their password goes.
                    let secret_name = d.secret.clone().unwrap_or_default();
                    view! {
                        <p class="small" data-testid="delete-removes">"Removed: its workload, Services and Pods."</p>
                        <p class="small warn-callout" data-testid="delete-keeps">
                            <strong>"Kept: "</strong>{format!("volumes {volumes}. ")}
                            <strong>{format!("But Secret {secret_name} goes with it")}</strong>
                            " (it was made before Stacks kept their data), and with it the password that opens them. Copy the password first, or keep the Secret: "
                            <code class="mono">{format!("kubectl patch secret {secret_name} --type=json -p '[{{\"op\":\"remove\",\"path\":\"/metadata/ownerReferences\"}}]'")}</code>
                        </p>
                    }.into_any()
                } else if d.keeps {
                    view! {
                        <p class="small" data-testid="delete-removes">"Removed: its workload, Services and Pods."</p>
                        <p class="small" data-testid="delete-keeps">
                            <strong>"Kept: "</strong>{format!("volumes {volumes}, and {secret} with the password that opens them. ")}
                            {format!("To use them again, reattach them from the Provision page, which lists kept volumes (a Stack named {name} here that asks for them).")}
                        </p>
                    }.into_any()
                } else {
                    view! {
                        <p class="small warn-callout" data-testid="delete-removes">
                            <strong>"Deleted with it, data and all: "</strong>{format!("volumes {volumes}, and {secret}. ")}
                            "Its deletionPolicy is Delete: to keep the data, edit it to Retain first."
                        </p>
                    }.into_any()
                }
            }
        }
    };
    let bound = move || {
        data.get()
            .and_then(Result::ok)
            .and_then(|d| d.bindings)
            .filter(|b| !b.is_empty())
            .map(|bindings| {
                let list = bindings
                    .iter()
                    .map(|(workload, binding)| format!("{workload} (binding {binding})"))
                    .collect::<Vec<_>>()
                    .join(", ");
                view! {
                    <p class="small" data-testid="delete-bindings">
                        <strong>"Bound into: "</strong>{list}". "
                        "Their variables stay in those workloads, pointing at nothing, until the bindings are deleted; a Stack made again under this name is bound again."
                    </p>
                }
            })
    };
    view! { {notice} {bound} }
}
