//! The HTML document, the app frame and its routes.

use leptos::prelude::*;
use leptos_meta::{HashedStylesheet, MetaTags, Title, provide_meta_context};
use leptos_router::{
    Lazy, StaticSegment,
    components::{A, Route, Router, Routes},
    path,
};

use crate::base::url;
use crate::components::palette::Palette;
use crate::components::resource_nav::ResourceNav;
use crate::components::theme::ThemeToggle;
use crate::pages::access::AccessPage;
use crate::pages::crds::CrdsPage;
use crate::pages::home::HomePage;
use crate::pages::lazy::{CreateRoute, EditRoute, ObjectRoute, ProvisionFormRoute, ProvisionRoute};
use crate::pages::many::ManyPage;
use crate::pages::resource::ResourcePage;

/// Portico's mark: a blue tile with a white arch.
const FAVICON: &str = "data:image/svg+xml,%3Csvg xmlns='http://www.w3.org/2000/svg' viewBox='0 0 16 16'%3E%3Crect width='16' height='16' rx='3' fill='%233b5bdb'/%3E%3Cpath d='M4 13V7a4 4 0 0 1 8 0v6h-2V7a2 2 0 0 0-4 0v6z' fill='white'/%3E%3C/svg%3E";

/// The document the server renders around [`App`].
pub fn shell(options: LeptosOptions) -> impl IntoView {
    view! {
        <!DOCTYPE html>
        <html lang="en" data-theme=crate::components::theme::chosen().attribute()>
            <head>
                <meta charset="utf-8"/>
                <meta name="viewport" content="width=device-width, initial-scale=1"/>
                // Inline, so no page asks for a /favicon.ico that is not there.
                <link rel="icon" href=FAVICON/>
                <AutoReload options=options.clone()/>
                // The stylesheet's name carries its content hash in release builds.
                <HashedStylesheet options=options.clone() id="portico" root=crate::base::get()/>
                <HydrationScripts options root=crate::base::get()/>
                <MetaTags/>
            </head>
            <body data-base=crate::base::get() data-kept-for=crate::browser_store::kept_for()>
                <App/>
            </body>
        </html>
    }
}

/// Who is signed in, and the way out (a form POST: the CSRF guard applies, and the
/// session ends on the server, not only in this browser).
#[component]
fn SignedIn() -> impl IntoView {
    let who = Resource::new(|| (), |_| crate::api::signed_in_as());
    view! {
        <Transition fallback=|| ()>
            {move || who.get().and_then(Result::ok).flatten().map(|name| view! {
                <form class="signed-in" method="post" action=url("/auth/logout")>
                    <span class="who" data-testid="signed-in-as" title="Your Kubernetes user name">{name}</span>
                    <button type="submit" class="button" data-testid="sign-out">"Sign out"</button>
                </form>
            })}
        </Transition>
    }
}

#[component]
pub fn App() -> impl IntoView {
    provide_meta_context();
    view! {
        <Title formatter=|page: String| if page.is_empty() { "Portico".to_string() } else { format!("{page} · Portico") }/>
        <Router base=crate::base::get()>
            <header class="topbar">
                <a class="brand" href=url("/")>
                    <span class="brand-mark" aria-hidden="true">"◆"</span>
                    "Portico"
                </a>
                <nav class="topnav">
                    <A href=url("/") exact=true>"Home"</A>
                    <A href=url("/crds")>"Resource types"</A>
                    <A href=url("/provision")>"Provision"</A>
                    <A href=url("/many?not_ready=true")>"Not Ready"</A>
                </nav>
                <Palette/>
                <ThemeToggle/>
                <SignedIn/>
            </header>
            <div class="frame">
                <ResourceNav/>
                <main class="content">
                    <Routes fallback=|| view! { <p class="empty">"Page not found."</p> }>
                        <Route path=StaticSegment("") view=HomePage/>
                        <Route path=StaticSegment("crds") view=CrdsPage/>
                        <Route path=StaticSegment("access") view=AccessPage/>
                        <Route path=StaticSegment("many") view=ManyPage/>
                        // Lists are in the app; the rest comes when first opened.
                        <Route path=StaticSegment("provision") view={Lazy::<ProvisionRoute>::new()}/>
                        <Route path=path!("/provision/new") view={Lazy::<ProvisionFormRoute>::new()}/>
                        <Route path=path!("/r/:group/:version/:plural") view=ResourcePage/>
                        <Route path=path!("/r/:group/:version/:plural/new") view={Lazy::<CreateRoute>::new()}/>
                        <Route path=path!("/r/:group/:version/:plural/:namespace/:name") view={Lazy::<ObjectRoute>::new()}/>
                        <Route path=path!("/r/:group/:version/:plural/:namespace/:name/edit") view={Lazy::<EditRoute>::new()}/>
                    </Routes>
                </main>
            </div>
        </Router>
    }
}
