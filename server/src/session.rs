//! Token-mode sessions: the user's bearer token sealed (AES-256-GCM) into an
//! HttpOnly, Secure, SameSite=Strict cookie, so it is never readable by page scripts
//! and never stored server-side. The key comes from a file (shared by replicas) or is
//! generated at start (sessions then end with the process).

use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ring::aead::{AES_256_GCM, Aad, LessSafeKey, NONCE_LEN, Nonce, UnboundKey};
use ring::rand::{SecureRandom, SystemRandom};

pub const SESSION_COOKIE: &str = "portico_session";
/// How long a sign-in lasts.
pub const SESSION_LIFETIME: Duration = Duration::from_secs(12 * 3600);

#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    #[error("cannot read the session key {path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("the session key must be 64 hex digits (32 bytes)")]
    BadKey,
    #[error("the operating system's random source failed")]
    Random,
}

/// A signed-in user's session as sealed in the cookie.
#[derive(Debug, PartialEq)]
pub struct Session {
    pub user: String,
    pub token: String,
}

pub struct SessionKey {
    key: LessSafeKey,
    rng: SystemRandom,
}

fn unhex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| {
            text.get(i..i + 2)
                .and_then(|h| u8::from_str_radix(h, 16).ok())
        })
        .collect()
}

fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

impl SessionKey {
    fn from_bytes(bytes: &[u8]) -> Result<Self, SessionError> {
        let key = UnboundKey::new(&AES_256_GCM, bytes).map_err(|_| SessionError::BadKey)?;
        Ok(Self {
            key: LessSafeKey::new(key),
            rng: SystemRandom::new(),
        })
    }

    /// A fresh key (sessions do not survive a restart or move between replicas).
    pub fn random() -> Result<Self, SessionError> {
        let mut bytes = [0u8; 32];
        SystemRandom::new()
            .fill(&mut bytes)
            .map_err(|_| SessionError::Random)?;
        Self::from_bytes(&bytes)
    }

    /// The key in `path` (64 hex digits), or a random one when there is no path.
    pub fn load(path: Option<&Path>) -> Result<Self, SessionError> {
        let Some(path) = path else {
            return Self::random();
        };
        let text = std::fs::read_to_string(path).map_err(|source| SessionError::Read {
            path: path.display().to_string(),
            source,
        })?;
        let bytes = unhex(text.trim())
            .filter(|b| b.len() == 32)
            .ok_or(SessionError::BadKey)?;
        Self::from_bytes(&bytes)
    }

    /// The cookie value for a session.
    pub fn seal(&self, session: &Session) -> Option<String> {
        let mut nonce = [0u8; NONCE_LEN];
        self.rng.fill(&mut nonce).ok()?;
        let mut data = format!("{}\n{}\n{}", now_secs(), session.user, session.token).into_bytes();
        self.key
            .seal_in_place_append_tag(Nonce::assume_unique_for_key(nonce), Aad::empty(), &mut data)
            .ok()?;
        let mut sealed = nonce.to_vec();
        sealed.extend_from_slice(&data);
        // base64url: a third smaller than hex, so longer (OIDC) tokens still fit.
        Some(URL_SAFE_NO_PAD.encode(sealed))
    }

    /// The session in a cookie value, if it is ours, intact and not expired.
    pub fn open(&self, cookie: &str) -> Option<Session> {
        let bytes = URL_SAFE_NO_PAD.decode(cookie).ok()?;
        if bytes.len() <= NONCE_LEN {
            return None;
        }
        let (nonce, sealed) = bytes.split_at(NONCE_LEN);
        let nonce = Nonce::try_assume_unique_for_key(nonce).ok()?;
        let mut sealed = sealed.to_vec();
        let plain = self
            .key
            .open_in_place(nonce, Aad::empty(), &mut sealed)
            .ok()?;
        let text = std::str::from_utf8(plain).ok()?;
        let mut parts = text.splitn(3, '\n');
        let issued: u64 = parts.next()?.parse().ok()?;
        let user = parts.next()?.to_string();
        let token = parts.next()?.to_string();
        (now_secs().saturating_sub(issued) < SESSION_LIFETIME.as_secs())
            .then_some(Session { user, token })
    }
}

/// The Set-Cookie value that stores a sealed session (or, with `None`, clears it).
/// Scoped to Portico's base path, so other applications on the host never get it.
pub fn cookie_header(value: Option<&str>) -> String {
    let path = match app::base::get() {
        "" => "/",
        base => base,
    };
    match value {
        Some(v) => format!(
            "{SESSION_COOKIE}={v}; Path={path}; HttpOnly; Secure; SameSite=Strict; Max-Age={}",
            SESSION_LIFETIME.as_secs()
        ),
        None => {
            format!("{SESSION_COOKIE}=; Path={path}; HttpOnly; Secure; SameSite=Strict; Max-Age=0")
        }
    }
}

/// Browsers drop cookies over about 4 KB; a session that would not fit is refused
/// with a message instead of silently failing to sign in.
pub const MAX_COOKIE_VALUE: usize = 3900;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sealed_sessions_open_only_with_their_key_and_intact() {
        let key = SessionKey::random().expect("key");
        let session = Session {
            user: "ada".into(),
            token: "tok-123".into(),
        };
        let cookie = key.seal(&session).expect("seal");
        assert!(!cookie.contains("tok-123"));
        assert_eq!(key.open(&cookie), Some(session));
        assert_eq!(
            SessionKey::random().expect("key").open(&cookie),
            None,
            "another key"
        );
        let mut tampered = cookie.clone();
        tampered.replace_range(40..41, if &cookie[40..41] == "A" { "B" } else { "A" });
        assert_eq!(key.open(&tampered), None);
        assert_eq!(key.open("zz"), None);
    }

    #[test]
    fn session_keys_are_64_hex_digits() {
        let dir = std::env::temp_dir().join(format!("portico-key-{}", std::process::id()));
        std::fs::write(&dir, "ab".repeat(32)).expect("write");
        assert!(SessionKey::load(Some(&dir)).is_ok());
        std::fs::write(&dir, "abc").expect("write");
        assert!(matches!(
            SessionKey::load(Some(&dir)),
            Err(SessionError::BadKey)
        ));
        let _ = std::fs::remove_file(&dir);
    }
}
