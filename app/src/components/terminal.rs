//! A terminal into a container, docked at the foot of an object's page: pick the
//! container and the command, type, resize, copy and paste; its end says the exit
//! code. The object page provides it ([`TerminalDock`]), so a change of the Pod that
//! redraws the page leaves a running terminal alone. xterm.js and the socket live
//! in `public/portico-terminal.js`, added to the page only once a terminal opens.

use leptos::prelude::*;
use portico_core::live::terminal::{TerminalCommand, TerminalEvent, TerminalSize, TerminalStart};

/// Which Pod the page's terminal is into, if any.
#[derive(Clone, Copy)]
pub struct TerminalDock {
    target: RwSignal<Option<(String, String)>>,
}

impl TerminalDock {
    pub fn provide() {
        provide_context(Self {
            target: RwSignal::new(None),
        });
    }
}

/// Opens the page's terminal into `pod`; `compact` in a table's row.
#[component]
pub fn TerminalButton(
    namespace: String,
    pod: String,
    #[prop(optional)] compact: bool,
) -> impl IntoView {
    let dock = use_context::<TerminalDock>();
    let class = if compact {
        "small-btn"
    } else {
        "button secondary"
    };
    dock.map(|dock| {
        view! {
            <button type="button" class=class data-testid="terminal-open"
                title="A shell in one of this Pod's containers, as you"
                on:click=move |_| {
                    // The same Pod's terminal, already open, is kept (and its shell).
                    let wanted = Some((namespace.clone(), pod.clone()));
                    if dock.target.with_untracked(|open| *open != wanted) {
                        dock.target.set(wanted);
                    }
                }>
                "Terminal"
            </button>
        }
    })
}

/// What runs: bash where there is one, else sh; sh; or a command typed in.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Choice {
    Shell,
    Sh,
    Other,
}

#[derive(Clone, PartialEq, Eq)]
enum Status {
    Connecting,
    Running(String),
    Ended { code: Option<i32>, message: String },
    Refused(String),
}

impl Status {
    /// What the status line says.
    fn text(&self) -> String {
        match self {
            Status::Connecting => "Opening…".to_string(),
            Status::Running(container) => format!(
                "Running in container {container}, as you. Ctrl+Shift+C copies the selection, Ctrl+Shift+V pastes."
            ),
            Status::Ended { message, .. } => message.clone(),
            Status::Refused(message) => message.clone(),
        }
    }

    /// The screen's `data-state`, which the browser tests wait on.
    fn state(&self) -> &'static str {
        match self {
            Status::Connecting => "connecting",
            Status::Running(_) => "running",
            Status::Ended { .. } => "ended",
            Status::Refused(_) => "refused",
        }
    }

    /// The screen's `data-exit-code`: the code an ended command gave, if it gave one.
    fn exit_code(&self) -> String {
        match self {
            Status::Ended {
                code: Some(code), ..
            } => code.to_string(),
            _ => String::new(),
        }
    }
}

/// The command `choice` runs (`typed`, split as a shell would, for Other), or what to
/// tell the person when the typed one cannot run.
fn command_for(choice: Choice, typed: &str) -> Result<TerminalCommand, String> {
    match choice {
        Choice::Shell => Ok(TerminalCommand::Shell),
        Choice::Sh => Ok(TerminalCommand::Program(vec!["/bin/sh".into()])),
        Choice::Other => match shell_words::split(typed) {
            Ok(argv) if !argv.is_empty() => Ok(TerminalCommand::Program(argv)),
            Ok(_) => Err("Type a command to run.".into()),
            Err(error) => Err(format!(
                "The command does not read as a shell would: {error}."
            )),
        },
    }
}

/// Shows what the terminal's server said: the container it runs in (and the Pod's
/// others to choose from), how it ended, or why it was refused.
fn show_event(
    event: TerminalEvent,
    containers: RwSignal<Vec<String>>,
    chosen: RwSignal<Option<String>>,
    status: RwSignal<Status>,
) {
    match event {
        TerminalEvent::Started {
            container,
            containers: all,
        } => {
            containers.set(all);
            chosen.set(Some(container.clone()));
            status.set(Status::Running(container));
        }
        TerminalEvent::Ended { code, message } => status.set(Status::Ended { code, message }),
        TerminalEvent::Refused { message } => status.set(Status::Refused(message)),
    }
}

#[component]
pub fn TerminalPanel() -> impl IntoView {
    let Some(dock) = use_context::<TerminalDock>() else {
        return ().into_any();
    };
    let chosen = RwSignal::new(None::<String>);
    let containers = RwSignal::new(Vec::<String>::new());
    let choice = RwSignal::new(Choice::Shell);
    let typed = RwSignal::new(String::new());
    let status = RwSignal::new(Status::Connecting);
    let attempt = RwSignal::new(0u32);
    let host = NodeRef::<leptos::html::Div>::new();
    // Held in the browser only (a JS handle); on the server, where a render may end
    // on another thread, it is nothing and thread-safe.
    let session = browser::SessionStore::new_with_storage(None);
    // Which opening is wanted now: one whose glue loads after a newer one began (or
    // after the dock closed) does not open.
    let opening = StoredValue::new(0u32);
    Effect::new(move |previous: Option<Option<(String, String)>>| {
        attempt.track();
        let target = dock.target.get();
        // A new Pod starts from its default container and a shell; in this same
        // effect, so the opening below never sees the last Pod's choices.
        if previous.is_some_and(|previous| previous != target) {
            chosen.set(None);
            containers.set(Vec::new());
            choice.set(Choice::Shell);
        }
        session.set_value(None);
        opening.update_value(|n| *n += 1);
        let this = opening.get_value();
        let (Some((namespace, pod)), Some(host)) = (target.clone(), host.get_untracked()) else {
            return target;
        };
        let picked = choice.get_untracked();
        let command = match typed.with_untracked(|typed| command_for(picked, typed)) {
            Ok(command) => command,
            Err(refusal) => {
                status.set(Status::Refused(refusal));
                return target;
            }
        };
        let start = TerminalStart {
            namespace,
            pod,
            container: chosen.get_untracked(),
            command,
            // The page's own size replaces this once the terminal is drawn.
            size: TerminalSize { cols: 80, rows: 24 },
        };
        status.set(Status::Connecting);
        let on_event = move |event: TerminalEvent| show_event(event, containers, chosen, status);
        let current = move || opening.try_get_value() == Some(this);
        browser::Session::open(&host, &start, on_event, session, current);
        target
    });
    view! {
        <div class="terminal-spacer" hidden=move || dock.target.with(Option::is_none)></div>
        <section class="terminal-dock" data-testid="terminal" aria-label="Terminal"
            hidden=move || dock.target.with(Option::is_none)>
            {terminal_head(dock, chosen, containers, choice, typed, attempt)}
            <p class="terminal-status" data-testid="terminal-status"
                class:problem=move || matches!(status.get(), Status::Refused(_))>
                {move || status.with(Status::text)}
            </p>
            <div class="terminal-screen" node_ref=host data-testid="terminal-screen"
                data-state=move || status.with(Status::state)
                data-exit-code=move || status.with(Status::exit_code)></div>
        </section>
    }
    .into_any()
}

/// The terminal's head: its Pod, the container and the command to run (a typed one
/// run on submit), open again and close. A change of container or command opens the
/// terminal again (`attempt`), but for Other, which waits for the typed command.
fn terminal_head(
    dock: TerminalDock,
    chosen: RwSignal<Option<String>>,
    containers: RwSignal<Vec<String>>,
    choice: RwSignal<Choice>,
    typed: RwSignal<String>,
    attempt: RwSignal<u32>,
) -> impl IntoView {
    let reopen = move || attempt.update(|n| *n += 1);
    let pod = move || dock.target.get().map(|(_, pod)| pod).unwrap_or_default();
    view! {
        <div class="terminal-head">
            <strong>"Terminal"</strong>
            <span class="mono">{pod}</span>
            <label class="inline-control">"Container "
                <select data-testid="terminal-container"
                    prop:value=move || chosen.get().unwrap_or_default()
                    on:change=move |ev| {
                        chosen.set(Some(event_target_value(&ev)));
                        reopen();
                    }>
                    {move || containers.get().into_iter().map(|name| view! {
                        <option value=name.clone()>{name.clone()}</option>
                    }).collect_view()}
                </select>
            </label>
            <label class="inline-control">"Command "
                <select data-testid="terminal-command"
                    on:change=move |ev| {
                        let picked = match event_target_value(&ev).as_str() {
                            "sh" => Choice::Sh,
                            "other" => Choice::Other,
                            _ => Choice::Shell,
                        };
                        choice.set(picked);
                        if picked != Choice::Other {
                            reopen();
                        }
                    }>
                    <option value="shell" selected=move || choice.get() == Choice::Shell>"bash, else sh"</option>
                    <option value="sh" selected=move || choice.get() == Choice::Sh>"/bin/sh"</option>
                    <option value="other" selected=move || choice.get() == Choice::Other>"Other…"</option>
                </select>
            </label>
            <Show when=move || choice.get() == Choice::Other>
                <form class="terminal-other" on:submit=move |ev| {
                    ev.prevent_default();
                    reopen();
                }>
                    <input type="text" class="mono" data-testid="terminal-typed" placeholder="mysql -uroot"
                        aria-label="Command to run" bind:value=typed/>
                    <button type="submit" class="small-btn">"Run"</button>
                </form>
            </Show>
            <span class="terminal-actions">
                <button type="button" class="small-btn" data-testid="terminal-reopen"
                    on:click=move |_| reopen()>"Open again"</button>
                <button type="button" class="small-btn" data-testid="terminal-close"
                    on:click=move |_| dock.target.set(None)>"Close"</button>
            </span>
        </div>
    }
}

#[cfg(feature = "hydrate")]
mod browser {
    use leptos::prelude::*;
    use portico_core::live::terminal::{TerminalEvent, TerminalStart};
    use std::cell::RefCell;
    use std::rc::Rc;
    use wasm_bindgen::JsCast;
    use wasm_bindgen::prelude::*;

    /// The script holding xterm.js' glue (`public/portico-terminal.js`), added to the
    /// page when a terminal first opens: nothing of it is in the page's bundle.
    const SCRIPT_ID: &str = "portico-terminal-script";

    pub type SessionStore = StoredValue<Option<Session>, LocalStorage>;

    /// An open terminal; closed when dropped (a new one, the dock closed, the page left).
    pub struct Session {
        handle: JsValue,
        _on_event: Closure<dyn FnMut(String)>,
    }

    impl Session {
        /// Opens a terminal into `host` once the glue is loaded, stored in `into` if
        /// it is still the one wanted then (`current` says so).
        pub fn open(
            host: &web_sys::HtmlDivElement,
            start: &TerminalStart,
            on_event: impl FnMut(TerminalEvent) + 'static,
            into: SessionStore,
            current: impl Fn() -> bool + 'static,
        ) {
            let (host, start) = (host.clone(), start.clone());
            let mut on_event = on_event;
            with_glue(move |glue| {
                if !current() {
                    return;
                }
                let Some(glue) = glue else {
                    return on_event(TerminalEvent::Refused {
                        message: "The terminal's script could not load: open it again, or reload the page.".into(),
                    });
                };
                let session = Self::opened(&glue, &host, &start, on_event);
                let _ = into.try_set_value(session);
            });
        }

        fn opened(
            glue: &JsValue,
            host: &web_sys::HtmlDivElement,
            start: &TerminalStart,
            mut on_event: impl FnMut(TerminalEvent) + 'static,
        ) -> Option<Self> {
            let start = serde_json::to_string(start)
                .ok()
                .and_then(|text| js_sys::JSON::parse(&text).ok())?;
            let on_event = Closure::<dyn FnMut(String)>::new(move |text: String| {
                // Anything else is not the server's: ignored.
                if let Ok(event) = serde_json::from_str::<TerminalEvent>(&text) {
                    on_event(event);
                }
            });
            let args = js_sys::Array::of4(
                host,
                &JsValue::from_str(&crate::base::get()),
                &start,
                on_event.as_ref(),
            );
            let handle = glue_function(glue, "openTerminal")?
                .apply(glue, &args)
                .ok()?;
            Some(Self {
                handle,
                _on_event: on_event,
            })
        }
    }

    impl Drop for Session {
        fn drop(&mut self) {
            if let Some(glue) = loaded_glue()
                && let Some(close) = glue_function(&glue, "closeTerminal")
            {
                let _ = close.call1(&glue, &self.handle);
            }
        }
    }

    fn loaded_glue() -> Option<JsValue> {
        let window = web_sys::window()?;
        js_sys::Reflect::get(&window, &JsValue::from_str("porticoTerminal"))
            .ok()
            .filter(|glue| glue.is_object())
    }

    fn glue_function(glue: &JsValue, name: &str) -> Option<js_sys::Function> {
        js_sys::Reflect::get(glue, &JsValue::from_str(name))
            .ok()?
            .dyn_into()
            .ok()
    }

    /// Runs `then` with the glue, adding its script to the page first if need be;
    /// with `None` if the script fails to load (it is taken out, to be tried again).
    fn with_glue(then: impl FnOnce(Option<JsValue>) + 'static) {
        if let Some(glue) = loaded_glue() {
            return then(Some(glue));
        }
        let Some(document) = web_sys::window().and_then(|w| w.document()) else {
            return then(None);
        };
        let script = match document.get_element_by_id(SCRIPT_ID) {
            Some(script) => script,
            None => {
                let Ok(script) = document.create_element("script") else {
                    return then(None);
                };
                script.set_id(SCRIPT_ID);
                let _ = script.set_attribute("type", "module");
                let _ = script.set_attribute("src", &crate::base::url("/portico-terminal.js"));
                if let Some(head) = document.head() {
                    let _ = head.append_child(&script);
                }
                script
            }
        };
        // One of the two fires: whichever does takes `then`.
        let then = Rc::new(RefCell::new(Some(then)));
        let loaded = {
            let then = then.clone();
            Closure::once_into_js(move || {
                let taken = then.borrow_mut().take();
                if let Some(then) = taken {
                    then(loaded_glue());
                }
            })
        };
        let failed = {
            let script = script.clone();
            Closure::once_into_js(move || {
                script.remove();
                let taken = then.borrow_mut().take();
                if let Some(then) = taken {
                    then(None);
                }
            })
        };
        let _ = script.add_event_listener_with_callback("load", loaded.unchecked_ref());
        let _ = script.add_event_listener_with_callback("error", failed.unchecked_ref());
    }
}

#[cfg(not(feature = "hydrate"))]
mod browser {
    use leptos::prelude::*;
    use portico_core::live::terminal::{TerminalEvent, TerminalStart};

    /// On the server a terminal never opens: it is the browser's.
    pub struct Session;

    pub type SessionStore = StoredValue<Option<Session>>;

    impl Session {
        pub fn open(
            _host: &leptos::web_sys::HtmlDivElement,
            _start: &TerminalStart,
            _on_event: impl FnMut(TerminalEvent) + 'static,
            _into: SessionStore,
            _current: impl Fn() -> bool + 'static,
        ) {
        }
    }
}
