//! How live a view is: connected, reconnecting (with the attempt and since when the
//! view is stale), stale because the server cannot serve it, or refused and why.

use leptos::prelude::*;

use crate::live::{ViewState, badge, socket_state};

#[component]
pub fn LiveBadge(
    view: RwSignal<ViewState>,
    /// A page with several live views tells their badges apart by this.
    #[prop(default = "live-status")]
    testid: &'static str,
) -> impl IntoView {
    let socket = socket_state();
    let shown = Memo::new(move |_| view.with(|v| socket.with(|s| badge(s, v))));
    view! {
        <span class=move || shown.with(|b| b.0) data-testid=testid role="status">
            {move || shown.with(|b| b.1.clone())}
        </span>
    }
}
