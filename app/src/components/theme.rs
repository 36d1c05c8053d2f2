//! Light or dark: the system's choice unless the person picks one with the top bar's
//! button, kept in a cookie (not a secret, and only what they chose) so the server
//! writes it on `<html data-theme>` and no page shows the other one first.

use leptos::prelude::*;

/// The cookie holding the choice: `light` or `dark` (none: the system's).
pub const COOKIE: &str = "portico-theme";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Theme {
    System,
    Light,
    Dark,
}

impl Theme {
    /// The cookie's value (anything else: the system's).
    pub fn from_value(value: &str) -> Self {
        match value {
            "light" => Self::Light,
            "dark" => Self::Dark,
            _ => Self::System,
        }
    }

    /// `<html data-theme>`: what the stylesheet reads.
    pub fn attribute(self) -> &'static str {
        match self {
            Self::System => "system",
            Self::Light => "light",
            Self::Dark => "dark",
        }
    }

    /// The next one the button offers.
    pub fn next(self) -> Self {
        match self {
            Self::System => Self::Dark,
            Self::Dark => Self::Light,
            Self::Light => Self::System,
        }
    }

    fn label(self) -> &'static str {
        match self {
            Self::System => "◐ System",
            Self::Light => "☀ Light",
            Self::Dark => "☾ Dark",
        }
    }
}

/// The theme a `Cookie` header names.
pub fn from_cookie_header(header: &str) -> Theme {
    header
        .split(';')
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(name, _)| *name == COOKIE)
        .map_or(Theme::System, |(_, value)| Theme::from_value(value))
}

/// The theme chosen: from the request's cookie on the server, from the page in the
/// browser.
pub fn chosen() -> Theme {
    #[cfg(feature = "ssr")]
    {
        use_context::<http::request::Parts>()
            .and_then(|parts| {
                parts
                    .headers
                    .get_all(http::header::COOKIE)
                    .iter()
                    .filter_map(|v| v.to_str().ok())
                    .map(from_cookie_header)
                    .find(|t| *t != Theme::System)
            })
            .unwrap_or(Theme::System)
    }
    #[cfg(all(feature = "hydrate", not(feature = "ssr")))]
    {
        document()
            .document_element()
            .and_then(|html| html.get_attribute("data-theme"))
            .map_or(Theme::System, |value| Theme::from_value(&value))
    }
    #[cfg(not(any(feature = "ssr", feature = "hydrate")))]
    Theme::System
}

/// Shows `theme` on the page now, and keeps it for the next pages (a year).
#[cfg(feature = "hydrate")]
fn apply(theme: Theme) {
    use wasm_bindgen::JsCast;
    if let Some(html) = document().document_element() {
        let _ = html.set_attribute("data-theme", theme.attribute());
    }
    let cookie = match theme {
        Theme::System => format!("{COOKIE}=; Path=/; Max-Age=0; SameSite=Lax"),
        chosen => format!(
            "{COOKIE}={}; Path=/; Max-Age=31536000; SameSite=Lax",
            chosen.attribute()
        ),
    };
    if let Ok(html_document) = document().dyn_into::<web_sys::HtmlDocument>() {
        let _ = html_document.set_cookie(&cookie);
    }
}

/// The top bar's button: System, Dark, Light, in turn.
#[component]
pub fn ThemeToggle() -> impl IntoView {
    let theme = RwSignal::new(chosen());
    let pick = move |_| {
        let next = theme.get_untracked().next();
        theme.set(next);
        #[cfg(feature = "hydrate")]
        apply(next);
    };
    view! {
        <button
            type="button"
            class="theme-button"
            data-testid="theme-button"
            data-theme=move || theme.get().attribute()
            title=move || format!("Colours: {}. Click for {}.", theme.get().attribute(), theme.get().next().attribute())
            aria-label=move || format!("Colours: {}", theme.get().attribute())
            on:click=pick
        >
            {move || theme.get().label()}
        </button>
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cookie_names_the_theme_and_anything_else_is_the_systems() {
        assert_eq!(from_cookie_header("a=b; portico-theme=dark"), Theme::Dark);
        assert_eq!(from_cookie_header("portico-theme=light"), Theme::Light);
        assert_eq!(from_cookie_header("portico-theme=<script>"), Theme::System);
        assert_eq!(from_cookie_header(""), Theme::System);
        assert_eq!(Theme::System.next().next().next(), Theme::System);
    }
}
