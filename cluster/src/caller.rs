//! Who a request acts as towards the API server: the portal itself, or a person's own
//! bearer token. Authentication (`auth`) decides which; every
//! client, feed and limit is keyed by it.

/// A bearer token; never printed.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Token(pub String);

impl std::fmt::Debug for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Token(<redacted>)")
    }
}

/// The identity a request acts with.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Caller {
    /// Local mode: the portal's own identity.
    Portal,
    /// Token and single sign-on modes: the person's own token (and the name the API
    /// server gave it).
    Bearer { name: String, token: Token },
}

impl Caller {
    /// A stable name for the credentials this caller acts with, for sharing live
    /// feeds (a token is named by its SHA-256, never by itself). `None` for the portal.
    pub fn feed_owner(&self) -> Option<String> {
        match self {
            Caller::Portal => None,
            Caller::Bearer { token, .. } => {
                let digest = ring::digest::digest(&ring::digest::SHA256, token.0.as_bytes());
                let hex: String = digest.as_ref().iter().map(|b| format!("{b:02x}")).collect();
                Some(format!("token:{hex}"))
            }
        }
    }

    /// The person, for per-person limits: a signed-in user by the name the API server
    /// gave their token (so new tokens do not make a new person). `None` for the portal.
    pub fn person(&self) -> Option<String> {
        self.user_name().map(|name| format!("token-user:{name}"))
    }

    /// The name the API server gave a signed-in person's token; `None` for the portal.
    pub fn user_name(&self) -> Option<&str> {
        match self {
            Caller::Portal => None,
            Caller::Bearer { name, .. } => Some(name),
        }
    }

    /// Who, for audit lines.
    pub fn name(&self) -> &str {
        match self {
            Caller::Portal => "portal (local mode)",
            Caller::Bearer { name, .. } => name,
        }
    }
}
