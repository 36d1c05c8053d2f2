//! One module per page. Pages fetch data through server functions and hand it to components.

pub mod crds;
pub mod create;
pub mod object;
pub mod resource;
