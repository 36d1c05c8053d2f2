//! Sessions (token and single sign-on modes): the user's bearer token (and, after
//! single sign-on, the provider's refresh token) sealed (AES-256-GCM) into an
//! HttpOnly, Secure, SameSite=Strict cookie, so it is never readable by page scripts
//! and never stored server-side. Keys come from a file (shared by replicas; several,
//! for rotation) or are generated at start (sessions then end with the process). A
//! session lasts 12 hours at most and ends after 30 minutes unused; signing out ends
//! it on the replica that served the sign-out at once, everywhere after the idle time.

use portico_core::base_path::BasePath;
use std::collections::HashMap;
use std::path::Path;
use std::sync::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ring::aead::{AES_256_GCM, Aad, LessSafeKey, NONCE_LEN, Nonce, UnboundKey};
use ring::rand::{SecureRandom, SystemRandom};

/// How long a sign-in lasts at most.
pub const SESSION_LIFETIME: Duration = Duration::from_secs(12 * 3600);
/// A session unused for this long ends: a copied cookie does not outlive its owner's
/// last visit by more.
pub const IDLE_LIFETIME: Duration = Duration::from_secs(30 * 60);
/// A session in use is renewed (a fresh cookie) once its last renewal is this old.
const RENEW_AFTER: Duration = Duration::from_secs(5 * 60);

/// The session cookie's name. `__Host-` (the browser then accepts it only from this
/// host, over HTTPS, for path `/`) when Portico serves at the root; under a base path,
/// which that prefix forbids, `__Secure-`: still set only over HTTPS, so a sibling
/// subdomain served over plain HTTP cannot plant a session of its choosing.
pub fn cookie_name(base: &BasePath) -> &'static str {
    if base.is_root() {
        "__Host-portico_session"
    } else {
        "__Secure-portico_session"
    }
}

#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    #[error("cannot read the session key {path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error(
        "the session key file must hold one or more keys of 64 hex digits (32 bytes), one per line; the first seals new sessions"
    )]
    BadKey,
    #[error("the operating system's random source failed")]
    Random,
}

/// A signed-in user's session as sealed in the cookie.
#[derive(Clone, PartialEq)]
pub struct Session {
    /// Random; names the session for sign-out.
    pub id: String,
    pub user: String,
    pub token: String,
    /// When it was signed in and last renewed (seconds since the epoch).
    pub issued: u64,
    pub renewed: u64,
    /// Single sign-on: when `token` (the provider's ID token) expires and how it is
    /// renewed. `None` for a pasted token, which is used as it is until refused.
    pub provider: Option<ProviderTokens>,
}

/// What a single sign-on session needs to keep its ID token fresh.
#[derive(Clone, PartialEq)]
pub struct ProviderTokens {
    /// When the ID token expires (seconds since the epoch).
    pub expires: u64,
    /// When to ask the provider for a new one: before `expires`, so no request is
    /// made with a token about to lapse.
    pub refresh_at: u64,
    /// The provider's refresh token (none: the person signs in again at `expires`).
    pub refresh: Option<String>,
}

// Tokens never print (a log line, a panic message).
impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("id", &self.id)
            .field("user", &self.user)
            .field("issued", &self.issued)
            .field("renewed", &self.renewed)
            .field("provider", &self.provider)
            .finish_non_exhaustive()
    }
}

impl std::fmt::Debug for ProviderTokens {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProviderTokens")
            .field("expires", &self.expires)
            .field("refresh_at", &self.refresh_at)
            .finish_non_exhaustive()
    }
}

impl Session {
    /// The person acting with the session's token.
    pub fn into_caller(self) -> crate::cluster::caller::Caller {
        crate::cluster::caller::Caller::Bearer {
            name: self.user,
            token: crate::cluster::caller::Token(self.token),
        }
    }

    /// Whether the ID token is due for renewal at `now`.
    pub fn due_for_refresh(&self, now: u64) -> bool {
        self.provider.as_ref().is_some_and(|p| now >= p.refresh_at)
    }

    /// Whether the ID token has lapsed at `now` (a pasted token never does here).
    pub fn token_expired(&self, now: u64) -> bool {
        self.provider.as_ref().is_some_and(|p| now >= p.expires)
    }
}

/// One sealing key and its id (the start of its SHA-256), carried in the cookie so
/// that a key can be replaced without signing everyone out.
struct SealingKey {
    id: String,
    key: LessSafeKey,
}

/// The session keys: the first seals, all open. Sign-outs are remembered until the
/// sessions they ended would have expired anyway.
pub struct SessionKey {
    keys: Vec<SealingKey>,
    rng: SystemRandom,
    signed_out: Mutex<HashMap<String, u64>>,
    /// Counts sign-outs, so live sockets look again at once rather than at their
    /// next check.
    sign_outs: tokio::sync::watch::Sender<u64>,
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

/// Seconds since the epoch.
pub fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

fn sealing_key(bytes: &[u8]) -> Result<SealingKey, SessionError> {
    let key = UnboundKey::new(&AES_256_GCM, bytes).map_err(|_| SessionError::BadKey)?;
    let digest = ring::digest::digest(&ring::digest::SHA256, bytes);
    let id = digest
        .as_ref()
        .iter()
        .take(4)
        .map(|b| format!("{b:02x}"))
        .collect();
    Ok(SealingKey {
        id,
        key: LessSafeKey::new(key),
    })
}

impl SessionKey {
    fn from_keys(keys: Vec<SealingKey>) -> Result<Self, SessionError> {
        if keys.is_empty() {
            return Err(SessionError::BadKey);
        }
        Ok(Self {
            keys,
            rng: SystemRandom::new(),
            signed_out: Mutex::default(),
            sign_outs: tokio::sync::watch::Sender::new(0),
        })
    }

    /// A fresh key (sessions do not survive a restart or move between replicas).
    pub fn random() -> Result<Self, SessionError> {
        let mut bytes = [0u8; 32];
        SystemRandom::new()
            .fill(&mut bytes)
            .map_err(|_| SessionError::Random)?;
        Self::from_keys(vec![sealing_key(&bytes)?])
    }

    /// The keys in `path` (lines of 64 hex digits, `#` comments allowed; the first
    /// seals, the others still open sessions sealed before a rotation), or a random
    /// key when there is no path or no file there yet (the deployment mounts its
    /// Secret as optional, so that a first `kubectl apply` starts; said in a warning,
    /// since sessions then do not move between replicas).
    pub fn load(path: Option<&Path>) -> Result<Self, SessionError> {
        let Some(path) = path else {
            return Self::random();
        };
        match std::fs::read_to_string(path) {
            Ok(text) => Self::parse(&text),
            Err(source) if source.kind() == std::io::ErrorKind::NotFound => {
                tracing::warn!(
                    path = %path.display(),
                    "no session key file: this replica seals sessions with a key of its own, so a \
                     person whose requests reach another replica must sign in again; create the \
                     Secret portico-session (deploy/README.md)"
                );
                Self::random()
            }
            Err(source) => Err(SessionError::Read {
                path: path.display().to_string(),
                source,
            }),
        }
    }

    fn parse(text: &str) -> Result<Self, SessionError> {
        let keys = text
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.starts_with('#'))
            .map(|l| {
                unhex(l)
                    .filter(|b| b.len() == 32)
                    .ok_or(SessionError::BadKey)
                    .and_then(|b| sealing_key(&b))
            })
            .collect::<Result<Vec<_>, _>>()?;
        Self::from_keys(keys)
    }

    /// A new session for `user` acting with `token`, and its cookie value.
    pub fn start(&self, user: String, token: String) -> Option<(Session, String)> {
        self.start_with(user, token, None)
    }

    /// [`Self::start`] for a single sign-on session, with how its token is renewed.
    pub fn start_with(
        &self,
        user: String,
        token: String,
        provider: Option<ProviderTokens>,
    ) -> Option<(Session, String)> {
        let now = now_secs();
        let session = Session {
            id: URL_SAFE_NO_PAD.encode(self.random_bytes::<12>()?),
            user,
            token,
            issued: now,
            renewed: now,
            provider,
        };
        let cookie = self.seal(&session)?;
        Some((session, cookie))
    }

    /// `N` bytes from the operating system's random source.
    pub fn random_bytes<const N: usize>(&self) -> Option<[u8; N]> {
        let mut bytes = [0u8; N];
        self.rng.fill(&mut bytes).ok()?;
        Some(bytes)
    }

    /// The cookie value for a session: `key id . base64url(nonce ‖ sealed)`.
    pub fn seal(&self, session: &Session) -> Option<String> {
        let (expires, refresh_at, refresh) = match &session.provider {
            Some(p) => (p.expires, p.refresh_at, p.refresh.as_deref().unwrap_or("")),
            None => (0, 0, ""),
        };
        self.seal_text(&format!(
            "{}\n{}\n{}\n{}\n{expires}\n{refresh_at}\n{refresh}\n{}",
            session.issued, session.renewed, session.id, session.user, session.token
        ))
    }

    /// `text` sealed with the current key, as a cookie value.
    pub fn seal_text(&self, text: &str) -> Option<String> {
        let key = self.keys.first()?;
        let nonce = self.random_bytes::<NONCE_LEN>()?;
        let mut data = text.as_bytes().to_vec();
        key.key
            .seal_in_place_append_tag(Nonce::assume_unique_for_key(nonce), Aad::empty(), &mut data)
            .ok()?;
        let mut sealed = nonce.to_vec();
        sealed.extend_from_slice(&data);
        // base64url: a third smaller than hex, so longer (OIDC) tokens still fit.
        Some(format!("{}.{}", key.id, URL_SAFE_NO_PAD.encode(sealed)))
    }

    /// The session in a cookie value, if it is ours, intact, live and not signed out.
    pub fn open(&self, cookie: &str) -> Option<Session> {
        self.open_at(cookie, now_secs())
    }

    fn open_at(&self, cookie: &str, now: u64) -> Option<Session> {
        let text = self.open_text(cookie)?;
        let mut parts = text.splitn(8, '\n');
        let mut session = Session {
            issued: parts.next()?.parse().ok()?,
            renewed: parts.next()?.parse().ok()?,
            id: parts.next()?.to_string(),
            user: parts.next()?.to_string(),
            token: String::new(),
            provider: None,
        };
        let expires: u64 = parts.next()?.parse().ok()?;
        let refresh_at: u64 = parts.next()?.parse().ok()?;
        let refresh = parts.next()?;
        session.token = parts.next()?.to_string();
        if expires > 0 {
            session.provider = Some(ProviderTokens {
                expires,
                refresh_at,
                refresh: (!refresh.is_empty()).then(|| refresh.to_string()),
            });
        }
        let live = now.saturating_sub(session.issued) < SESSION_LIFETIME.as_secs()
            && now.saturating_sub(session.renewed) < IDLE_LIFETIME.as_secs();
        let signed_out = self
            .signed_out
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .contains_key(&session.id);
        (live && !signed_out).then_some(session)
    }

    /// The text a cookie value sealed, if one of the keys sealed it and it is intact.
    pub fn open_text(&self, cookie: &str) -> Option<String> {
        let (id, sealed) = cookie.split_once('.')?;
        let key = self.keys.iter().find(|k| k.id == id)?;
        let bytes = URL_SAFE_NO_PAD.decode(sealed).ok()?;
        if bytes.len() <= NONCE_LEN {
            return None;
        }
        let (nonce, sealed) = bytes.split_at(NONCE_LEN);
        let nonce = Nonce::try_assume_unique_for_key(nonce).ok()?;
        let mut sealed = sealed.to_vec();
        let plain = key
            .key
            .open_in_place(nonce, Aad::empty(), &mut sealed)
            .ok()?;
        std::str::from_utf8(plain).ok().map(str::to_string)
    }

    /// A fresh cookie value for a session in use whose last renewal is a while ago.
    pub fn renewal(&self, session: &Session) -> Option<String> {
        let now = now_secs();
        if now.saturating_sub(session.renewed) < RENEW_AFTER.as_secs() {
            return None;
        }
        self.seal(&Session {
            renewed: now,
            ..session.clone()
        })
    }

    /// The same session acting with a renewed ID token, and its new cookie value.
    pub fn with_new_token(
        &self,
        session: &Session,
        token: String,
        provider: ProviderTokens,
    ) -> Option<(Session, String)> {
        let renewed = Session {
            token,
            provider: Some(provider),
            renewed: now_secs(),
            ..session.clone()
        };
        // A browser drops a cookie too large to keep, silently: not renewed, instead.
        let cookie = self
            .seal(&renewed)
            .filter(|c| c.len() <= MAX_COOKIE_VALUE)?;
        Some((renewed, cookie))
    }

    /// Changes each time a session ends here.
    pub fn sign_outs(&self) -> tokio::sync::watch::Receiver<u64> {
        self.sign_outs.subscribe()
    }

    /// Ends `session` here: its cookie, or any copy of it, no longer opens.
    pub fn sign_out(&self, session: &Session) {
        let now = now_secs();
        {
            let mut signed_out = self.signed_out.lock().unwrap_or_else(|e| e.into_inner());
            signed_out.retain(|_, until| *until > now);
            signed_out.insert(
                session.id.clone(),
                session.issued + SESSION_LIFETIME.as_secs(),
            );
        }
        self.sign_outs.send_modify(|n| *n += 1);
    }
}

/// The Set-Cookie value that stores a sealed session (or, with `None`, clears it).
/// Scoped to Portico's base path, so other applications on the host never get it.
/// Without Max-Age: the browser keeps it for its session, and the server's own
/// lifetimes decide when it stops opening.
pub fn cookie_header(base: &BasePath, value: Option<&str>) -> String {
    let path = if base.is_root() { "/" } else { base.as_str() };
    let name = cookie_name(base);
    match value {
        Some(v) => format!("{name}={v}; Path={path}; HttpOnly; Secure; SameSite=Strict"),
        None => format!("{name}=; Path={path}; HttpOnly; Secure; SameSite=Strict; Max-Age=0"),
    }
}

/// Browsers drop cookies over about 4 KB; a session that would not fit is refused
/// with a message instead of silently failing to sign in.
pub const MAX_COOKIE_VALUE: usize = 3900;

#[cfg(test)]
mod tests {
    use super::*;

    fn ada() -> (SessionKey, Session, String) {
        let key = SessionKey::random().expect("key");
        let (session, cookie) = key.start("ada".into(), "tok-123".into()).expect("start");
        (key, session, cookie)
    }

    #[test]
    fn sealed_sessions_open_only_with_their_key_and_intact() {
        let (key, session, cookie) = ada();
        assert!(!cookie.contains("tok-123"));
        assert_eq!(key.open(&cookie), Some(session));
        assert_eq!(
            SessionKey::random().expect("key").open(&cookie),
            None,
            "another key"
        );
        let mut tampered = cookie.clone();
        let at = cookie.len() - 5;
        tampered.replace_range(
            at..at + 1,
            if &cookie[at..at + 1] == "A" { "B" } else { "A" },
        );
        assert_eq!(key.open(&tampered), None);
        assert_eq!(key.open("zz"), None);
        assert_eq!(key.open("zz.zz"), None);
    }

    #[test]
    fn a_single_sign_on_session_keeps_its_renewal_and_a_new_token_keeps_the_session() {
        let key = SessionKey::random().expect("key");
        let provider = ProviderTokens {
            expires: now_secs() + 60,
            refresh_at: now_secs() + 30,
            refresh: Some("r-1".into()),
        };
        let (session, cookie) = key
            .start_with("oidc:ada".into(), "id-1".into(), Some(provider.clone()))
            .expect("start");
        assert!(!cookie.contains("r-1") && !cookie.contains("id-1"));
        let opened = key.open(&cookie).expect("opens");
        assert_eq!(opened.provider.as_ref(), Some(&provider));
        assert!(!opened.due_for_refresh(provider.refresh_at - 1));
        assert!(opened.due_for_refresh(provider.refresh_at));
        assert!(opened.token_expired(provider.expires));

        let renewed = ProviderTokens {
            refresh: Some("r-2".into()),
            ..provider
        };
        let (next, next_cookie) = key
            .with_new_token(&opened, "id-2".into(), renewed)
            .expect("renewed");
        assert_eq!(
            (next.id.as_str(), next.issued),
            (session.id.as_str(), session.issued)
        );
        let reopened = key.open(&next_cookie).expect("opens");
        assert_eq!(reopened.token, "id-2");
        key.sign_out(&reopened);
        assert!(
            key.open(&cookie).is_none(),
            "signing out ends every cookie of the session"
        );

        let (pasted, pasted_cookie) = key.start("ada".into(), "tok".into()).expect("start");
        assert_eq!(key.open(&pasted_cookie).and_then(|s| s.provider), None);
        assert!(!pasted.due_for_refresh(u64::MAX) && !pasted.token_expired(u64::MAX));
    }

    #[test]
    fn a_rotated_key_still_opens_old_sessions_and_seals_with_the_new_one() {
        let old = "ab".repeat(32);
        let new = "cd".repeat(32);
        let before = SessionKey::parse(&old).expect("old key");
        let (session, cookie) = before.start("ada".into(), "t".into()).expect("start");
        let rotated = SessionKey::parse(&format!("# rotated\n{new}\n{old}\n")).expect("keys");
        assert_eq!(rotated.open(&cookie), Some(session.clone()));
        let resealed = rotated.seal(&session).expect("seal");
        assert_ne!(
            resealed.split_once('.').map(|p| p.0),
            cookie.split_once('.').map(|p| p.0),
            "new cookies name the new key"
        );
        assert_eq!(
            before.open(&resealed),
            None,
            "the old key alone cannot open it"
        );
    }

    #[test]
    fn sessions_end_when_idle_too_long_past_their_lifetime_or_signed_out() {
        let (key, session, cookie) = ada();
        let idle = session.renewed + IDLE_LIFETIME.as_secs();
        assert!(key.open_at(&cookie, idle - 1).is_some());
        assert_eq!(key.open_at(&cookie, idle), None, "idle too long");
        let kept_alive = key
            .seal(&Session {
                renewed: session.issued + SESSION_LIFETIME.as_secs() - 10,
                ..session.clone()
            })
            .expect("seal");
        assert_eq!(
            key.open_at(&kept_alive, session.issued + SESSION_LIFETIME.as_secs()),
            None,
            "renewal never extends past the lifetime"
        );
        let copy = cookie.clone();
        key.sign_out(&session);
        assert_eq!(
            key.open(&copy),
            None,
            "a copy of a signed-out cookie is dead"
        );
    }

    #[test]
    fn only_a_session_renewed_a_while_ago_gets_a_fresh_cookie() {
        let (key, session, _) = ada();
        assert_eq!(key.renewal(&session), None);
        let old = Session {
            renewed: session.renewed - RENEW_AFTER.as_secs(),
            ..session
        };
        let fresh = key.renewal(&old).expect("renewed");
        assert!(key.open(&fresh).is_some_and(|s| s.renewed > old.renewed));
    }

    #[test]
    fn a_named_key_file_not_there_yet_means_a_key_of_its_own() {
        // Named for this process: a fixed name another run or user may have created.
        let name = format!("portico-no-such-session-key-{}", std::process::id());
        let missing = std::env::temp_dir().join(name);
        assert!(SessionKey::load(Some(&missing)).is_ok());
        let a_directory = std::env::temp_dir();
        assert!(matches!(
            SessionKey::load(Some(&a_directory)),
            Err(SessionError::Read { .. })
        ));
    }

    #[test]
    fn session_key_files_hold_one_or_more_keys() {
        assert!(SessionKey::parse(&"ab".repeat(32)).is_ok());
        assert!(matches!(
            SessionKey::parse("abc"),
            Err(SessionError::BadKey)
        ));
        assert!(matches!(
            SessionKey::parse("# only a comment"),
            Err(SessionError::BadKey)
        ));
    }
}
