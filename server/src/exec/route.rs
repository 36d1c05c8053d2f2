//! `GET /api/exec`: the terminal's WebSocket, admitted before it opens (same site, a
//! place among the person's terminals); what to run comes as its first message.

use axum::extract::ws::WebSocketUpgrade;
use axum::extract::{Extension, State};
use axum::http::{HeaderMap, Method, StatusCode};
use axum::response::{IntoResponse, Response};

use super::session;
use crate::cluster::caller::Caller;
use crate::live::LiveState;

/// The largest message the page may send: a paste, a resize, the first message.
const MAX_INPUT_MESSAGE: usize = 64 * 1024;
/// Keystrokes are small; the default 128 KiB read buffer would be most of a
/// terminal's memory.
const READ_BUFFER: usize = 4 * 1024;

pub async fn terminal_socket(
    State(state): State<LiveState>,
    Extension(caller): Extension<Caller>,
    headers: HeaderMap,
    upgrade: WebSocketUpgrade,
) -> Response {
    // Not bound by the same-origin policy: another site's page could open one with
    // this person's cookie, and type into their containers.
    if let Some(reason) = crate::auth::csrf::cross_site_reason(&Method::POST, &headers) {
        tracing::warn!(reason, "refused a cross-site terminal");
        return (
            StatusCode::FORBIDDEN,
            "Portico refuses terminals opened from other sites.",
        )
            .into_response();
    }
    let permit = match state
        .terminals
        .acquire_terminal(caller.person(), &state.limits)
    {
        Ok(permit) => permit,
        Err(refused) => return <(StatusCode, String)>::from(refused).into_response(),
    };
    upgrade
        .read_buffer_size(READ_BUFFER)
        .write_buffer_size(0)
        .max_message_size(MAX_INPUT_MESSAGE)
        .max_frame_size(MAX_INPUT_MESSAGE)
        .on_upgrade(move |socket| async move {
            session::serve(socket, state, caller, headers).await;
            drop(permit);
        })
}
