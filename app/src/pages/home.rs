//! The first page: what is the person's and what is wrong, live. Stacks and
//! bindings, Warning events by object, Pods not ready or restarting, workloads short
//! of their replicas, and the latest changes; every row links to its page. The
//! server follows the person's own lists and sends the summary whole on each change
//! (`Topic::Overview`); `?ns=` narrows it to one namespace.

use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::query_signal_with_options;

use crate::api::list_namespaces;
use crate::base::url;
use crate::components::clock::ticking_clock;
use crate::components::live_badge::LiveBadge;
use crate::components::namespace_picker::NamespaceControl;
use crate::live::{ViewState, follow_signal};
use portico_core::live::protocol::{ServerMessage, Topic};
use portico_core::overview::{Item, Overview, OverviewQuery, Section, WarningGroup};
use portico_core::table::format::cell_text;

#[component]
pub fn HomePage() -> impl IntoView {
    let (ns, set_ns) = query_signal_with_options::<String>("ns", super::quiet());
    let namespaces = Resource::new(|| (), |_| list_namespaces());
    let overview = RwSignal::new(None::<Overview>);
    let status = RwSignal::new(ViewState::Waiting);
    let now = ticking_clock();
    let topic = Signal::derive(move || Topic::Overview {
        query: OverviewQuery {
            namespace: ns.get().filter(|n| !n.is_empty()),
        },
    });
    // Another namespace: nothing of the last one stays on screen meanwhile.
    Effect::new(move |_| {
        topic.track();
        overview.set(None);
        status.set(ViewState::Waiting);
    });
    follow_signal(topic, move |message| {
        status.update(|s| *s = s.after(&message));
        if let ServerMessage::Overview { overview: next, .. } = message {
            overview.set(Some(next));
        }
    });
    let ago = move |at: Option<String>| {
        at.map(|at| cell_text(&serde_json::Value::String(at), "date", now.get()))
            .unwrap_or_default()
    };
    let section = move |pick: fn(&Overview) -> Section| {
        Signal::derive(move || overview.with(|o| o.as_ref().map(pick)))
    };
    view! {
        <Title text="Home"/>
        <div class="page-head">
            <div>
                <h1>"Home " <LiveBadge view=status testid="home-live-status"/></h1>
                <p class="subtle">"What is yours and what is wrong, as it happens."</p>
            </div>
            <div class="controls">
                <NamespaceControl namespaces ns=ns.into() set_ns=Callback::new(move |next| set_ns.set(next))/>
            </div>
        </div>
        <KeptPanel/>
        {move || overview.with(|o| o.as_ref().map(|o| o.unseen.clone())).unwrap_or_default()
            .into_iter().map(|sentence| view! {
                <p class="notice" data-testid="home-unseen">{sentence}</p>
            }).collect_view()}
        <Show when=move || overview.with(Option::is_none)>
            <p class="subtle" data-testid="home-waiting">"Looking at your namespaces…"</p>
        </Show>
        <Show when=move || overview.with(Option::is_some)>
            <div class="home-grid">
                <ItemPanel title="Stacks" testid="home-stacks" section=section(|o| o.stacks.clone())
                    all_well="No Stacks here yet." ago=ago>
                    <a class="small-btn" href=url("/provision")>"Provision"</a>
                </ItemPanel>
                <ItemPanel title="Bindings" testid="home-bindings" section=section(|o| o.bindings.clone())
                    all_well="No Stack is handed to a workload here." ago=ago>
                    ""
                </ItemPanel>
                <WarningsPanel overview=overview ago=ago/>
                <ItemPanel title="Pods not ready or restarting" testid="home-pods"
                    section=section(|o| o.pods.clone())
                    all_well="Every Pod is ready, none restarted within the hour." ago=ago>
                    <span class="subtle small">{move || overview.with(|o| o.as_ref().map(|o| seen(o.pods.items.len() + o.pods.more, o.pods_seen, "Pod")))}</span>
                </ItemPanel>
                <ItemPanel title="Workloads short of their replicas" testid="home-workloads"
                    section=section(|o| o.workloads.clone())
                    all_well="Every Deployment, StatefulSet and DaemonSet has its replicas." ago=ago>
                    <span class="subtle small">{move || overview.with(|o| o.as_ref().map(|o| seen(o.workloads.items.len() + o.workloads.more, o.workloads_seen, "workload")))}</span>
                </ItemPanel>
                <ItemPanel title="Recent changes" testid="home-changes" section=section(|o| o.changes.clone())
                    all_well="No Stack, binding or workload here yet." ago=ago>
                    ""
                </ItemPanel>
            </div>
        </Show>
    }
}

/// What the person starred and saved, and the objects they opened last: kept in this
/// browser (see `saved` and `recent`), so read once hydrated; each can be forgotten.
#[component]
fn KeptPanel() -> impl IntoView {
    let saved = RwSignal::new(Vec::<crate::saved::Saved>::new());
    let recent = RwSignal::new(Vec::<crate::recent::Opened>::new());
    Effect::new(move |_| {
        saved.set(crate::saved::recall());
        recent.set(crate::recent::recall());
    });
    let forget = move |path: String| {
        crate::saved::forget(&path);
        saved.set(crate::saved::recall());
    };
    let forget_recent = move |_| {
        crate::recent::forget();
        recent.set(Vec::new());
    };
    view! {
        <div class="home-kept">
            <section class="panel" data-testid="home-saved">
                <h2>"Starred and saved"</h2>
                <Show when=move || !saved.with(Vec::is_empty)
                    fallback=|| view! { <p class="subtle small">"Star a page (☆ beside its title) or save a table's view to keep it here. Kept in this browser only."</p> }>
                    <ul class="saved-list">
                        <For each=move || saved.get() key=|s| (s.path.clone(), s.name.clone(), s.starred) let:kept>
                            {
                                let path = kept.path.clone();
                                view! {
                                    <li data-testid="saved-item">
                                        <span aria-label=if kept.starred { "starred" } else { "saved" }>{if kept.starred { "★" } else { "·" }}</span>
                                        <a href=url(&kept.path)>{kept.name.clone()}</a>
                                        <span class="place">{kept.place.clone()}</span>
                                        <button type="button" class="small-btn forget" aria-label=format!("Forget {}", kept.name)
                                            on:click=move |_| forget(path.clone())>"Forget"</button>
                                    </li>
                                }
                            }
                        </For>
                    </ul>
                </Show>
            </section>
            <Show when=move || !recent.with(Vec::is_empty)>
                <section class="panel" data-testid="home-recent">
                    <h2>"Opened lately"</h2>
                    <ul class="saved-list">
                        <For each=move || recent.get() key=|o| o.path.clone() let:opened>
                            <li><a href=url(&opened.path)>{opened.name.clone()}</a><span class="place">{opened.place.clone()}</span></li>
                        </For>
                    </ul>
                    <button type="button" class="small-btn" data-testid="forget-recent" on:click=forget_recent>"Forget these"</button>
                </section>
            </Show>
        </div>
    }
}

/// "2 of 5,000 Pods".
fn seen(shown: usize, of: usize, noun: &str) -> String {
    let plural = if of == 1 { "" } else { "s" };
    format!("{shown} of {} {noun}{plural}", thousands(of))
}

fn thousands(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A section of objects: kind, name (its link), namespace, state, and when.
#[component]
fn ItemPanel(
    title: &'static str,
    testid: &'static str,
    section: Signal<Option<Section>>,
    all_well: &'static str,
    ago: impl Fn(Option<String>) -> String + Copy + Send + Sync + 'static,
    children: Children,
) -> impl IntoView {
    view! {
        <section class="panel" data-testid=testid>
            <div class="panel-head"><h2>{title}</h2>{children()}</div>
            {move || section.get().map(|section| {
                if section.items.is_empty() {
                    return view! { <p class="subtle small all-well">{all_well}</p> }.into_any();
                }
                let more = section.more;
                view! {
                    <ul class="home-items">
                        {section.items.into_iter().map(|item| item_row(item, ago)).collect_view()}
                    </ul>
                    {(more > 0).then(|| view! { <p class="subtle small">{format!("and {} more", thousands(more))}</p> })}
                }.into_any()
            })}
        </section>
    }
}

fn item_row(
    item: Item,
    ago: impl Fn(Option<String>) -> String + Copy + Send + Sync + 'static,
) -> impl IntoView {
    let Item {
        kind,
        namespace,
        name,
        href,
        state,
        problem,
        at,
    } = item;
    let name = match href {
        Some(href) => view! { <a href=url(&href)>{name}</a> }.into_any(),
        None => view! { <span>{name}</span> }.into_any(),
    };
    let data_kind = kind.clone();
    view! {
        <li data-kind=data_kind>
            <div class="home-item-head">
                <span class="kind-tag">{kind}</span>
                <span class="mono">{name}</span>
                <span class="mono subtle">{namespace}</span>
                <span class="mono subtle age">{move || ago(at.clone())}</span>
            </div>
            <div class="mono small" class:problem-text=problem>{state}</div>
        </li>
    }
}

/// Warning events, by the object they name, the newest first.
#[component]
fn WarningsPanel(
    overview: RwSignal<Option<Overview>>,
    ago: impl Fn(Option<String>) -> String + Copy + Send + Sync + 'static,
) -> impl IntoView {
    let groups = move || {
        overview.with(|o| {
            o.as_ref()
                .map(|o| (o.warnings.clone(), o.warnings_more))
                .unwrap_or_default()
        })
    };
    view! {
        <section class="panel home-warnings" data-testid="home-warnings">
            <div class="panel-head"><h2>"Warnings"</h2></div>
            {move || {
                let (groups, more) = groups();
                if groups.is_empty() {
                    return view! { <p class="subtle small all-well">"No Warning events."</p> }.into_any();
                }
                view! {
                    <ul class="home-items warning-groups">
                        {groups.into_iter().map(|g| warning_group(g, ago)).collect_view()}
                    </ul>
                    {(more > 0).then(|| view! { <p class="subtle small">{format!("and {} more objects", thousands(more))}</p> })}
                }.into_any()
            }}
        </section>
    }
}

fn warning_group(
    group: WarningGroup,
    ago: impl Fn(Option<String>) -> String + Copy + Send + Sync + 'static,
) -> impl IntoView {
    let label = format!("{}/{}", group.kind, group.name);
    let object = match group.href {
        Some(href) => view! { <a class="mono" href=url(&href)>{label}</a> }.into_any(),
        None => view! { <span class="mono">{label}</span> }.into_any(),
    };
    let last = group.last;
    let more = group.more;
    view! {
        <li data-testid="warning-group">
            <div class="home-item-head">
                {object}
                <span class="mono subtle">{group.namespace}</span>
                <span class="mono subtle age">{move || ago(last.clone())}</span>
            </div>
            <ul>
                {group.warnings.into_iter().map(|w| {
                    let count = (w.count > 1).then(|| format!(" ×{}", w.count));
                    view! {
                        <li><strong>{w.reason}</strong>{count}": "<span>{w.message}</span></li>
                    }
                }).collect_view()}
                {(more > 0).then(|| view! { <li class="subtle">{format!("and {more} more")}</li> })}
            </ul>
        </li>
    }
}
