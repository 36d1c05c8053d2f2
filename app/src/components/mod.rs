//! Components receive data; they never fetch it (the navigation and the palette, which
//! are the whole app's frame, are the exceptions).

pub mod bindings;
pub mod clock;
pub mod copy_button;
pub mod crd_table;
pub mod error_banner;
pub mod form;
pub mod kept_view;
pub mod live_badge;
pub mod live_table;
pub mod log_parts;
pub mod namespace_picker;
pub mod palette;
pub mod pod_logs;
pub mod resource_nav;
pub mod star;
pub mod terminal;
pub mod theme;
pub mod usage;
pub mod workload_logs;
