//! The credentials Secret: the passwords a choice's server starts with, its user's
//! (the one apps connect with) and its administrator's.

use base64::Engine;
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde_json::{Value, json};

use super::{
    ADMIN_PASSWORD_KEY, KEPT_FROM_ANNOTATION, KEPT_WITH_ANNOTATION, LEGACY_PASSWORD_KEY,
    PASSWORD_KEY, Shape, claim_prefix, secret_name,
};
use crate::catalog::CatalogEntry;

/// The passwords a new credentials Secret is made with.
#[derive(Debug, Clone, Copy)]
pub struct Passwords<'a> {
    pub user: &'a str,
    pub admin: &'a str,
}

impl<'a> Passwords<'a> {
    /// The same text for both: a placeholder where no Secret is made (a preview).
    pub fn placeholder(text: &'a str) -> Self {
        Self {
            user: text,
            admin: text,
        }
    }
}

/// The Secret, for a choice whose catalog entry takes a password. A Stack that keeps
/// its data does not own it, so the password outlives the Stack with the volumes.
pub(super) fn secret(shape: &Shape, passwords: Passwords) -> Option<Secret> {
    shape.entry.password_env.as_ref()?;
    let owned = shape.meta(secret_name(&shape.name));
    let metadata = if shape.keeps_data {
        ObjectMeta {
            owner_references: None,
            annotations: Some(
                [
                    (KEPT_WITH_ANNOTATION.to_string(), claim_prefix(&shape.name)),
                    (KEPT_FROM_ANNOTATION.to_string(), shape.owner.uid.clone()),
                ]
                .into(),
            ),
            ..owned
        }
    } else {
        owned
    };
    Some(Secret {
        metadata,
        string_data: None,
        data: Some(
            [
                (PASSWORD_KEY, Some(passwords.user)),
                (
                    ADMIN_PASSWORD_KEY,
                    shape.entry.admin.as_ref().map(|_| passwords.admin),
                ),
            ]
            .into_iter()
            .filter_map(|(key, password)| {
                Some((
                    key.to_string(),
                    k8s_openapi::ByteString(password?.as_bytes().to_vec()),
                ))
            })
            .collect(),
        ),
        type_: Some("Opaque".into()),
        ..Default::default()
    })
}

/// The user's password a credentials Secret holds, if it holds a non-empty one (the
/// portal reads it as the person viewing the Stack; the reconciler never does). A
/// Secret the reconciler has not moved on yet holds it under its one old key.
pub fn password_in(secret: &Secret) -> Option<String> {
    [PASSWORD_KEY, LEGACY_PASSWORD_KEY]
        .into_iter()
        .find_map(|key| {
            secret
                .data
                .as_ref()?
                .get(key)
                .and_then(|b| String::from_utf8(b.0.clone()).ok())
                .filter(|p| !p.is_empty())
        })
}

/// The JSON patch that moves a Secret made before Stacks had an app user to today's
/// keys, without the reconciler ever reading it: the one password moves to the key of
/// whoever it was for (the administrator, where the entry has one), and `user_password`
/// becomes the user's. Applied twice, it fails on the second: the old key is gone.
pub fn legacy_password_move(entry: &CatalogEntry, user_password: &str) -> Option<Value> {
    entry.password_env.as_ref()?;
    let from = format!("/data/{LEGACY_PASSWORD_KEY}");
    Some(match entry.admin {
        Some(_) => json!([
            {"op": "move", "from": from, "path": format!("/data/{ADMIN_PASSWORD_KEY}")},
            {"op": "add", "path": format!("/data/{PASSWORD_KEY}"),
             "value": base64::engine::general_purpose::STANDARD.encode(user_password)},
        ]),
        None => json!([{"op": "move", "from": from, "path": format!("/data/{PASSWORD_KEY}")}]),
    })
}

/// A password from the operating system's random source: 24 characters from an
/// alphabet that needs no quoting in shells or connection strings.
pub fn generate_password() -> Result<String, ring::error::Unspecified> {
    use ring::rand::SecureRandom;
    const ALPHABET: &[u8] = b"ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz23456789";
    let mut bytes = [0u8; 24];
    ring::rand::SystemRandom::new().fill(&mut bytes)?;
    Ok(bytes
        .iter()
        .filter_map(|b| ALPHABET.get(usize::from(*b) % ALPHABET.len()))
        .map(|c| char::from(*c))
        .collect())
}
