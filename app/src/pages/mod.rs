//! One module per page. Pages fetch data through server functions and hand it to components.

pub mod access;
pub mod crds;
pub mod create;
pub mod home;
pub mod lazy;
pub mod many;
pub mod object;
pub mod pod_summary;
pub mod provision;
pub mod resource;
pub mod stack;

use leptos_router::NavigateOptions;
use leptos_router::params::ParamsMap;

use portico_core::resource::{ObjectKey, ResourceRef};

/// How a page writes its query string (`?ns=`, `?q=`…): in place of the current
/// history entry, without scrolling.
pub fn quiet() -> NavigateOptions {
    NavigateOptions {
        replace: true,
        scroll: false,
        ..Default::default()
    }
}

/// Sets (or, with `None`, removes) one parameter of the page's query string, as
/// [`quiet`] writes it: for parameters whose names are not known in advance
/// (a column's filter, `f.<column>`).
pub fn use_query_writer() -> impl Fn(String, Option<String>) + Clone + Send + Sync + 'static {
    let location = leptos_router::hooks::use_location();
    let navigate = leptos_router::hooks::use_navigate();
    move |key: String, value: Option<String>| {
        use leptos::prelude::GetUntracked;
        let mut query = location.query.get_untracked();
        query.remove(&key);
        if let Some(value) = value {
            query.insert(key, value);
        }
        let path = location.pathname.get_untracked();
        navigate(&format!("{path}{}", query.to_query_string()), quiet());
    }
}

/// A query parameter's text, or `None` when it is blank (as the URL leaves it out).
pub fn non_empty(s: Option<String>) -> Option<String> {
    s.filter(|s| !s.trim().is_empty())
}

/// The resource named by the `:group/:version/:plural` segments of a route.
pub fn resource_from_params(params: &ParamsMap) -> ResourceRef {
    ResourceRef::from_url(
        &params.get("group").unwrap_or_default(),
        &params.get("version").unwrap_or_default(),
        &params.get("plural").unwrap_or_default(),
    )
}

/// The object named by a route's `:group/:version/:plural/:namespace/:name` segments
/// (`_` for the namespace of a cluster-scoped object).
pub fn object_from_params(params: &ParamsMap) -> ObjectKey {
    ObjectKey {
        resource: resource_from_params(params),
        namespace: params.get("namespace").filter(|ns| ns != "_"),
        name: params.get("name").unwrap_or_default(),
    }
}
