//! The pages whose code the browser fetches when one is first opened, not with the
//! app (`cargo leptos build --split`): the forms, with the schema form engine (YAML
//! comes later still, in a part of its own, when a page first shows it: [`crate::yaml`]);
//! an object's page, with its logs and Stack panels; and the catalog. A list of
//! resources, where most visits land, downloads none of it. The server renders these
//! pages as any other; in the browser, hydrating one waits for its part.
//!
//! Each route is a type of its own: the macro names the split part after it.

use leptos::prelude::*;
use leptos_router::{LazyRoute, lazy_route};

use super::create::{CreatePage, EditPage, ProvisionFormPage};
use super::object::ObjectPage;
use super::provision::ProvisionPage;

pub struct CreateRoute;

#[lazy_route]
impl LazyRoute for CreateRoute {
    fn data() -> Self {
        Self
    }

    fn view(_this: Self) -> AnyView {
        view! { <CreatePage/> }.into_any()
    }
}

pub struct EditRoute;

#[lazy_route]
impl LazyRoute for EditRoute {
    fn data() -> Self {
        Self
    }

    fn view(_this: Self) -> AnyView {
        view! { <EditPage/> }.into_any()
    }
}

pub struct ObjectRoute;

#[lazy_route]
impl LazyRoute for ObjectRoute {
    fn data() -> Self {
        Self
    }

    fn view(_this: Self) -> AnyView {
        view! { <ObjectPage/> }.into_any()
    }
}

pub struct ProvisionRoute;

#[lazy_route]
impl LazyRoute for ProvisionRoute {
    fn data() -> Self {
        Self
    }

    fn view(_this: Self) -> AnyView {
        view! { <ProvisionPage/> }.into_any()
    }
}

pub struct ProvisionFormRoute;

#[lazy_route]
impl LazyRoute for ProvisionFormRoute {
    fn data() -> Self {
        Self
    }

    fn view(_this: Self) -> AnyView {
        view! { <ProvisionFormPage/> }.into_any()
    }
}
