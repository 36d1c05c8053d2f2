//! Volumes kept after their Stack was deleted (deletionPolicy Retain), each with how
//! to reattach it and how to let it go.

use leptos::prelude::*;

use super::PROVISION_FORM;
use crate::api::fetch_kept_volumes;
use portico_core::encode::percent_encode;

/// Volumes kept after their Stack was deleted, each with how to reattach it (a Stack
/// of the same name) and how to let it go.
#[component]
pub fn KeptVolumes(choice: Option<String>) -> impl IntoView {
    let kept = Resource::new(|| (), |_| fetch_kept_volumes());
    view! {
        <Transition fallback=|| ()>
            {move || kept.get().map(|result| match result {
                Ok(list) if list.is_empty() => ().into_any(),
                Ok(list) => view! {
                    <section class="panel" data-testid="kept-volumes">
                        <h2>"Kept data"</h2>
                        <p class="subtle small">"Volumes of deleted Stacks that keep their data (deletionPolicy Retain), with the Secret holding the password that opens them. Reattaching one makes a Stack of the same name in the same namespace that asks for it (reattachKeptData); that needs permission to delete volume claims there."</p>
                        <table class="grid">
                            <thead><tr><th>"Namespace"</th><th>"Volume claim"</th><th>"Stack"</th><th>"Size"</th><th></th></tr></thead>
                            <tbody>
                                {list.into_iter().map(|v| {
                                    let mut href = format!(
                                        "{PROVISION_FORM}?ns={}&metadata.name={}&spec.reattachKeptData=true",
                                        percent_encode(&v.namespace),
                                        percent_encode(&v.stack)
                                    );
                                    if let Some(choice) = &choice {
                                        href.push_str(&format!("&spec.choice={}&spec.storage={}", percent_encode(choice), percent_encode(&v.size)));
                                    }
                                    let forget = format!("kubectl delete pvc,secret -n {} -l portico.dev/stack={}", v.namespace, v.stack);
                                    view! {
                                        <tr data-kept=v.name.clone()>
                                            <td class="mono">{v.namespace.clone()}</td>
                                            <td class="mono">{v.name.clone()}</td>
                                            <td class="mono">{v.stack.clone()}</td>
                                            <td class="mono">{v.size.clone()}</td>
                                            <td class="kept-actions">
                                                <a class="button" href=crate::base::url(&href) data-testid="reattach">"Reattach…"</a>
                                                <details class="small"><summary>"Delete it"</summary><code class="mono copyable">{forget}</code></details>
                                            </td>
                                        </tr>
                                    }
                                }).collect_view()}
                            </tbody>
                        </table>
                    </section>
                }.into_any(),
                // Someone who may not list claims everywhere sees no kept data; their
                // own Stacks' pages still say what deletion keeps.
                Err(_) => ().into_any(),
            })}
        </Transition>
    }
}
