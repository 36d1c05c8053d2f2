//! The star beside a page's title: keeps the page (an object, or a table's view with
//! its URL's state) among the person's starred ones, in this browser (see `saved`).

use leptos::prelude::*;

/// A star for the page at `path` (without the base path), kept as `name` in `place`.
#[component]
pub fn StarButton(
    #[prop(into)] path: Signal<String>,
    #[prop(into)] name: Signal<String>,
    #[prop(into)] place: Signal<String>,
) -> impl IntoView {
    let starred = RwSignal::new(false);
    // Local storage is the browser's: read once hydrated, and whenever the page changes.
    Effect::new(move |_| {
        let path = path.get();
        starred.set(crate::saved::find(&path).is_some_and(|s| s.starred));
    });
    let toggle = move |_| {
        let now = crate::saved::toggle_star(
            &path.get_untracked(),
            &name.get_untracked(),
            &place.get_untracked(),
        );
        starred.set(now);
    };
    view! {
        <button
            type="button"
            class="star"
            class:starred=move || starred.get()
            data-testid="star"
            aria-pressed=move || starred.get().to_string()
            aria-label=move || if starred.get() { "Starred: click to unstar" } else { "Star this page" }
            title=move || if starred.get() { "Starred (kept in this browser)" } else { "Star: list it on the home page and in Go to…" }
            on:click=toggle
        >
            {move || if starred.get() { "★" } else { "☆" }}
        </button>
    }
}
