//! Keys pressed on a page: the palette's shortcuts and a table's keys leave alone what
//! is typed into a field.

/// Whether a key pressed in `event` was typed into a field (a text field, a select,
/// an editable element or a terminal), so it is text, not a shortcut.
pub fn typing(event: &leptos::ev::KeyboardEvent) -> bool {
    #[cfg(feature = "hydrate")]
    {
        use wasm_bindgen::JsCast;
        event
            .target()
            .and_then(|t| t.dyn_into::<web_sys::HtmlElement>().ok())
            .is_some_and(|e| {
                matches!(e.tag_name().as_str(), "INPUT" | "TEXTAREA" | "SELECT")
                    || e.is_content_editable()
                    || e.closest(".xterm").ok().flatten().is_some()
            })
    }
    #[cfg(not(feature = "hydrate"))]
    {
        let _ = event;
        false
    }
}
