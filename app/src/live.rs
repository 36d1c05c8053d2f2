//! Reacting to server-sent events in the browser: an EventSource whose listed events
//! run a callback, closed when the calling component goes away.

/// Runs `callback` with the data of each of the named events from `url` (browser only;
/// a no-op while rendering on the server).
pub fn on_server_events(
    url: String,
    events: &'static [&'static str],
    callback: impl Fn(String) + 'static,
) {
    #[cfg(feature = "hydrate")]
    {
        use leptos::prelude::on_cleanup;
        use send_wrapper::SendWrapper;
        use wasm_bindgen::JsCast;
        use wasm_bindgen::closure::Closure;

        let Ok(source) = web_sys::EventSource::new(&url) else {
            return;
        };
        let handler =
            Closure::<dyn Fn(web_sys::MessageEvent)>::new(move |ev: web_sys::MessageEvent| {
                callback(ev.data().as_string().unwrap_or_default())
            });
        for name in events {
            let _ = source.add_event_listener_with_callback(name, handler.as_ref().unchecked_ref());
        }
        let held = SendWrapper::new((source, handler));
        on_cleanup(move || held.0.close());
    }
    #[cfg(not(feature = "hydrate"))]
    {
        let _ = (url, events, callback);
    }
}
