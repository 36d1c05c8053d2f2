//! The virtual window: of however many rows, only those in view (and a few either
//! side) are rendered, with spacers standing in for the rest.

use leptos::prelude::*;

/// The height of one row in pixels; `style/main.css` gives `tr.row` this height, so
/// a scroll offset maps to a row index.
const ROW_PX: f64 = 34.0;
/// Rows rendered beyond the visible ones on each side, so fast scrolling shows rows
/// rather than blank space.
const OVERSCAN: usize = 10;
/// The window's height until the browser's is known.
const DEFAULT_VIEWPORT_PX: f64 = 1080.0;

#[derive(Clone, Copy)]
pub struct VirtualWindow {
    /// The scrolling element.
    pub scroller: NodeRef<leptos::html::Div>,
    scroll_top: RwSignal<f64>,
    viewport: RwSignal<f64>,
    /// The rows rendered, `start..end`, of `len`.
    pub range: Memo<(usize, usize, usize)>,
}

/// A window over `len` rows, following the scroller's offset and the browser
/// window's height.
pub fn use_virtual_window(len: Signal<usize>) -> VirtualWindow {
    let scroller = NodeRef::<leptos::html::Div>::new();
    let scroll_top = RwSignal::new(0.0_f64);
    let viewport = RwSignal::new(DEFAULT_VIEWPORT_PX);
    let range = Memo::new(move |_| {
        let len = len.get();
        let first = (scroll_top.get() / ROW_PX).floor().max(0.0) as usize;
        let shown = (viewport.get() / ROW_PX).ceil() as usize;
        let start = first.saturating_sub(OVERSCAN).min(len);
        let end = (first + shown + OVERSCAN).min(len);
        (start, end, len)
    });
    // The window can show at most the browser window's height of rows (the table's
    // own height, before its rows arrive, says nothing).
    #[cfg(feature = "hydrate")]
    Effect::new(move |_| {
        let height = web_sys::window()
            .and_then(|w| w.inner_height().ok())
            .and_then(|h| h.as_f64());
        if let Some(height) = height {
            viewport.set(height.max(ROW_PX));
        }
    });
    VirtualWindow {
        scroller,
        scroll_top,
        viewport,
        range,
    }
}

impl VirtualWindow {
    /// Follows the scroller's offset (its `scroll` event).
    pub fn scrolled(&self) {
        if let Some(el) = self.scroller.get_untracked() {
            self.scroll_top.set(f64::from(el.scroll_top()));
        }
    }

    /// Brings row `index` into view, scrolling as little as needed.
    pub fn reveal(&self, index: usize) {
        let Some(el) = self.scroller.get_untracked() else {
            return;
        };
        let top = index as f64 * ROW_PX;
        let height = f64::from(el.client_height());
        let current = f64::from(el.scroll_top());
        let header = ROW_PX;
        if top < current {
            el.set_scroll_top(top as i32);
        } else if top + ROW_PX + header > current + height {
            el.set_scroll_top((top + ROW_PX + header - height) as i32);
        }
    }

    /// Rows a PageUp or PageDown moves by: a window's height, less one.
    pub fn page_rows(&self) -> usize {
        ((self.viewport.get_untracked() / ROW_PX) as usize)
            .saturating_sub(1)
            .max(1)
    }

    /// The spacer above the rendered rows.
    pub fn space_above(&self) -> String {
        let (start, _, _) = self.range.get();
        format!("height: {}px", start as f64 * ROW_PX)
    }

    /// The spacer below the rendered rows.
    pub fn space_below(&self) -> String {
        let (_, end, len) = self.range.get();
        format!("height: {}px", (len - end) as f64 * ROW_PX)
    }
}
