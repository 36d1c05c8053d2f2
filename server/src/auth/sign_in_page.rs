//! The frame of Portico's own sign-in pages (token form, single sign-on button,
//! problems), served before any session exists and so outside the Leptos app.

use axum::response::Html;

use super::AuthState;

/// A sign-in page around `body`, with `problem` above it.
pub(crate) fn auth_page(state: &AuthState, problem: Option<&str>, body: &str) -> Html<String> {
    let problem = problem
        .map(|p| {
            format!(
                r#"<div class="error-banner" role="alert">{}</div>"#,
                escape(p)
            )
        })
        .unwrap_or_default();
    Html(format!(
        r#"<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"/><meta name="viewport" content="width=device-width, initial-scale=1"/>
<title>Sign in · Portico</title><link rel="stylesheet" href="{stylesheet}"/></head>
<body><header class="topbar"><span class="brand"><span class="brand-mark" aria-hidden="true">◆</span>Portico</span></header>
<main class="login"><section class="panel">
<h1>Sign in</h1>
{problem}
{body}
</section></main></body></html>"#,
        stylesheet = escape(&state.base.url(&state.stylesheet))
    ))
}

pub(crate) fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}
