//! A terminal into a container, as the person (`GET /api/exec`): [`route`] admits the
//! socket, [`session`] carries keystrokes and output between it and the API server's
//! `pods/exec`, opened with the person's own token, until either side ends.
//!
//! A terminal has a WebSocket of its own rather than a view on the tab's live socket:
//! keystrokes and output are bytes both ways (binary frames, unchanged), a keystroke
//! must not wait behind a 50,000-row snapshot on the tab's socket, and closing the
//! terminal is closing its socket. Uses `watch` for what every live thing shares: the
//! person's places and memory budget, the access re-check and shutdown.

pub(crate) mod route;
mod session;
mod status;
