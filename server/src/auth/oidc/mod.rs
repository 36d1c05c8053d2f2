//! Single sign-on with an OpenID Connect provider: the authorization code flow with
//! PKCE, state and nonce; the ID token becomes the person's bearer token to the API
//! server (which trusts the issuer, so RBAC bound to the provider's users and groups
//! decides everything), kept in the sealed session and renewed before it expires.

pub mod provider;
pub mod refresh;
pub mod sign_in;

pub use provider::{OidcError, OidcProvider, OidcSettings};
