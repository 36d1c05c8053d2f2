//! Time on either side, and a clock that ticks while a view lives (ages in cells
//! count up by themselves).

use leptos::prelude::*;
#[cfg(feature = "hydrate")]
use leptos_use_interval_fn::use_interval_fn;

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
/// lives (ages in cells count up by themselves). The interval goes with the component;
/// nothing ticks on the server.
pub fn ticking_clock() -> RwSignal<i64> {
    let now = RwSignal::new(now_seconds());
    #[cfg(feature = "hydrate")]
    let _ticking = use_interval_fn(move || now.set(now_seconds()), 1_000);
    now
}
