//! A button that copies a text to the clipboard and says so for a moment.

use leptos::prelude::*;

#[component]
pub fn CopyButton(#[prop(into)] text: Signal<String>, testid: &'static str) -> impl IntoView {
    let copied = RwSignal::new(false);
    let copy = move |_| {
        #[cfg(not(feature = "hydrate"))]
        let _ = (text, copied);
        #[cfg(feature = "hydrate")]
        if let Some(window) = web_sys::window() {
            // The browser asks nothing for a write on a click; a refusal leaves the
            // label as it was.
            let _promise = window
                .navigator()
                .clipboard()
                .write_text(&text.get_untracked());
            copied.set(true);
            set_timeout(
                move || copied.set(false),
                std::time::Duration::from_millis(1500),
            );
        }
    };
    view! {
        <button type="button" class="small-btn" data-testid=testid on:click=copy>
            {move || if copied.get() { "Copied" } else { "Copy" }}
        </button>
    }
}
