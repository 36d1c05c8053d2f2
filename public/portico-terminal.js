// The terminal in the page: xterm.js (fetched from the site's /xterm/) and its own
// WebSocket to /api/exec. The page adds this script only when a terminal first
// opens (app/src/components/terminal.rs), so no other page loads any of it. The
// Rust side draws the controls and is told each event as the server's JSON text;
// bytes go between xterm.js and the socket here, never through the wasm.

let loaded = null;

function load(base) {
  if (!loaded) {
    const css = document.createElement("link");
    css.rel = "stylesheet";
    css.href = `${base}/xterm/xterm.css`;
    document.head.appendChild(css);
    loaded = Promise.all([
      import(`${base}/xterm/xterm.mjs`),
      import(`${base}/xterm/addon-fit.mjs`),
    ]);
  }
  return loaded;
}

// Opens a terminal in `host` for `start` (the server's TerminalStart, as JSON, without
// its size: the size is the host's). `onEvent` gets each of the server's events as
// JSON text; a socket that closes without an end gets one made here.
function openTerminal(host, base, start, onEvent) {
  const handle = { closed: false, socket: null, term: null, observer: null };
  // Nothing is said once the page closed it: its listener is gone by then.
  const say = (text) => {
    if (!handle.closed) onEvent(text);
  };
  const ended = (message) =>
    say(JSON.stringify({ type: "ended", code: null, message }));
  load(base)
    .then(([{ Terminal }, { FitAddon }]) => {
      if (handle.closed) return;
      const term = new Terminal({
        convertEol: false,
        cursorBlink: true,
        fontFamily: "ui-monospace, SFMono-Regular, Menlo, Consolas, monospace",
        fontSize: 13,
        scrollback: 5000,
        theme: { background: "#0f141b" },
      });
      const fit = new FitAddon();
      term.loadAddon(fit);
      host.replaceChildren();
      term.open(host);
      fit.fit();
      handle.term = term;
      // Ctrl+Shift+C and Ctrl+Shift+V copy and paste, as in a desktop terminal
      // (Ctrl+C stays the command's interrupt).
      term.attachCustomKeyEventHandler((e) => {
        if (e.type !== "keydown" || !e.ctrlKey || !e.shiftKey) return true;
        if (e.code === "KeyC") {
          const text = term.getSelection();
          if (text) navigator.clipboard?.writeText(text);
          return false;
        }
        if (e.code === "KeyV") {
          navigator.clipboard?.readText().then((text) => term.paste(text));
          return false;
        }
        return true;
      });
      const scheme = location.protocol === "https:" ? "wss:" : "ws:";
      const socket = new WebSocket(`${scheme}//${location.host}${base}/api/exec`);
      socket.binaryType = "arraybuffer";
      handle.socket = socket;
      let endSaid = false;
      const encoder = new TextEncoder();
      socket.onopen = () => {
        const size = { cols: term.cols, rows: term.rows };
        socket.send(JSON.stringify({ ...start, size }));
      };
      socket.onmessage = (message) => {
        if (typeof message.data === "string") {
          try {
            const kind = JSON.parse(message.data).type;
            if (kind === "ended" || kind === "refused") endSaid = true;
          } catch (_) {
            return;
          }
          say(message.data);
        } else if (!handle.closed) {
          term.write(new Uint8Array(message.data));
        }
      };
      socket.onclose = () => {
        if (!endSaid) {
          ended("The connection to Portico ended.");
        }
      };
      const send = (data) => {
        if (socket.readyState === WebSocket.OPEN) socket.send(data);
      };
      term.onData((data) => send(encoder.encode(data)));
      term.onBinary((data) => {
        send(Uint8Array.from(data, (c) => c.charCodeAt(0)));
      });
      term.onResize(({ cols, rows }) =>
        send(JSON.stringify({ type: "resize", size: { cols, rows } })),
      );
      handle.observer = new ResizeObserver(() => fit.fit());
      handle.observer.observe(host);
      term.focus();
    })
    .catch((error) => ended(`The terminal could not load: ${error}`));
  return handle;
}

// Closes the terminal's socket (the server then ends the command) and lets go of it.
function closeTerminal(handle) {
  handle.closed = true;
  handle.observer?.disconnect();
  if (handle.socket && handle.socket.readyState <= WebSocket.OPEN) {
    handle.socket.close();
  }
  handle.term?.dispose();
}

// Gives the terminal the keyboard.
function focusTerminal(handle) {
  handle.term?.focus();
}

window.porticoTerminal = { openTerminal, closeTerminal, focusTerminal };
