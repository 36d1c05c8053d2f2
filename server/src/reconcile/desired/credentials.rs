//! The credentials Secret: the password a stateful choice's server starts with.

use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use super::{
    KEPT_FROM_ANNOTATION, KEPT_WITH_ANNOTATION, PASSWORD_KEY, Shape, claim_prefix, secret_name,
};

/// The Secret, for a choice whose catalog entry takes a password. A Stack that keeps
/// its data does not own it, so the password outlives the Stack with the volumes.
pub(super) fn secret(shape: &Shape, password: &str) -> Option<Secret> {
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
            [(
                PASSWORD_KEY.to_string(),
                k8s_openapi::ByteString(password.as_bytes().to_vec()),
            )]
            .into(),
        ),
        type_: Some("Opaque".into()),
        ..Default::default()
    })
}

/// The password a credentials Secret holds, if it holds a non-empty one (the portal
/// reads it as the person viewing the Stack; the reconciler never does).
pub fn password_in(secret: &Secret) -> Option<String> {
    secret
        .data
        .as_ref()
        .and_then(|d| d.get(PASSWORD_KEY))
        .and_then(|b| String::from_utf8(b.0.clone()).ok())
        .filter(|p| !p.is_empty())
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
