use leptos::prelude::*;

/// A message that something failed, and what to do about it.
#[component]
pub fn ErrorBanner(message: String) -> impl IntoView {
    view! { <div class="error-banner" role="alert">{message}</div> }
}
