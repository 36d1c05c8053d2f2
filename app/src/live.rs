//! Server-sent events in the browser: one EventSource wrapper ([`ServerEvents`]) with a
//! handler per event name, closed when dropped, and [`on_server_events`] for a
//! component that only reacts to events until it goes away.

#[cfg(feature = "hydrate")]
pub use browser::ServerEvents;

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

        let Some(mut source) = ServerEvents::open(&url) else {
            return;
        };
        let callback = std::rc::Rc::new(callback);
        for name in events {
            let callback = callback.clone();
            source.on(name, move |data| callback(data));
        }
        let held = SendWrapper::new(source);
        on_cleanup(move || drop(held));
    }
    #[cfg(not(feature = "hydrate"))]
    {
        let _ = (url, events, callback);
    }
}

#[cfg(feature = "hydrate")]
mod browser {
    use wasm_bindgen::JsCast;
    use wasm_bindgen::closure::Closure;
    use web_sys::{EventSource, MessageEvent};

    /// An open EventSource and the handlers it holds; closed when dropped.
    pub struct ServerEvents {
        source: EventSource,
        handlers: Vec<Closure<dyn FnMut(MessageEvent)>>,
    }

    impl ServerEvents {
        pub fn open(url: &str) -> Option<Self> {
            Some(Self {
                source: EventSource::new(url).ok()?,
                handlers: Vec::new(),
            })
        }

        /// Runs `handler` with the data of every `name` event.
        pub fn on(&mut self, name: &str, mut handler: impl FnMut(String) + 'static) {
            self.listen(name, move |ev| {
                handler(ev.data().as_string().unwrap_or_default())
            });
        }

        /// Runs `handler` on every connection error, saying whether the browser gave
        /// up for good (a refused connection: 401, 403) rather than reconnecting.
        pub fn on_error(&mut self, mut handler: impl FnMut(bool) + 'static) {
            let source = self.source.clone();
            self.listen("error", move |_| {
                handler(source.ready_state() == EventSource::CLOSED)
            });
        }

        fn listen(&mut self, name: &str, handler: impl FnMut(MessageEvent) + 'static) {
            let closure = Closure::<dyn FnMut(MessageEvent)>::new(handler);
            let _ = self
                .source
                .add_event_listener_with_callback(name, closure.as_ref().unchecked_ref());
            self.handlers.push(closure);
        }
    }

    impl Drop for ServerEvents {
        fn drop(&mut self) {
            self.source.close();
        }
    }
}
