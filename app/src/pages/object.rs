//! One object: why it is (or is not) being deleted, its owners, conditions, live
//! Events and its YAML. Refreshed whenever the object changes on the server.

use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::use_params_map;

use super::pod_summary::PodSummaryPanel;
use crate::api::{delete_object, fetch_object, fetch_permissions, fetch_stack_data};
use crate::components::bindings::{BoundBy, StackBindings};
use crate::components::clock::ticking_clock;
use crate::components::error_banner::ErrorBanner;
use crate::components::live_badge::LiveBadge;
use crate::components::live_table::LiveTable;
use crate::components::pod_logs::{LogViews, PodLogs};
use crate::components::star::StarButton;
use crate::components::terminal::{TerminalButton, TerminalDock, TerminalPanel};
use crate::components::usage::{UsageFeed, UsagePanel};
use crate::components::workload_logs::WorkloadLogs;
use crate::error::BackendError;
use crate::live::{ViewState, follow};
use crate::pages::stack::change::StackChange;
use crate::pages::stack::connection::StackConnection;
use crate::pages::stack::deletion::StackDataNotice;
use portico_core::live::protocol::{ServerMessage, Topic};
use portico_core::owner_tree::{ChildEntry, ChildrenQuery};
use portico_core::payload::{Condition, ObjectDetail, OwnerLink, Permissions, StackData};
use portico_core::resource::{ObjectKey, ResourceRef};
use portico_core::table::format::cell_text;
use portico_core::table::state::SortKey;
use portico_core::table::wire::TableQuery;
use portico_core::usage::UsageTarget;

#[component]
pub fn ObjectPage() -> impl IntoView {
    let params = use_params_map();
    let target = Memo::new(move |_| params.with(super::object_from_params));
    // Re-mount per object so its live subscriptions follow the URL.
    move || view! { <ObjectView target=target.get()/> }
}

#[component]
fn ObjectView(target: ObjectKey) -> impl IntoView {
    crate::pages::stack::bind::PickerState::provide();
    crate::pages::stack::change::ChangeState::provide();
    let fetch_target = target.clone();
    let detail = Resource::new(|| (), move |_| fetch_object(fetch_target.clone()));
    // The object's own row in a live table: any change to it refreshes the page.
    let watch = TableQuery {
        group: target.resource.group.clone(),
        version: target.resource.version.clone(),
        plural: target.resource.plural.clone(),
        namespace: target.namespace.clone(),
        label_selector: None,
        field_selector: Some(format!("metadata.name={}", target.name)),
        columns: None,
    };
    // Snapshots too: a change between the page's first fetch and this subscription
    // arrives in the snapshot, not as a delta.
    let own = RwSignal::new(ViewState::Waiting);
    follow(Topic::Table { query: watch }, move |message| {
        own.update(|s| *s = s.after(&message));
        if matches!(
            message,
            ServerMessage::Snapshot { .. } | ServerMessage::Delta { .. }
        ) {
            detail.refetch();
        }
    });
    // The detail below is redrawn on every change of the object; its log view and an
    // open delete dialog (with what was typed in it) are not.
    LogViews::provide();
    TerminalDock::provide();
    // Usage is asked for here, so its history outlives the detail's redraws.
    let usage_resource = target.resource.clone();
    UsageFeed::provide(Signal::derive(move || {
        detail
            .get()
            .and_then(Result::ok)
            .and_then(|d| usage_target(&d, &usage_resource))
    }));
    let deleting = DeleteDialog::new();
    crate::recent::remember(crate::recent::Opened {
        name: target.name.clone(),
        place: place(&target),
        path: target
            .resource
            .object_path(target.namespace.as_deref(), &target.name),
    });
    // A link to `#logs` (the palette's "Logs of …") scrolls there once, when the
    // detail has first drawn it (not on each redraw).
    let scrolled_to_hash = StoredValue::new(false);
    Effect::new(move |_| {
        if detail.with(|d| d.as_ref().is_some_and(Result::is_ok)) && !scrolled_to_hash.get_value() {
            scrolled_to_hash.set_value(true);
            #[cfg(feature = "hydrate")]
            request_animation_frame(|| {
                let hash = window().location().hash().unwrap_or_default();
                if let Some(target) = hash.strip_prefix('#').filter(|h| !h.is_empty())
                    && let Some(element) = document().get_element_by_id(target)
                {
                    element.scroll_into_view();
                }
            });
        }
    });
    let list_href = crate::base::url(&target.resource.page_path());
    let back = list_href.clone();
    view! {
        <Title text=target.name.clone()/>
        <p class="crumbs">
            <a href=list_href>{target.resource.plural.clone()}</a>" / "{target.name.clone()}
            " "<LiveBadge view=own testid="object-live-status"/>
        </p>
        <Transition fallback=|| view! { <p class="empty">"Loading…"</p> }>
            {move || detail.get().map(|result| match result {
                Ok(d) => view! { <DetailView detail=d target=target.clone() deleting=deleting/> }.into_any(),
                // Gone (deleted in another tab, a stale link): say so, and offer the list.
                Err(e @ BackendError::NotFound(_)) => view! {
                    <div data-testid="object-gone">
                        <ErrorBanner message=e.to_string()/>
                        <p><a class="button" href=back.clone()>{format!("Back to {}", target.resource.plural)}</a></p>
                    </div>
                }.into_any(),
                Err(e) => view! { <ErrorBanner message=e.to_string()/> }.into_any(),
            })}
        </Transition>
        <TerminalPanel/>
    }
}

/// Where an object is, as the palette and the home page show it beside its name.
fn place(target: &ObjectKey) -> String {
    match &target.namespace {
        Some(ns) => format!("{} · {ns}", target.resource.plural),
        None => target.resource.plural.clone(),
    }
}

#[component]
fn DetailView(detail: ObjectDetail, target: ObjectKey, deleting: DeleteDialog) -> impl IntoView {
    let perms_target = target.clone();
    let may = Resource::new(
        || (),
        move |_| {
            let t = perms_target.clone();
            fetch_permissions(t.resource, t.namespace)
        },
    );
    // Only a CRD has a schema to build the edit form from.
    let editable = !detail.flags.builtin;
    let stack_namespace = detail.namespace.clone().filter(|_| detail.flags.is_stack);
    let workload = detail
        .namespace
        .clone()
        .zip(bindable_workload_kind(&target.resource));
    let pod_namespace = detail
        .namespace
        .clone()
        .filter(|_| target.resource.group.is_empty() && target.resource.plural == "pods");
    // A workload's Pods, merged: a Stack offers them among its Pods' tabs.
    let selected = detail.namespace.clone().zip(detail.pod_selector.clone());
    let stack_merged = selected
        .as_ref()
        .filter(|_| detail.flags.is_stack)
        .map(|(_, selector)| (selector.clone(), detail.name.clone()));
    let workload_logs = selected.filter(|_| !detail.flags.is_stack);
    let shows_usage = usage_target(&detail, &target.resource).is_some();
    view! {
        <div class="page-head">
            {detail_title(&detail, &target)}
            <div class="head-actions">
                {pod_namespace.clone().map(|ns| view! { <TerminalButton namespace=ns pod=detail.name.clone()/> })}
                {detail.deletion_timestamp.is_some().then(|| view! { <span class="badge problem">"Deleting"</span> })}
                {edit_control(&target, editable, may)}
                <DeleteControl target=target.clone() stack=detail.flags.is_stack state=deleting allowed=Signal::derive(move || {
                    may.get().and_then(Result::ok).is_none_or(|p| p.delete)
                })/>
            </div>
        </div>
        <DeletionNotice detail=detail.clone()/>
        {detail.pod.clone().map(|pod| view! { <PodSummaryPanel pod/> })}
        {shows_usage.then(|| view! { <UsagePanel/> })}
        <Owners owners=detail.owners.clone()/>
        <Mentions mentions=detail.mentions.clone()/>
        {stack_namespace.map(|ns| view! {
            <StackConnection namespace=ns.clone() name=detail.name.clone() status=detail.status.clone()/>
            <StackChange namespace=ns.clone() name=detail.name.clone()/>
            <StackBindings namespace=ns of=BoundBy::Stack(detail.name.clone())/>
        })}
        {workload.map(|(ns, kind)| view! {
            <StackBindings namespace=ns of=BoundBy::Workload { kind, name: detail.name.clone() }/>
        })}
        <Labels labels=detail.labels.clone()/>
        {workload_logs.map(|(ns, selector)| view! {
            <section class="panel" id="logs" data-testid="workload-log-panel">
                <h2>"Logs of every Pod"</h2>
                <WorkloadLogs namespace=ns selector name=detail.name.clone()/>
            </section>
        })}
        {pod_namespace.map(|ns| view! {
            <section class="panel" id="logs">
                <h2>"Logs"</h2>
                <PodLogs namespace=ns pod=detail.name.clone()/>
            </section>
        })}
        {detail.namespace.clone().filter(|_| detail.flags.can_own).map(|ns| view! {
            <Children namespace=ns uid=detail.uid.clone() group=target.resource.group.clone() pod_logs=detail.flags.is_stack
                merged=stack_merged.clone()/>
        })}
        <section class="panel">
            <h2>"Conditions"</h2>
            <Conditions conditions=detail.conditions.clone()/>
        </section>
        {events_panel(&detail)}
        <section class="panel">
            <h2>"YAML"</h2>
            <pre class="yaml" data-testid="object-yaml">{detail.yaml.clone()}</pre>
        </section>
    }
}

/// The kind of workload `resource` is, when someone's own can be bound to a Stack (a
/// Deployment or a StatefulSet).
fn bindable_workload_kind(resource: &ResourceRef) -> Option<&'static str> {
    match (resource.group.as_str(), resource.plural.as_str()) {
        ("apps", "deployments") => Some("Deployment"),
        ("apps", "statefulsets") => Some("StatefulSet"),
        _ => None,
    }
}

/// The object's name (with its star) and what it is: kind, API version, namespace.
fn detail_title(detail: &ObjectDetail, target: &ObjectKey) -> impl IntoView + use<> {
    let namespace = detail
        .namespace
        .clone()
        .map(|ns| format!(" · namespace {ns}"))
        .unwrap_or_default();
    view! {
        <div>
            <div class="title-row">
                <h1 data-testid="object-name">{detail.name.clone()}</h1>
                <StarButton
                    path=target.resource.object_path(target.namespace.as_deref(), &target.name)
                    name=detail.name.clone()
                    place=place(target)/>
            </div>
            <p class="subtle mono">{format!("{} · {}{namespace}", detail.kind, detail.api_version)}</p>
        </div>
    }
}

/// The Edit link, for a kind with a schema to build the form from (`editable`): a
/// link while the person may update the object (or it is not known yet), else a
/// disabled button and a link to why.
fn edit_control(
    target: &ObjectKey,
    editable: bool,
    may: Resource<Result<Permissions, BackendError>>,
) -> impl IntoView + use<> {
    let edit_href = format!(
        "{}{}/edit",
        crate::base::get(),
        target
            .resource
            .object_path(target.namespace.as_deref(), &target.name)
    );
    let access_href = crate::base::url(&portico_core::access::page_path(
        target.namespace.as_deref(),
    ));
    view! {
        <Transition fallback=|| ()>
            {move || {
                let p = may.get().and_then(Result::ok);
                let can_edit = p.is_none_or(|p| p.update);
                editable.then(|| if can_edit {
                    view! { <a class="button" href=edit_href.clone() data-testid="edit-link">"Edit"</a> }.into_any()
                } else {
                    view! {
                        <span class="button disabled" data-testid="edit-link" aria-disabled="true"
                            title="Your Kubernetes permissions do not allow editing this.">"Edit"</span>
                        <a class="small access-link" href=access_href.clone()>"Why?"</a>
                    }.into_any()
                })
            }}
        </Transition>
    }
}

/// The object's Events (those naming it as their involved object), live, sortable.
fn events_panel(detail: &ObjectDetail) -> impl IntoView + use<> {
    let events = TableQuery {
        group: String::new(),
        version: "v1".into(),
        plural: "events".into(),
        namespace: detail.namespace.clone(),
        label_selector: None,
        field_selector: Some(format!("involvedObject.uid={}", detail.uid)),
        columns: None,
    };
    let events_sort = RwSignal::new(None::<SortKey>);
    let on_events_sort = Callback::new(move |column: String| {
        events_sort.update(|s| *s = SortKey::toggled(s.as_ref(), column))
    });
    view! {
        <section class="panel">
            <h2>"Events"</h2>
            <LiveTable
                query=Signal::stored(events)
                wide=false
                filter=String::new()
                sort=events_sort
                on_sort=on_events_sort
                link_rows=false
            />
        </section>
    }
}

/// What an object's page shows the usage of: a Pod's containers, a node, or a
/// workload's or Stack's Pods (its Pod selector); nothing for other kinds.
fn usage_target(detail: &ObjectDetail, resource: &ResourceRef) -> Option<UsageTarget> {
    let core = |plural: &str| resource.group.is_empty() && resource.plural == plural;
    match (&detail.namespace, &detail.pod_selector) {
        (Some(namespace), _) if core("pods") => Some(UsageTarget::Pod {
            namespace: namespace.clone(),
            name: detail.name.clone(),
        }),
        (Some(namespace), Some(selector)) => Some(UsageTarget::Workload {
            namespace: namespace.clone(),
            selector: selector.clone(),
        }),
        (None, _) if core("nodes") => Some(UsageTarget::Node {
            name: detail.name.clone(),
        }),
        _ => None,
    }
}

#[component]
fn DeletionNotice(detail: ObjectDetail) -> impl IntoView {
    let since = detail.deletion_timestamp.clone()?;
    let why = if detail.finalizers.is_empty() {
        "No finalizers remain: the object goes as soon as garbage collection runs.".to_string()
    } else {
        format!(
            "It stays until these finalizers are removed by the controllers that own them: {}.",
            detail.finalizers.join(", ")
        )
    };
    Some(view! {
        <div class="callout warn-callout" data-testid="deletion-notice">
            <strong>{format!("Deletion requested at {since}. ")}</strong>
            {why}
        </div>
    })
}

#[component]
fn Owners(owners: Vec<OwnerLink>) -> impl IntoView {
    (!owners.is_empty()).then(|| {
        view! {
            <section class="panel">
                <h2>"Owners"</h2>
                <ul class="owners" data-testid="owners">
                    {owners.into_iter().map(|o| {
                        let label = format!("{}/{}", o.kind, o.name);
                        let indent = format!("padding-left: {}rem", (o.depth.saturating_sub(1)) as f32 * 1.25);
                        view! {
                            <li style=indent>
                                {match o.href {
                                    Some(href) => view! { <a href=crate::base::url(&href)>{label}</a> }.into_any(),
                                    None => view! { <span>{label}</span> }.into_any(),
                                }}
                                {o.controller.then(|| view! { <span class="pill">"controller"</span> })}
                                {o.note.map(|n| view! { <span class="subtle small">{format!(" — {n}")}</span> })}
                            </li>
                        }
                    }).collect_view()}
                </ul>
            </section>
        }
    })
}

/// What the object names (a binding: its Stack and workload), as links.
#[component]
fn Mentions(mentions: Vec<portico_core::payload::Mention>) -> impl IntoView {
    (!mentions.is_empty()).then(|| {
        view! {
            <section class="panel">
                <h2>"Binds"</h2>
                <dl class="facts" data-testid="mentions">
                    {mentions.into_iter().map(|m| view! {
                        <dt>{m.role.clone()}</dt>
                        <dd><a href=crate::base::url(&m.href) data-mention=m.role.clone()>{format!("{} {}", m.kind, m.name)}</a></dd>
                    }).collect_view()}
                </dl>
            </section>
        }
    })
}

#[component]
fn Labels(labels: Vec<(String, String)>) -> impl IntoView {
    (!labels.is_empty()).then(|| {
        view! {
            <p class="labels">
                {labels.into_iter().map(|(k, v)| view! { <span class="pill">{format!("{k}={v}")}</span> }).collect_view()}
            </p>
        }
    })
}

#[component]
fn Conditions(conditions: Vec<Condition>) -> impl IntoView {
    if conditions.is_empty() {
        return view! { <p class="subtle small">"No conditions reported."</p> }.into_any();
    }
    view! {
        <table class="grid" data-testid="conditions">
            <thead><tr><th>"Type"</th><th>"Status"</th><th>"Reason"</th><th>"Message"</th><th>"Since"</th></tr></thead>
            <tbody>
                {conditions.into_iter().map(|c| {
                    let class = match c.status.as_str() { "True" => "pill ok", "False" => "pill bad", _ => "pill" };
                    view! {
                        <tr>
                            <td class="kind">{c.kind}</td>
                            <td><span class=class>{c.status}</span></td>
                            <td>{c.reason}</td>
                            <td>{c.message}</td>
                            <td class="mono subtle">{c.last_transition_time}</td>
                        </tr>
                    }
                }).collect_view()}
            </tbody>
        </table>
    }.into_any()
}

/// Objects this one owns, and what those own in turn (a Stack's StatefulSet and its
/// Pods), live, indented by depth; with `pod_logs`, the logs of the Pods among them.
#[component]
fn Children(
    namespace: String,
    uid: String,
    group: String,
    pod_logs: bool,
    /// The Pods' selector and the object's name: the logs offer them all, merged.
    merged: Option<(String, String)>,
) -> impl IntoView {
    let children = RwSignal::new(None::<Vec<ChildEntry>>);
    let status = RwSignal::new(ViewState::Waiting);
    let now = ticking_clock();
    let pods = Memo::new(move |_| {
        children.with(|list| {
            list.iter()
                .flatten()
                .filter(|c| c.kind == "Pod" && !c.deleting)
                .map(|c| c.name.clone())
                .collect::<Vec<_>>()
        })
    });
    let logs_namespace = namespace.clone();
    let rows_namespace = namespace.clone();
    let query = ChildrenQuery {
        namespace,
        uid,
        group,
    };
    follow(Topic::Children { query }, move |message| {
        status.update(|s| *s = s.after(&message));
        if let ServerMessage::Children { children: list, .. } = message {
            children.set(Some(list));
        }
    });
    view! {
        <section class="panel">
            <h2>"Children "<LiveBadge view=status testid="children-live-status"/></h2>
            {move || match children.get() {
                None => view! { <p class="subtle small">"Looking for owned objects…"</p> }.into_any(),
                Some(list) if list.is_empty() => view! { <p class="subtle small" data-testid="no-children">"This object owns nothing."</p> }.into_any(),
                Some(list) => view! {
                    <table class="grid" data-testid="children">
                        <thead><tr><th>"Kind"</th><th>"Name"</th><th>"Status"</th><th>"Age"</th></tr></thead>
                        <tbody>
                            {list.into_iter().map(|c| {
                                let key = format!("{}/{}", c.kind, c.name);
                                let indent = format!("padding-left: {}rem", f32::from(c.depth.saturating_sub(1)) * 1.25);
                                let created = serde_json::Value::from(c.created.clone());
                                let age = move || cell_text(&created, "date", now.get());
                                // Each running Pod of a workload or Stack opens a terminal.
                                let terminal = (c.kind == "Pod" && !c.deleting).then(|| view! {
                                    " "<TerminalButton namespace=rows_namespace.clone() pod=c.name.clone() compact=true/>
                                });
                                view! {
                                <tr class:deleting=c.deleting data-child=key data-depth=c.depth>
                                    <td class="kind" style=indent>{c.kind}</td>
                                    <td class="mono"><a href=crate::base::url(&c.href)>{c.name}</a>{terminal}</td>
                                    <td class="mono subtle">{c.summary}</td>
                                    <td class="mono subtle" data-testid="child-age">{age}</td>
                                </tr>
                                }
                            }).collect_view()}
                        </tbody>
                    </table>
                }.into_any(),
            }}
        </section>
        {pod_logs.then(|| view! { <StackLogs namespace=logs_namespace pods=pods merged=merged/> })}
    }
}

/// The logs of a Stack's Pods, one Pod at a time (a tab each), or all of them merged.
#[component]
fn StackLogs(
    namespace: String,
    pods: Memo<Vec<String>>,
    merged: Option<(String, String)>,
) -> impl IntoView {
    let views = use_context::<LogViews>();
    let chosen = views
        .map(|v| v.chosen_pod)
        .unwrap_or_else(|| RwSignal::new(None));
    let all = views
        .map(|v| v.all_pods)
        .unwrap_or_else(|| RwSignal::new(false));
    // The chosen Pod, or the first while none is chosen or the chosen one went away.
    let shown = Memo::new(move |_| {
        pods.with(|list| {
            chosen
                .get()
                .filter(|c| list.contains(c))
                .or_else(|| list.first().cloned())
        })
    });
    move || {
        let (namespace, merged) = (namespace.clone(), merged.clone());
        (!pods.with(Vec::is_empty)).then(move || view! {
            <section class="panel" id="logs" data-testid="stack-logs">
                <h2>"Logs"</h2>
                <div class="log-tabs pod-tabs" role="tablist">
                    {merged.is_some().then(|| view! {
                        <button type="button" class="log-tab" class:active=move || all.get() role="tab"
                            aria-selected=move || all.get().to_string() data-testid="all-pods-tab"
                            on:click=move |_| {
                                // One log view at a time: the Pod's ends.
                                if let Some(views) = views {
                                    views.end_pod();
                                }
                                all.set(true);
                            }>"All Pods"</button>
                    })}
                    {move || pods.get().into_iter().map(|name| {
                        let active = !all.get() && shown.with(|s| s.as_deref() == Some(name.as_str()));
                        let pick = name.clone();
                        view! {
                            <button type="button" class="log-tab" class:active=active role="tab"
                                aria-selected=active.to_string()
                                on:click=move |_| {
                                    if let Some(views) = views {
                                        views.workload.end();
                                    }
                                    all.set(false);
                                    chosen.set(Some(pick.clone()));
                                }>{name}</button>
                        }
                    }).collect_view()}
                    {
                        let namespace = namespace.clone();
                        move || shown.get().filter(|_| !all.get()).map(|pod| view! {
                            <span class="tab-action">
                                <TerminalButton namespace=namespace.clone() pod/>
                            </span>
                        })
                    }
                </div>
                {move || match (all.get(), merged.clone()) {
                    (true, Some((selector, name))) => view! {
                        <WorkloadLogs namespace=namespace.clone() selector name/>
                    }.into_any(),
                    _ => shown.get().map(|pod| view! { <PodLogs namespace=namespace.clone() pod=pod/> }).into_any(),
                }}
            </section>
        })
    }
}

/// The delete dialog's state. It belongs to the object's page, not to one drawing of
/// the detail: a change of the object (a status write, a finalizer) redraws the detail,
/// and must neither close the dialog nor drop a typed name.
#[derive(Clone, Copy)]
struct DeleteDialog {
    open: RwSignal<bool>,
    propagation: RwSignal<String>,
    outcome: RwSignal<Option<String>>,
    busy: RwSignal<bool>,
    typed: RwSignal<String>,
    data: RwSignal<Option<Result<StackData, String>>>,
}

impl DeleteDialog {
    fn new() -> Self {
        Self {
            open: RwSignal::new(false),
            propagation: RwSignal::new("Background".to_string()),
            outcome: RwSignal::new(None),
            busy: RwSignal::new(false),
            typed: RwSignal::new(String::new()),
            data: RwSignal::new(None),
        }
    }
}

/// Delete with confirmation and a propagation choice; a delete held by finalizers
/// says so (and the page's deletion notice explains it). A Stack's dialog says what
/// happens to its data, and one that holds data asks for its name to be typed.
#[component]
fn DeleteControl(
    target: ObjectKey,
    allowed: Signal<bool>,
    stack: bool,
    state: DeleteDialog,
) -> impl IntoView {
    let DeleteDialog {
        open,
        propagation,
        outcome,
        busy,
        typed,
        data,
    } = state;
    let navigate = leptos_router::hooks::use_navigate();
    let target = StoredValue::new(target);
    let open_dialog = move |_| {
        open.set(true);
        typed.set(String::new());
        if stack {
            let t = target.get_value();
            leptos::task::spawn_local(async move {
                let namespace = t.namespace.unwrap_or_default();
                let read = fetch_stack_data(namespace, t.name).await;
                data.set(Some(read.map_err(|e| e.to_string())));
            });
        }
    };
    // Until the Stack's data is known, the name must be typed (it may hold data).
    let must_type = move || {
        stack
            && data.with(|d| match d {
                Some(Ok(d)) => d.holds_data,
                _ => true,
            })
    };
    let confirmed = move || !must_type() || target.with_value(|t| typed.with(|n| *n == t.name));
    let confirm = move |_| {
        let t = target.get_value();
        let navigate = navigate.clone();
        busy.set(true);
        leptos::task::spawn_local(async move {
            let list = t.resource.page_path();
            let result = delete_object(t, propagation.get_untracked()).await;
            busy.set(false);
            match result {
                Ok(finalizers) if finalizers.is_empty() => navigate(&list, Default::default()),
                Ok(finalizers) => outcome.set(Some(format!(
                    "Deletion requested. It waits for these finalizers: {}.",
                    finalizers.join(", ")
                ))),
                Err(e) => outcome.set(Some(e.to_string())),
            }
        });
    };
    view! {
        <button type="button" class="button danger" data-testid="delete-button"
            disabled=move || !allowed.get()
            title=move || (!allowed.get()).then_some("Your Kubernetes permissions do not allow deleting this.")
            on:click=open_dialog>"Delete…"</button>
        <Show when=move || open.get()>
            <div class="confirm" role="dialog" aria-label="Confirm deletion" data-testid="delete-dialog">
                <p>{move || format!("Delete {}?", target.with_value(|t| t.name.clone()))}</p>
                {stack.then(|| view! { <StackDataNotice data=data name=target.with_value(|t| t.name.clone())/> })}
                <Show when=must_type>
                    <label class="control type-name">
                        {move || format!("Type {} to confirm", target.with_value(|t| t.name.clone()))}
                        <input type="text" data-testid="delete-typed-name" autocomplete="off" spellcheck="false"
                            prop:value=move || typed.get()
                            on:input:target=move |ev| typed.set(ev.target().value())/>
                    </label>
                </Show>
                <label class="control">
                    "Dependents"
                    <select aria-label="Propagation" on:change:target=move |ev| propagation.set(ev.target().value())>
                        {[
                            ("Background", "Delete in the background"),
                            ("Foreground", "Delete dependents first"),
                            ("Orphan", "Keep dependents (orphan)"),
                        ].into_iter().map(|(value, label)| view! {
                            <option value=value selected=move || propagation.with(|p| p == value)>{label}</option>
                        }).collect_view()}
                    </select>
                </label>
                <p class="field-hint" data-testid="propagation-hint">{move || propagation.with(|p| match p.as_str() {
                    "Foreground" => "What it owns is deleted first; it goes last, shown as Deleting until then.",
                    "Orphan" => "Only it goes: what it owns stays, owned by nothing (nothing deletes it later).",
                    _ => "It goes at once; Kubernetes then deletes what it owns, in the background.",
                })}</p>
                <div class="confirm-actions">
                    <button type="button" class="button danger" data-testid="delete-confirm"
                        disabled=move || busy.get() || !confirmed() on:click=confirm.clone()>"Delete"</button>
                    <button type="button" class="button" on:click=move |_| open.set(false)>"Cancel"</button>
                </div>
                {move || outcome.get().map(|o| view! { <p class="small" data-testid="delete-outcome">{o}</p> })}
            </div>
        </Show>
    }
}
