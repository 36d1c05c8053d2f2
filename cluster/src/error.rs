//! One classification of the API server's failures. Every module that calls the API
//! server turns a `kube::Error` into an [`ApiError`] and branches on its
//! [`Failure`], instead of comparing status codes of its own.

use portico_core::payload::{ApiRejection, FieldCause};

/// What kind of failure, as far as a caller needs to branch on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure {
    /// 404: no such object, or the kind is not served.
    NotFound,
    /// 403: the caller's identity may not do this.
    Forbidden,
    /// 401: the credentials are no longer accepted.
    Unauthorized,
    /// 409 with reason AlreadyExists.
    AlreadyExists,
    /// 409 otherwise: the object changed since it was read.
    Conflict,
    /// 400 and 422: the request or object is not acceptable; causes name the fields.
    Invalid,
    /// 410: the resource version is too old; a fresh list is needed.
    Gone,
    /// 429, 5xx, or no answer at all (connection, TLS, timeout).
    Unavailable,
    /// A 2xx body Portico could not decode, or a status code not listed above.
    Other,
}

impl Failure {
    pub const ALL: [Self; 9] = [
        Self::NotFound,
        Self::Forbidden,
        Self::Unauthorized,
        Self::AlreadyExists,
        Self::Conflict,
        Self::Invalid,
        Self::Gone,
        Self::Unavailable,
        Self::Other,
    ];

    /// The variant's name (a metric's label value).
    pub fn name(self) -> &'static str {
        match self {
            Self::NotFound => "NotFound",
            Self::Forbidden => "Forbidden",
            Self::Unauthorized => "Unauthorized",
            Self::AlreadyExists => "AlreadyExists",
            Self::Conflict => "Conflict",
            Self::Invalid => "Invalid",
            Self::Gone => "Gone",
            Self::Unavailable => "Unavailable",
            Self::Other => "Other",
        }
    }

    /// The class of a refusal the API server sent.
    pub fn of(rejection: &ApiRejection) -> Self {
        Self::of_status(rejection.code, &rejection.reason)
    }

    /// The class of a status code (and reason, which tells 409s apart).
    pub fn of_status(code: u16, reason: &str) -> Self {
        match code {
            404 => Self::NotFound,
            403 => Self::Forbidden,
            401 => Self::Unauthorized,
            409 if reason == "AlreadyExists" => Self::AlreadyExists,
            409 => Self::Conflict,
            400 | 422 => Self::Invalid,
            410 => Self::Gone,
            429 | 500..=599 => Self::Unavailable,
            _ => Self::Other,
        }
    }
}

/// A failed call to the API server.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    /// The API server answered with a `Status` refusing the request.
    #[error("the API server refused the request: {}", .0.message)]
    Refused(ApiRejection),
    /// No usable answer: connection, TLS, timeout, or a body that did not decode.
    #[error("talking to the API server: {0}")]
    Transport(#[source] kube::Error),
}

impl From<kube::Error> for ApiError {
    fn from(err: kube::Error) -> Self {
        match rejection(&err) {
            Some(r) => Self::Refused(r),
            None => Self::Transport(err),
        }
    }
}

impl ApiError {
    pub fn failure(&self) -> Failure {
        match self {
            Self::Refused(r) => Failure::of_status(r.code, &r.reason),
            // kube reports a body it could not decode with no status at all.
            Self::Transport(kube::Error::SerdeError(_)) => Failure::Other,
            Self::Transport(_) => Failure::Unavailable,
        }
    }

    /// The server's refusal, with its field causes, if it answered.
    pub fn rejection(&self) -> Option<&ApiRejection> {
        match self {
            Self::Refused(r) => Some(r),
            Self::Transport(_) => None,
        }
    }
}

/// The failure class of a kube error, for callers that only branch on it.
pub fn failure(err: &kube::Error) -> Failure {
    match rejection(err) {
        Some(r) => Failure::of_status(r.code, &r.reason),
        None if matches!(err, kube::Error::SerdeError(_)) => Failure::Other,
        None => Failure::Unavailable,
    }
}

/// The API server's `Status` inside a kube error, if the server answered at all.
fn rejection(err: &kube::Error) -> Option<ApiRejection> {
    let kube::Error::Api(status) = err else {
        return None;
    };
    let causes = status
        .details
        .as_ref()
        .map(|d| {
            d.causes
                .iter()
                .map(|c| FieldCause {
                    field: c.field.clone(),
                    reason: c.reason.clone(),
                    message: c.message.clone(),
                })
                .collect()
        })
        .unwrap_or_default();
    Some(ApiRejection {
        code: status.code,
        reason: status.reason.clone(),
        message: status.message.clone(),
        causes,
    })
}

/// `group/version` split as Kubernetes writes it: the core group has no slash.
pub fn split_api_version(api_version: &str) -> (&str, &str) {
    api_version.split_once('/').unwrap_or(("", api_version))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(code: u16, reason: &str) -> kube::Error {
        kube::Error::Api(
            kube::core::Status::failure("refused", reason)
                .with_code(code)
                .boxed(),
        )
    }

    #[test]
    fn statuses_are_classified_once() {
        assert_eq!(failure(&status(404, "NotFound")), Failure::NotFound);
        assert_eq!(failure(&status(403, "Forbidden")), Failure::Forbidden);
        assert_eq!(failure(&status(401, "Unauthorized")), Failure::Unauthorized);
        assert_eq!(
            failure(&status(409, "AlreadyExists")),
            Failure::AlreadyExists
        );
        assert_eq!(failure(&status(409, "Conflict")), Failure::Conflict);
        assert_eq!(failure(&status(422, "Invalid")), Failure::Invalid);
        assert_eq!(failure(&status(410, "Expired")), Failure::Gone);
        assert_eq!(
            failure(&status(503, "ServiceUnavailable")),
            Failure::Unavailable
        );
        assert_eq!(
            failure(&status(429, "TooManyRequests")),
            Failure::Unavailable
        );
        let err = ApiError::from(status(422, "Invalid"));
        assert_eq!(err.failure(), Failure::Invalid);
        assert_eq!(err.rejection().map(|r| r.code), Some(422));
    }

    #[test]
    fn core_and_grouped_api_versions_split() {
        assert_eq!(split_api_version("v1"), ("", "v1"));
        assert_eq!(split_api_version("apps/v1"), ("apps", "v1"));
    }
}
