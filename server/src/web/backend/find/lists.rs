//! Reads, as the person, the names of every object they may list: each kind across
//! the cluster where they may list it there, else in each of their namespaces whose
//! rules review grants the list (at most [`MAX_NAMESPACES`]). Names only: the lists
//! ask for metadata (`PartialObjectMetadataList`), a page at a time.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use futures::StreamExt;
use kube::api::{Api, DynamicObject, ListParams};
use portico_core::resource::{ResourceKind, ResourceRef};

use crate::auth::rules::{grants, rules_in};
use crate::cluster::error::{ApiError, Failure};

/// Objects kept for one person at most; past it the rest is not looked through.
pub const MAX_OBJECTS: usize = 100_000;
/// Namespaces looked in one by one, for kinds the person may not list everywhere.
pub const MAX_NAMESPACES: usize = 50;
/// Namespaces whose rules are asked for at most.
const MAX_NAMESPACE_REVIEWS: usize = 500;
/// Lists (or reviews) running at once for one person.
const AT_ONCE: usize = 8;
/// Objects per page of a list.
const PAGE: u32 = 500;

/// Kinds whose objects are made by others for every object people name (an Event per
/// happening, an Endpoints and EndpointSlices per Service, a ControllerRevision per
/// rollout): listed, they would bury the objects people look for.
const DERIVED: &[(&str, &str)] = &[
    ("", "events"),
    ("events.k8s.io", "events"),
    ("", "endpoints"),
    ("discovery.k8s.io", "endpointslices"),
    ("apps", "controllerrevisions"),
];

/// One object's place and name.
pub struct Named {
    /// Its kind, as an index into [`Names::kinds`].
    pub kind: u16,
    pub namespace: Option<Arc<str>>,
    pub name: Box<str>,
}

/// What the person may list, by name.
#[derive(Default)]
pub struct Names {
    pub kinds: Vec<(ResourceRef, String)>,
    pub objects: Vec<Named>,
    pub unseen: Vec<String>,
}

/// Where one kind is listed.
#[derive(Clone)]
struct Place {
    kind: u16,
    namespace: Option<Arc<str>>,
}

/// Every object `client`'s person may list among `kinds`, by name. `hint` is a
/// namespace to look in when they may not list namespaces.
pub async fn read(client: &kube::Client, kinds: Vec<ResourceKind>, hint: Option<String>) -> Names {
    let kinds: Vec<ResourceKind> = kinds
        .into_iter()
        .filter(|k| !DERIVED.contains(&(k.group.as_str(), k.plural.as_str())))
        .take(usize::from(u16::MAX))
        .collect();
    let mut names = Names {
        kinds: kinds
            .iter()
            .map(|k| (k.resource(None), k.kind.clone()))
            .collect(),
        ..Names::default()
    };
    let everywhere: Vec<Place> = (0..names.kinds.len())
        .filter_map(|i| u16::try_from(i).ok())
        .map(|kind| Place {
            kind,
            namespace: None,
        })
        .collect();
    let refused = list_all(client, &mut names, everywhere).await;
    let narrow: Vec<u16> = refused
        .into_iter()
        .filter(|k| kinds.get(usize::from(*k)).is_some_and(|k| k.namespaced))
        .collect();
    if narrow.is_empty() {
        return names;
    }
    let namespaces = match crate::live::views::home_scope::namespaces(client).await {
        Ok(all) => all,
        Err(_) => match hint.clone() {
            Some(ns) => vec![ns],
            None => {
                names.unseen.push(
                    "You may not list every kind across namespaces, nor list namespaces: open a namespace once to find its objects too."
                        .to_string(),
                );
                return names;
            }
        },
    };
    // The namespace hinted (the one typed, or last worked in) is looked in first.
    let mut namespaces = namespaces;
    if let Some(ns) = hint
        && let Some(at) = namespaces.iter().position(|n| *n == ns)
    {
        let first = namespaces.remove(at);
        namespaces.insert(0, first);
    }
    let places = places_in(client, &names.kinds, &narrow, namespaces, &mut names.unseen).await;
    list_all(client, &mut names, places).await;
    names
}

/// Lists each place into `names` (until [`MAX_OBJECTS`]); the kinds refused across the
/// cluster are returned, other failures said in `names.unseen`.
async fn list_all(client: &kube::Client, names: &mut Names, places: Vec<Place>) -> Vec<u16> {
    let kinds = names.kinds.clone();
    // Names read so far by every list, those still running included: AT_ONCE lists
    // each stopping at MAX_OBJECTS alone would hold AT_ONCE times as many.
    let read = AtomicUsize::new(0);
    let read = &read;
    let mut lists = futures::stream::iter(places)
        .map(|place| {
            let resource = kinds.get(usize::from(place.kind)).map(|(r, _)| r.clone());
            async move {
                let found = match &resource {
                    Some(r) => list_names(client, r, place.namespace.as_deref(), read).await,
                    None => Ok(vec![]),
                };
                (place, found)
            }
        })
        .buffer_unordered(AT_ONCE);
    let mut refused = Vec::new();
    let mut full = false;
    // One copy of each namespace's name, however many objects are in it.
    let mut shared: HashMap<String, Arc<str>> = HashMap::new();
    while let Some((place, found)) = lists.next().await {
        match found {
            Ok(found) => {
                for (namespace, name) in found {
                    if names.objects.len() >= MAX_OBJECTS {
                        full = true;
                        break;
                    }
                    let namespace = namespace.map(|ns| {
                        shared
                            .entry(ns)
                            .or_insert_with_key(|ns| Arc::from(ns.as_str()))
                            .clone()
                    });
                    names.objects.push(Named {
                        kind: place.kind,
                        namespace,
                        name: name.into_boxed_str(),
                    });
                }
            }
            Err(e) if place.namespace.is_none() && e.failure() == Failure::Forbidden => {
                refused.push(place.kind);
            }
            Err(e) => {
                let kind = kinds.get(usize::from(place.kind)).map(|(_, k)| k.as_str());
                let place = place
                    .namespace
                    .as_deref()
                    .map(|ns| format!(" in namespace {ns}"));
                names.unseen.push(format!(
                    "{}{} could not be listed: {e}",
                    kind.unwrap_or("A kind"),
                    place.unwrap_or_default()
                ));
            }
        }
        if full {
            break;
        }
    }
    // Every name pushed was counted in `read`, so this also covers a list cut short
    // by the others' names.
    if read.load(Ordering::Relaxed) >= MAX_OBJECTS {
        names.unseen.push(format!(
            "Portico looked through the first {MAX_OBJECTS} objects you may list."
        ));
    }
    refused
}

/// The namespace and name of every object of `resource` (in `namespace`, or
/// everywhere), until `read` (the names every list has read) reaches [`MAX_OBJECTS`].
async fn list_names(
    client: &kube::Client,
    resource: &ResourceRef,
    namespace: Option<&str>,
    read: &AtomicUsize,
) -> Result<Vec<(Option<String>, String)>, ApiError> {
    let ar = super::super::objects::api_resource(resource);
    let api: Api<DynamicObject> = match namespace {
        Some(ns) => Api::namespaced_with(client.clone(), ns, &ar),
        None => Api::all_with(client.clone(), &ar),
    };
    let mut names = Vec::new();
    let mut params = ListParams::default().limit(PAGE);
    loop {
        if read.load(Ordering::Relaxed) >= MAX_OBJECTS {
            return Ok(names);
        }
        let page = api.list_metadata(&params).await?;
        let before = names.len();
        names.extend(page.items.into_iter().filter_map(|o| {
            let name = o.metadata.name?;
            Some((o.metadata.namespace, name))
        }));
        let this_page = names.len() - before;
        let all = read.fetch_add(this_page, Ordering::Relaxed) + this_page;
        match page.metadata.continue_ {
            Some(token) if !token.is_empty() && all < MAX_OBJECTS => {
                params = params.continue_token(&token);
            }
            _ => return Ok(names),
        }
    }
}

/// The (kind, namespace) pairs to list among `narrow` kinds: each namespace's rules
/// review says which kinds the person may list there.
async fn places_in(
    client: &kube::Client,
    kinds: &[(ResourceRef, String)],
    narrow: &[u16],
    namespaces: Vec<String>,
    unseen: &mut Vec<String>,
) -> Vec<Place> {
    let total = namespaces.len();
    let asked = total.min(MAX_NAMESPACE_REVIEWS);
    let mut granted: Vec<(String, Vec<u16>)> =
        futures::stream::iter(namespaces.into_iter().take(asked))
            .map(|ns: String| async move {
                let rules = rules_in(client, &ns).await.unwrap_or_default();
                let listable: Vec<u16> = narrow
                    .iter()
                    .copied()
                    .filter(|k| {
                        kinds
                            .get(usize::from(*k))
                            .is_some_and(|(r, _)| rules.iter().any(|rule| grants(rule, r, "list")))
                    })
                    .collect();
                (!listable.is_empty()).then_some((ns, listable))
            })
            .buffered(AT_ONCE)
            .filter_map(std::future::ready)
            .collect()
            .await;
    if granted.len() > MAX_NAMESPACES || total > asked {
        unseen.push(format!(
            "Portico looked in {MAX_NAMESPACES} of your namespaces: type a namespace and a slash (team/) to look in another."
        ));
    }
    granted.truncate(MAX_NAMESPACES);
    let mut shared: HashMap<String, Arc<str>> = HashMap::new();
    granted
        .into_iter()
        .flat_map(|(ns, listable)| {
            let ns = shared
                .entry(ns.clone())
                .or_insert_with(|| Arc::from(ns))
                .clone();
            listable.into_iter().map(move |kind| Place {
                kind,
                namespace: Some(ns.clone()),
            })
        })
        .collect()
}
