//! A Pod's page, at the top: its phase, where it runs, and each container's image,
//! state, restarts, requests and limits (what `kubectl describe pod` opens with),
//! redrawn with the page on every change of the Pod.

use leptos::prelude::*;

use portico_core::payload::{ContainerSummary, PodSummary};
use portico_core::resource::ResourceRef;

#[component]
pub fn PodSummaryPanel(pod: PodSummary) -> impl IntoView {
    let node = pod.node.clone().map(|node| {
        let href = crate::base::url(&ResourceRef::new("", "v1", "nodes").object_path(None, &node));
        view! { <a class="mono" href=href data-testid="pod-node">{node}</a> }
    });
    let unknown = || view! { <span class="subtle">"—"</span> }.into_any();
    let text = |value: Option<String>| match value {
        Some(value) => view! { <span class="mono">{value}</span> }.into_any(),
        None => unknown(),
    };
    view! {
        <section class="panel" data-testid="pod-summary">
            <h2>"Pod"</h2>
            <dl class="facts">
                <dt>"Phase"</dt><dd data-testid="pod-phase">{pod.phase.clone()}</dd>
                <dt>"Node"</dt><dd>{match node { Some(link) => link.into_any(), None => view! { <span class="subtle">"not scheduled yet"</span> }.into_any() }}</dd>
                <dt>"Pod IP"</dt><dd data-testid="pod-ip">{text(pod.pod_ip.clone())}</dd>
                <dt>"Node IP"</dt><dd>{text(pod.host_ip.clone())}</dd>
                <dt>"QoS class"</dt><dd>{text(pod.qos.clone())}</dd>
            </dl>
            <table class="grid" data-testid="pod-containers">
                <thead><tr>
                    <th>"Container"</th><th>"Image"</th><th>"State"</th><th>"Ready"</th>
                    <th>"Restarts"</th><th>"Requests"</th><th>"Limits"</th>
                </tr></thead>
                <tbody>
                    {pod.containers.into_iter().map(|c| view! { <ContainerRow container=c/> }).collect_view()}
                </tbody>
            </table>
        </section>
    }
}

#[component]
fn ContainerRow(container: ContainerSummary) -> impl IntoView {
    let amounts = |list: &[(String, String)]| {
        if list.is_empty() {
            "none".to_string()
        } else {
            (list.iter())
                .map(|(resource, amount)| format!("{resource} {amount}"))
                .collect::<Vec<_>>()
                .join(" · ")
        }
    };
    let bad = container.state.starts_with("Waiting") || container.restarts > 0;
    view! {
        <tr data-container=container.name.clone()>
            <td class="mono">{container.name.clone()}{container.init.then(|| view! { " "<span class="pill">"init"</span> })}</td>
            <td class="mono">{container.image.clone()}</td>
            <td class:warn=bad title=container.since.clone().unwrap_or_default()>{container.state.clone()}</td>
            <td>{if container.ready { "yes" } else { "no" }}</td>
            <td class="mono">{container.restarts}</td>
            <td class="mono small">{amounts(&container.requests)}</td>
            <td class="mono small">{amounts(&container.limits)}</td>
        </tr>
    }
}
