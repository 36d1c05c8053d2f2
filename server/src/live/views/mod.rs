//! Opening a view for a viewer: the checks and shared feeds ([`open`]), whether they
//! may join ([`access`]), the live children of an object ([`children`]) and the home
//! page's view ([`home`], its lists chosen by [`home_scope`]).

pub(crate) mod access;
pub mod children;
pub(crate) mod home;
pub(crate) mod home_scope;
pub(crate) mod open;
