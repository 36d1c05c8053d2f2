//! Which lists the home page follows for a person: each kind across the cluster where
//! they may watch it there, else in each of their namespaces (those they may list and,
//! by a rules review, read any of the kinds in), each kind's access asked for; and a
//! sentence for what they may not see. Their namespaces are kept a while
//! ([`crate::live::budgets::lookups::TheirNamespaces`]): a second tab asks nothing again.

use futures::StreamExt;
use k8s_openapi::api::core::v1::Namespace;
use kube::Api;
use kube::api::ListParams;
use portico_core::overview::Watched;

use crate::auth::rules::{grants, rules_in};
use crate::cluster::caller::Caller;
use crate::live::LiveState;

/// Namespaces looked in one by one, for a person who may not watch the whole
/// cluster: each is a feed per kind, counted among their feeds.
pub(in crate::live) const MAX_NAMESPACES: usize = 50;
/// Namespaces asked about (whether the person reads there: a rules review each) at
/// most, and reviews at once.
const MAX_NAMESPACE_REVIEWS: usize = 500;
pub(in crate::live) const REVIEWS_AT_ONCE: usize = 16;

/// One list followed: a kind in one namespace, or in all.
#[derive(Clone)]
pub(in crate::live) struct Scope {
    pub watched: Watched,
    pub namespace: Option<String>,
}

/// What to follow, and a sentence for each kind the person may not see (somewhere).
pub(in crate::live) async fn scopes(
    state: &LiveState,
    caller: &Caller,
    client: &kube::Client,
    namespace: Option<&str>,
) -> (Vec<Scope>, Vec<String>) {
    let may = |watched: Watched, namespace: Option<String>| {
        let resource = watched.resource();
        async move {
            let ok = crate::live::views::access::may_watch(
                state,
                caller,
                &resource.group,
                &resource.plural,
                namespace.as_deref(),
            )
            .await;
            (Scope { watched, namespace }, ok)
        }
    };
    if let Some(ns) = namespace {
        let asked = Watched::ALL.map(|w| may(w, Some(ns.to_string())));
        let answers = futures::future::join_all(asked).await;
        return split(answers, |kinds| {
            format!("You may not see {kinds} in namespace {ns}.")
        });
    }
    let whole = futures::future::join_all(Watched::ALL.map(|w| may(w, None))).await;
    let (mut scopes, narrow): (Vec<_>, Vec<_>) = whole.into_iter().partition(|(_, ok)| *ok);
    let mut unseen = Vec::new();
    let narrow: Vec<Watched> = narrow.into_iter().map(|(s, _)| s.watched).collect();
    if !narrow.is_empty() {
        match namespaces(client).await.ok() {
            Some(names) => {
                let (readable, total, reviewed) =
                    state.their_namespaces.of(caller, &narrow, state.limits.recheck, || {
                        theirs(client, names, &narrow)
                    })
                    .await;
                if readable.len() > MAX_NAMESPACES || total > reviewed {
                    unseen.push(format!(
                        "Portico looks in {MAX_NAMESPACES} of your namespaces for {}: pick a namespace to see another.",
                        spoken(&narrow)
                    ));
                }
                let asked = readable
                    .iter()
                    .take(MAX_NAMESPACES)
                    .flat_map(|ns| narrow.iter().map(|w| may(*w, Some(ns.clone()))));
                let answers = futures::future::join_all(asked).await;
                let refused: Vec<Watched> = narrow
                    .iter()
                    .copied()
                    .filter(|w| !answers.iter().any(|(s, ok)| *ok && s.watched == *w))
                    .collect();
                if !refused.is_empty() {
                    unseen.push(format!("You may not see {} in any namespace.", spoken(&refused)));
                }
                scopes.extend(answers.into_iter().filter(|(_, ok)| *ok));
            }
            None => unseen.push(format!(
                "You may not see {} across namespaces, nor list namespaces: pick your namespace to see them.",
                spoken(&narrow)
            )),
        }
    }
    (scopes.into_iter().map(|(s, _)| s).collect(), unseen)
}

/// The allowed scopes, and one sentence for the refused kinds.
fn split(
    answers: Vec<(Scope, bool)>,
    sentence: impl Fn(&str) -> String,
) -> (Vec<Scope>, Vec<String>) {
    let (allowed, refused): (Vec<_>, Vec<_>) = answers.into_iter().partition(|(_, ok)| *ok);
    let refused: Vec<Watched> = refused.into_iter().map(|(s, _)| s.watched).collect();
    let unseen = if refused.is_empty() {
        vec![]
    } else {
        vec![sentence(&spoken(&refused))]
    };
    (allowed.into_iter().map(|(s, _)| s).collect(), unseen)
}

/// "Pods, Deployments and DaemonSets".
fn spoken(kinds: &[Watched]) -> String {
    let names: Vec<&str> = kinds.iter().map(|w| w.spoken()).collect();
    match names.split_last() {
        Some((last, [])) => (*last).to_string(),
        Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
        None => String::new(),
    }
}

/// `namespace`, if `client`'s person may watch any of `kinds` there, as its rules
/// review says (not the last word, which is each kind's access review: enough to tell
/// a person's namespaces from the rest).
async fn reads_any(client: &kube::Client, namespace: String, kinds: &[Watched]) -> Option<String> {
    let rules = rules_in(client, &namespace).await?;
    kinds
        .iter()
        .any(|kind| {
            rules
                .iter()
                .any(|rule| grants(rule, &kind.resource(), "watch"))
        })
        .then_some(namespace)
}

/// The namespaces `client`'s person may list, sorted (the Namespace picker's list
/// too).
pub(crate) async fn namespaces(client: &kube::Client) -> Result<Vec<String>, kube::Error> {
    let api: Api<Namespace> = Api::all(client.clone());
    let list = api.list_metadata(&ListParams::default()).await?;
    let mut names: Vec<String> = list
        .items
        .into_iter()
        .filter_map(|n| n.metadata.name)
        .collect();
    names.sort();
    Ok(names)
}

/// Their namespaces among `names` (at most [`MAX_NAMESPACE_REVIEWS`] asked, a few at
/// a time): those, how many there were, and how many were asked about.
async fn theirs(
    client: &kube::Client,
    names: Vec<String>,
    kinds: &[Watched],
) -> (Vec<String>, usize, usize) {
    let total = names.len();
    let reviewed = total.min(MAX_NAMESPACE_REVIEWS);
    let readable = futures::stream::iter(names.into_iter().take(reviewed))
        .map(|ns| reads_any(client, ns, kinds))
        .buffered(REVIEWS_AT_ONCE)
        .filter_map(|ns| async move { ns })
        .collect()
        .await;
    (readable, total, reviewed)
}
