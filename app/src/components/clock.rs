//! Time on either side, and a clock that ticks while a view lives (ages in cells
//! count up by themselves).

#[cfg(feature = "hydrate")]
use std::time::Duration;

use leptos::prelude::*;

/// Seconds since the epoch, on either side.
fn now_seconds() -> i64 {
    #[cfg(feature = "hydrate")]
    {
        (js_sys::Date::now() / 1000.0) as i64
    }
    #[cfg(not(feature = "hydrate"))]
    {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs() as i64)
            .unwrap_or(0)
    }
}

/// The current time in seconds, ticking every second while the calling component
/// lives (ages in cells count up by themselves).
pub fn ticking_clock() -> RwSignal<i64> {
    let now = RwSignal::new(now_seconds());
    #[cfg(feature = "hydrate")]
    {
        let ticker =
            set_interval_with_handle(move || now.set(now_seconds()), Duration::from_secs(1)).ok();
        on_cleanup(move || {
            if let Some(t) = ticker {
                t.clear();
            }
        });
    }
    now
}
