//! The command palette (Ctrl-K, ⌘K, or `/` outside a text field): kinds, objects the
//! person may list (found on the server as they type), the objects they opened last
//! and actions, best first. Arrows move, Enter goes there, Escape closes; `?` lists
//! the keys.

use leptos::prelude::*;

#[cfg(feature = "hydrate")]
use crate::api::find_objects;
use crate::api::{list_resources, stack_offers};
use crate::recent::Opened;
use crate::saved::Saved;
use portico_core::find::{FoundObject, FoundObjects, rank, rank_kind};
use portico_core::payload::StackOffer;
use portico_core::resource::ResourceKind;

/// Kinds, actions and objects shown at most.
const KINDS_SHOWN: usize = 8;
const ACTIONS_SHOWN: usize = 6;
const OBJECTS_SHOWN: usize = 20;
const LOG_ACTIONS_SHOWN: usize = 3;
/// Typing settles this long before the server is asked (the server keeps the names it
/// read, so each question is cheap; this only spares the requests of fast typing).
#[cfg(feature = "hydrate")]
const SETTLE: std::time::Duration = std::time::Duration::from_millis(120);

/// One thing the palette offers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Choice {
    pub section: &'static str,
    pub label: String,
    pub detail: String,
    /// Where Enter goes, without the base path.
    pub path: String,
}

/// What the server found for one query (asked in the browser only).
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(not(feature = "hydrate"), allow(dead_code))]
enum Objects {
    Idle,
    Looking,
    Found(String, FoundObjects),
    Failed(String),
}

/// Pages and actions the palette always knows of, and one per Stack offered and per
/// kind that has a create form.
fn actions(kinds: &[ResourceKind], offers: &[StackOffer]) -> Vec<Choice> {
    let action = |label: String, detail: &str, path: String| Choice {
        section: "Actions",
        label,
        detail: detail.to_string(),
        path,
    };
    let mut all = vec![
        action("Home".into(), "what needs attention", "/".into()),
        action("Resource types".into(), "every CRD", "/crds".into()),
        action(
            "Provision".into(),
            "the Stacks you can ask for",
            "/provision".into(),
        ),
        action(
            "Everything not Ready".into(),
            "every kind that says whether it is ready",
            "/many?not_ready=true".into(),
        ),
        action(
            "What may I do here".into(),
            "your permissions in a namespace",
            portico_core::access::page_path(None),
        ),
    ];
    all.extend(offers.iter().map(|o| {
        action(
            format!("Provision {}", o.title),
            "a new Stack",
            crate::pages::stack::offer_path(&o.choice),
        )
    }));
    all.extend(kinds.iter().filter(|k| !k.flags.builtin).map(|k| {
        action(
            format!("Create {}", k.kind),
            &k.group,
            format!("{}/new", k.resource(None).page_path()),
        )
    }));
    all
}

/// Whether a found object has logs on its page (a Pod's, or every Pod's of a workload).
fn has_logs(o: &FoundObject) -> bool {
    matches!(
        (o.resource.group.as_str(), o.resource.plural.as_str()),
        ("", "pods")
            | (
                "apps",
                "deployments" | "statefulsets" | "daemonsets" | "replicasets"
            )
            | ("batch", "jobs")
    )
}

/// A saved view or starred object as a choice.
fn saved_choice(s: &Saved) -> Choice {
    Choice {
        section: if s.starred { "Starred" } else { "Saved views" },
        label: s.name.clone(),
        detail: s.place.clone(),
        path: s.path.clone(),
    }
}

/// Everything offered for `query`, in the order shown: with nothing typed, what the
/// person starred and saved, the objects opened last and the first actions; else what
/// they saved, kinds, objects, then actions, each best first.
pub fn choices(
    query: &str,
    kinds: &[ResourceKind],
    offers: &[StackOffer],
    found: Option<&FoundObjects>,
    saved: &[Saved],
    recent: &[Opened],
) -> Vec<Choice> {
    let actions = actions(kinds, offers);
    if query.split_whitespace().next().is_none() {
        return saved
            .iter()
            .map(saved_choice)
            .chain(recent.iter().map(|o| Choice {
                section: "Recent",
                label: o.name.clone(),
                detail: o.place.clone(),
                path: o.path.clone(),
            }))
            .chain(actions.into_iter().take(3))
            .collect();
    }
    let mut ranked_saved: Vec<(u32, &Saved)> = saved
        .iter()
        .filter_map(|s| rank(query, None, &s.name).map(|r| (r, s)))
        .collect();
    ranked_saved.sort_by_key(|(r, s)| (!s.starred, *r));
    // "Logs of deployment/web" for the first workloads found, in the order found.
    let logs: Vec<Choice> = found
        .into_iter()
        .flat_map(|f| f.objects.iter())
        .filter(|o| has_logs(o))
        .take(LOG_ACTIONS_SHOWN)
        .map(|o| Choice {
            section: "Actions",
            label: format!("Logs of {}/{}", o.kind.to_lowercase(), o.name),
            detail: o.namespace.clone().unwrap_or_default(),
            path: format!("{}#logs", o.page_path()),
        })
        .collect();
    let mut ranked_kinds: Vec<(u32, &ResourceKind)> = kinds
        .iter()
        .filter_map(|k| rank_kind(query, k).map(|r| (r, k)))
        .collect();
    ranked_kinds.sort_by(|(a, x), (b, y)| a.cmp(b).then_with(|| x.kind.cmp(&y.kind)));
    let mut ranked_actions: Vec<(u32, Choice)> = actions
        .into_iter()
        .filter_map(|a| rank(query, None, &a.label).map(|r| (r, a)))
        .collect();
    ranked_actions.sort_by_key(|(r, _)| *r);
    let kinds = ranked_kinds
        .into_iter()
        .take(KINDS_SHOWN)
        .map(|(_, k)| Choice {
            section: "Kinds",
            label: k.kind.clone(),
            detail: if k.group.is_empty() {
                k.plural.clone()
            } else {
                format!("{}.{}", k.plural, k.group)
            },
            path: k.resource(None).page_path(),
        });
    let objects = found
        .into_iter()
        .flat_map(|f| f.objects.iter())
        .take(OBJECTS_SHOWN)
        .map(|o| Choice {
            section: "Objects",
            label: o.name.clone(),
            detail: match &o.namespace {
                Some(ns) => format!("{} · {ns}", o.kind),
                None => o.kind.clone(),
            },
            path: o.page_path(),
        });
    ranked_saved
        .into_iter()
        .map(|(_, s)| saved_choice(s))
        .chain(kinds)
        .chain(objects)
        .chain(logs)
        .chain(
            ranked_actions
                .into_iter()
                .take(ACTIONS_SHOWN)
                .map(|(_, a)| a),
        )
        .collect()
}

/// Scrolls the list to the `i`-th choice when it is out of view.
fn reveal(i: usize) {
    #[cfg(feature = "hydrate")]
    if let Some(option) = document().get_element_by_id(&format!("palette-option-{i}")) {
        option.scroll_into_view_with_bool(false);
    }
    #[cfg(not(feature = "hydrate"))]
    let _ = i;
}

/// The palette's button in the top bar, the dialog, and the keys that open them.
#[component]
pub fn Palette() -> impl IntoView {
    let open = RwSignal::new(false);
    let help = RwSignal::new(false);
    let query = RwSignal::new(String::new());
    let selected = RwSignal::new(0usize);
    let objects = RwSignal::new(Objects::Idle);
    // Until the first question after opening is asked (see `find_objects`).
    let just_opened = StoredValue::new(false);
    let recent = RwSignal::new(Vec::<Opened>::new());
    let saved = RwSignal::new(Vec::<Saved>::new());
    let input = NodeRef::<leptos::html::Input>::new();
    // Kinds and offers are asked for once, the first time the palette opens.
    let wanted = RwSignal::new(false);
    let known = kinds_and_offers(wanted);
    let show = move || {
        help.set(false);
        recent.set(crate::recent::recall());
        saved.set(crate::saved::recall());
        just_opened.set_value(true);
        selected.set(0);
        open.set(true);
        if !wanted.get_untracked() {
            wanted.set(true);
        }
        #[cfg(feature = "hydrate")]
        request_animation_frame(move || {
            if let Some(field) = input.get_untracked() {
                let _ = field.focus();
                field.select();
            }
        });
    };
    let close = move || {
        open.set(false);
        help.set(false);
    };

    #[cfg(feature = "hydrate")]
    {
        listen_for_keys(open, help, show, close);
        find_objects_as_typed(query, open, objects, just_opened, selected);
    }

    let listed = Memo::new(move |_| {
        let typed = query.get();
        let (kinds, offers) = known.get().flatten().unwrap_or_default();
        objects.with(|o| {
            let found = match o {
                Objects::Found(asked, found) if *asked == typed => Some(found),
                _ => None,
            };
            choices(&typed, &kinds, &offers, found, &saved.get(), &recent.get())
        })
    });
    let navigate = leptos_router::hooks::use_navigate();
    let go = Callback::new(move |path: String| {
        close();
        query.set(String::new());
        navigate(&crate::base::url(&path), Default::default());
    });

    view! {
        <button
            type="button"
            class="palette-button"
            data-testid="palette-button"
            aria-keyshortcuts="Control+K Meta+K /"
            on:click=move |_| show()
        >
            "Go to…"<kbd>"Ctrl K"</kbd>
        </button>
        <Show when=move || open.get()>
            <div class="palette-backdrop" on:click=move |_| close()></div>
            <div class="palette" role="dialog" aria-modal="true" aria-label="Go to" data-testid="palette">
                {palette_input(input, query, selected, listed, go)}
                {choice_list(listed, selected, go)}
                <p class="palette-status subtle small" role="status" data-testid="palette-status">{move || objects.with(status_of)}</p>
            </div>
        </Show>
        <Show when=move || help.get()>
            <div class="palette-backdrop" on:click=move |_| close()></div>
            <div class="palette keys-help" role="dialog" aria-modal="true" aria-label="Keys" data-testid="keys-help">
                <h2>"Keys"</h2>
                {keys_list()}
            </div>
        </Show>
    }
}

/// The kinds and the Stacks offered, as the server lists them.
type KindsAndOffers = (Vec<ResourceKind>, Vec<StackOffer>);

/// The kinds and the Stacks offered, asked for once `wanted` turns true (the first
/// time the palette opens); `None` until then.
fn kinds_and_offers(wanted: RwSignal<bool>) -> LocalResource<Option<KindsAndOffers>> {
    LocalResource::new(move || {
        let asked = wanted.get();
        async move {
            if !asked {
                return None;
            }
            let kinds = list_resources().await.unwrap_or_default();
            let offers = stack_offers().await.unwrap_or_default();
            Some((kinds, offers))
        }
    })
}

/// The page's keys for the palette, for as long as it is mounted: Ctrl-K (⌘K) opens or
/// closes it, Escape closes it or the keys' help, and outside a text field `/` opens it
/// and `?` shows or hides the keys' help.
#[cfg(feature = "hydrate")]
fn listen_for_keys(
    open: RwSignal<bool>,
    help: RwSignal<bool>,
    show: impl Fn() + 'static,
    close: impl Fn() + 'static,
) {
    let keys = window_event_listener(leptos::ev::keydown, move |ev| {
        let command = (ev.ctrl_key() || ev.meta_key()) && ev.key().eq_ignore_ascii_case("k");
        if command {
            ev.prevent_default();
            if open.get_untracked() {
                close();
            } else {
                help.set(false);
                show();
            }
        } else if ev.key() == "Escape" && (open.get_untracked() || help.get_untracked()) {
            close();
        } else if !crate::keys::typing(&ev) && !ev.ctrl_key() && !ev.meta_key() && !ev.alt_key() {
            match ev.key().as_str() {
                "/" if !open.get_untracked() => {
                    ev.prevent_default();
                    show();
                }
                "?" => {
                    ev.prevent_default();
                    open.set(false);
                    help.update(|h| *h = !*h);
                }
                _ => {}
            }
        }
    });
    on_cleanup(move || keys.remove());
}

/// Asks the server for the objects matching what is typed, once it settles, while the
/// palette is open; the best match is chosen when the answer comes.
#[cfg(feature = "hydrate")]
fn find_objects_as_typed(
    query: RwSignal<String>,
    open: RwSignal<bool>,
    objects: RwSignal<Objects>,
    just_opened: StoredValue<bool>,
    selected: RwSignal<usize>,
) {
    // Each settled query is asked once; an answer to an older one is dropped.
    let asked = StoredValue::new(0u64);
    Effect::new(move |_| {
        let typed = query.get();
        // Every change makes an answer still on its way stale.
        asked.update_value(|n| *n += 1);
        if !open.get() || typed.split_whitespace().next().is_none() {
            objects.set(Objects::Idle);
            return;
        }
        let this = asked.get_value();
        objects.set(Objects::Looking);
        set_timeout(
            move || {
                if asked.try_get_value() != Some(this) {
                    return;
                }
                leptos::task::spawn_local(async move {
                    let namespace = crate::last_namespace::recall();
                    let opened = std::mem::take(&mut *just_opened.write_value());
                    let answer = match find_objects(typed.clone(), namespace, Some(opened)).await {
                        Ok(found) => Objects::Found(typed, found),
                        Err(e) => Objects::Failed(e.to_string()),
                    };
                    // The list changes under the choice: the best match is chosen.
                    if asked.try_get_value() == Some(this) {
                        let _ = objects.try_set(answer);
                        let _ = selected.try_set(0);
                    }
                });
            },
            SETTLE,
        );
    });
}

/// The keys in the palette's field: the arrows move through the matches (round from
/// the last to the first), Enter goes to the one chosen.
fn on_list_key(
    ev: &leptos::ev::KeyboardEvent,
    listed: Memo<Vec<Choice>>,
    selected: RwSignal<usize>,
    go: Callback<String>,
) {
    let count = listed.with_untracked(Vec::len);
    match ev.key().as_str() {
        "ArrowDown" if count > 0 => {
            ev.prevent_default();
            selected.update(|s| *s = (*s + 1) % count);
            reveal(selected.get_untracked());
        }
        "ArrowUp" if count > 0 => {
            ev.prevent_default();
            selected.update(|s| *s = (*s + count - 1) % count);
            reveal(selected.get_untracked());
        }
        "Enter" => {
            ev.prevent_default();
            let chosen = listed.with_untracked(|l| l.get(selected.get_untracked()).cloned());
            if let Some(choice) = chosen {
                go.run(choice.path);
            }
        }
        _ => {}
    }
}

/// What the status line says of the search for objects, if anything.
fn status_of(objects: &Objects) -> Option<String> {
    match objects {
        Objects::Looking => Some("Looking through what you may list…".to_string()),
        Objects::Failed(why) => Some(format!("Objects could not be searched: {why}")),
        Objects::Found(_, found) => {
            let mut said = format!(
                "{} of {} objects match.",
                found.matched, found.looked_through
            );
            for unseen in &found.unseen {
                said.push(' ');
                said.push_str(unseen);
            }
            Some(said)
        }
        Objects::Idle => None,
    }
}

/// The palette's field, a combobox over the matches: typing starts again from the
/// best match.
fn palette_input(
    input: NodeRef<leptos::html::Input>,
    query: RwSignal<String>,
    selected: RwSignal<usize>,
    listed: Memo<Vec<Choice>>,
    go: Callback<String>,
) -> impl IntoView {
    view! {
        <input
            node_ref=input
            class="palette-input"
            type="text"
            role="combobox"
            aria-expanded="true"
            aria-controls="palette-list"
            aria-autocomplete="list"
            aria-activedescendant=move || {
                let i = selected.get();
                (i < listed.with(Vec::len)).then(|| format!("palette-option-{i}"))
            }
            aria-label="Kind, object or action"
            placeholder="Kind, object (ns/name) or action…"
            autocomplete="off"
            spellcheck="false"
            prop:value=move || query.get()
            on:input=move |ev| {
                query.set(event_target_value(&ev));
                selected.set(0);
            }
            on:keydown=move |ev| on_list_key(&ev, listed, selected, go)
        />
    }
}

/// The matches, in the order listed, each section's first under its heading.
fn choice_list(
    listed: Memo<Vec<Choice>>,
    selected: RwSignal<usize>,
    go: Callback<String>,
) -> impl IntoView {
    view! {
        <ul class="palette-list" id="palette-list" role="listbox" aria-label="Matches">
            {move || {
                let mut last_section = "";
                listed.get().into_iter().enumerate().map(|(i, choice)| {
                    let heading = (choice.section != last_section).then_some(choice.section);
                    last_section = choice.section;
                    choice_option(i, choice, heading, selected, go)
                }).collect_view()
            }}
        </ul>
    }
}

/// The `i`-th match (with its section's heading when it is the section's first):
/// pointing at it chooses it, a click goes there.
fn choice_option(
    i: usize,
    choice: Choice,
    heading: Option<&'static str>,
    selected: RwSignal<usize>,
    go: Callback<String>,
) -> impl IntoView {
    let chosen = choice.path.clone();
    view! {
        <li
            id=format!("palette-option-{i}")
            role="option"
            class="palette-option"
            class:first-of-section=heading.is_some()
            aria-selected=move || (selected.get() == i).to_string()
            data-section=choice.section
            on:mousemove=move |_| if selected.get_untracked() != i { selected.set(i) }
            on:click=move |_| go.run(chosen.clone())
        >
            {heading.map(|h| view! { <span class="palette-section" aria-hidden="true">{h}</span> })}
            <span class="palette-label">{choice.label}</span>
            <span class="palette-detail">{choice.detail}</span>
        </li>
    }
}

/// The keys' help: the palette's keys, then a table's.
fn keys_list() -> impl IntoView {
    view! {
        <dl>
            <dt><kbd>"Ctrl K"</kbd>" "<kbd>"⌘ K"</kbd>" "<kbd>"/"</kbd></dt><dd>"Go to a kind, an object or an action"</dd>
            <dt><kbd>"↑"</kbd>" "<kbd>"↓"</kbd></dt><dd>"Move through the matches"</dd>
            <dt><kbd>"Enter"</kbd></dt><dd>"Go to the one chosen"</dd>
            <dt><kbd>"Esc"</kbd></dt><dd>"Close"</dd>
            <dt><kbd>"ns/name"</kbd></dt><dd>"Look in one namespace"</dd>
            <dt><kbd>"↑"</kbd>" "<kbd>"↓"</kbd>" "<kbd>"Home"</kbd>" "<kbd>"End"</kbd>" "<kbd>"PgUp"</kbd>" "<kbd>"PgDn"</kbd></dt><dd>"In a table (click it or Tab to it first): choose a row"</dd>
            <dt><kbd>"Enter"</kbd></dt><dd>"In a table: open the chosen row"</dd>
            <dt><kbd>"f"</kbd></dt><dd>"In a table: go to its first column's filter (Tab to the next)"</dd>
            <dt><kbd>"Esc"</kbd></dt><dd>"In a column's filter: back to the rows"</dd>
            <dt><kbd>"Alt ←"</kbd></dt><dd>"Back (the browser's own)"</dd>
            <dt><kbd>"?"</kbd></dt><dd>"These keys"</dd>
        </dl>
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use portico_core::find::FoundObject;
    use portico_core::resource::{KindFlags, ResourceRef};

    fn kind(group: &str, kind: &str, plural: &str, builtin: bool) -> ResourceKind {
        ResourceKind {
            group: group.into(),
            kind: kind.into(),
            plural: plural.into(),
            short_names: vec![],
            namespaced: true,
            versions: vec!["v1".into()],
            flags: KindFlags {
                builtin,
                ..KindFlags::default()
            },
        }
    }

    #[test]
    fn kinds_then_objects_then_actions() {
        let kinds = [
            kind("cert-manager.io", "Certificate", "certificates", false),
            kind("", "ConfigMap", "configmaps", true),
        ];
        let found = FoundObjects {
            objects: vec![FoundObject {
                resource: ResourceRef::new("cert-manager.io", "v1", "certificates"),
                kind: "Certificate".into(),
                namespace: Some("team".into()),
                name: "certified".into(),
            }],
            ..FoundObjects::default()
        };
        let listed = choices("cert", &kinds, &[], Some(&found), &[], &[]);
        let shown: Vec<(&str, &str, &str)> = listed
            .iter()
            .map(|c| (c.section, c.label.as_str(), c.path.as_str()))
            .collect();
        assert_eq!(
            shown,
            [
                ("Kinds", "Certificate", "/r/cert-manager.io/v1/certificates"),
                (
                    "Objects",
                    "certified",
                    "/r/cert-manager.io/v1/certificates/team/certified"
                ),
                (
                    "Actions",
                    "Create Certificate",
                    "/r/cert-manager.io/v1/certificates/new"
                ),
            ]
        );
    }

    #[test]
    fn nothing_typed_offers_the_objects_opened_last() {
        let recent = [Opened {
            name: "web".into(),
            place: "deployments · team".into(),
            path: "/r/apps/v1/deployments/team/web".into(),
        }];
        let saved = [Saved {
            name: "broken pods".into(),
            place: "pods".into(),
            path: "/r/v1/pods?f.STATUS=!Running".into(),
            starred: true,
            named: true,
        }];
        let listed = choices(" ", &[], &[], None, &saved, &recent);
        let sections: Vec<&str> = listed.iter().map(|c| c.section).collect();
        assert_eq!(sections[..2], ["Starred", "Recent"]);
        assert_eq!(listed.len(), 2 + 3);
        // Typed, a saved view comes first when its name matches.
        let listed = choices("broken", &[], &[], None, &saved, &recent);
        assert_eq!(
            listed.first().map(|c| c.path.as_str()),
            Some(saved[0].path.as_str())
        );
    }

    #[test]
    fn a_workload_found_offers_its_logs() {
        let found = FoundObjects {
            objects: vec![FoundObject {
                resource: ResourceRef::new("apps", "v1", "deployments"),
                kind: "Deployment".into(),
                namespace: Some("team".into()),
                name: "web".into(),
            }],
            ..FoundObjects::default()
        };
        let listed = choices("web", &[], &[], Some(&found), &[], &[]);
        let logs = listed.iter().find(|c| c.label == "Logs of deployment/web");
        assert_eq!(
            logs.map(|c| c.path.as_str()),
            Some("/r/apps/v1/deployments/team/web#logs")
        );
    }
}
