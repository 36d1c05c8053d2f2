//! What a Pod's log view and a workload's merged log draw alike: a line with what
//! matches the filter marked, the empty and ended notes, the count of lines kept, and
//! the download made in the browser.

use leptos::prelude::*;

use portico_core::live::log_buffer::{LogBuffer, LogLine, MAX_LINES, highlight};

#[component]
pub fn LogRow(line: LogLine, term: String) -> impl IntoView {
    // A marker is the view's own word, not the container's: nothing in it is marked.
    let term = if line.marker { String::new() } else { term };
    view! {
        <div class="log-line" class:log-marker=line.marker data-testid="log-line">
            <Highlighted text=line.text term=term/>
        </div>
    }
}

/// `text` with what matches `term` marked.
#[component]
pub fn Highlighted(text: std::sync::Arc<str>, term: String) -> impl IntoView {
    highlight(&text, &term)
        .into_iter()
        .map(|(text, hit)| {
            if hit {
                view! { <mark>{text}</mark> }.into_any()
            } else {
                text.into_any()
            }
        })
        .collect_view()
}

/// "No lines yet." while a view has none and has not ended.
#[component]
pub fn LogEmpty(buffer: RwSignal<LogBuffer>, ended: RwSignal<Option<String>>) -> impl IntoView {
    move || {
        buffer.with(LogBuffer::is_empty).then(|| view! {
            <div class="log-empty subtle">{move || if ended.with(Option::is_none) { "No lines yet." } else { "" }}</div>
        })
    }
}

/// How many lines a view keeps, and how many it dropped to stay within its bounds.
#[component]
pub fn LogCount(buffer: RwSignal<LogBuffer>) -> impl IntoView {
    view! {
        <span class="subtle small" data-testid="log-count">{move || buffer.with(|b| {
            let dropped = if b.dropped() > 0 {
                format!(" · {} older lines dropped (the view keeps {MAX_LINES} at most)", b.dropped())
            } else {
                String::new()
            };
            let noun = if b.len() == 1 { "line" } else { "lines" };
            format!("{} {noun}{dropped}", b.len())
        })}</span>
    }
}

/// Why a view ended, with a way to follow it again (`again` bumped).
#[component]
pub fn LogEndedNote(ended: RwSignal<Option<String>>, again: RwSignal<u32>) -> impl IntoView {
    move || {
        ended.get().map(|message| view! {
            <span class="log-end" data-testid="log-ended">
                {message}" "
                <button type="button" class="log-action" on:click=move |_| again.update(|n| *n += 1)>"Follow again"</button>
            </span>
        })
    }
}

/// Offers `text` as a file download, made in the browser (a Blob link).
pub fn save(file_name: &str, text: &str) {
    #[cfg(feature = "hydrate")]
    {
        use wasm_bindgen::JsCast;
        let parts = js_sys::Array::of1(&wasm_bindgen::JsValue::from_str(text));
        let options = web_sys::BlobPropertyBag::new();
        options.set_type("text/plain;charset=utf-8");
        let Ok(blob) = web_sys::Blob::new_with_str_sequence_and_options(&parts, &options) else {
            return;
        };
        let Ok(url) = web_sys::Url::create_object_url_with_blob(&blob) else {
            return;
        };
        let link = document()
            .create_element("a")
            .ok()
            .and_then(|a| a.dyn_into::<web_sys::HtmlAnchorElement>().ok());
        if let Some(link) = link {
            link.set_href(&url);
            link.set_download(file_name);
            link.click();
        }
        // Revoked a little later: some browsers read the URL after click() returns.
        set_timeout(
            move || {
                let _ = web_sys::Url::revoke_object_url(&url);
            },
            std::time::Duration::from_secs(10),
        );
    }
    #[cfg(not(feature = "hydrate"))]
    {
        let _ = (file_name, text);
    }
}
