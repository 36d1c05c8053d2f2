//! Why the server could not answer, as the server functions return it: a typed error
//! that crosses the wire as JSON, so pages branch on the variant instead of reading
//! sentences. Every variant's text is worded for the person reading the page.

use leptos::server_fn::error::{FromServerFnError, ServerFnErrorErr};
use serde::{Deserialize, Serialize};

use crate::codec::JsonTextEncoding;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, Serialize, Deserialize)]
pub enum BackendError {
    #[error(
        "Portico has not finished loading the cluster's resource types yet; try again in a moment."
    )]
    NotReady,
    #[error("The Kubernetes API server could not be reached: {0}")]
    Unreachable(String),
    #[error("{0} was not found; it may have been deleted.")]
    NotFound(String),
    #[error("You may not {0}.")]
    Forbidden(String),
    #[error("The API server no longer accepts your sign-in: sign in again.")]
    Unauthorized,
    #[error("{0}")]
    Conflict(String),
    #[error("{0}")]
    Invalid(String),
    /// The request itself could not be read (arguments that do not decode).
    #[error("Portico could not read this request's arguments: {0}")]
    BadRequest(String),
    /// Portico's own server could not be reached, or its answer not read.
    #[error("Portico's server could not be reached: {0}")]
    Transport(String),
    #[error("Portico's server is misconfigured: {0}")]
    Internal(String),
    /// The person already has as many of these requests running as Portico allows.
    #[error("{0}")]
    Busy(String),
}

impl BackendError {
    /// The HTTP status the server answers this error with.
    pub fn status(&self) -> u16 {
        match self {
            Self::NotReady => 503,
            Self::Unreachable(_) => 502,
            Self::NotFound(_) => 404,
            Self::Forbidden(_) => 403,
            Self::Unauthorized => 401,
            Self::Conflict(_) => 409,
            Self::Invalid(_) => 422,
            Self::BadRequest(_) => 400,
            Self::Transport(_) | Self::Internal(_) => 500,
            Self::Busy(_) => 429,
        }
    }
}

impl FromServerFnError for BackendError {
    type Encoder = JsonTextEncoding;

    fn from_server_fn_error(value: ServerFnErrorErr) -> Self {
        match value {
            ServerFnErrorErr::Args(why) | ServerFnErrorErr::MissingArg(why) => {
                Self::BadRequest(why.trim().trim_end_matches('.').to_string())
            }
            // A JSON body that does not decode (server_fn names it so for POST bodies,
            // `Args` for URL-encoded ones) is the caller's mistake too. Only on the
            // server: in the browser it means Portico's answer could not be read.
            #[cfg(not(feature = "hydrate"))]
            ServerFnErrorErr::Deserialization(why) => {
                Self::BadRequest(why.trim().trim_end_matches('.').to_string())
            }
            other => Self::Transport(other.to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_cross_the_wire_as_themselves() {
        let sent = BackendError::Forbidden("read secrets db".into());
        let bytes = sent.ser();
        assert_eq!(BackendError::de(bytes), sent);
        assert_eq!(sent.to_string(), "You may not read secrets db.");
        assert_eq!(sent.status(), 403);
    }

    #[cfg(not(feature = "hydrate"))]
    #[test]
    fn an_undecodable_json_body_is_the_callers_mistake_on_the_server() {
        let e = BackendError::from_server_fn_error(ServerFnErrorErr::Deserialization(
            "EOF while parsing an object at line 1 column 19".into(),
        ));
        assert_eq!(e.status(), 400);
    }

    #[test]
    fn undecodable_arguments_are_the_callers_mistake() {
        let e = BackendError::from_server_fn_error(ServerFnErrorErr::Args("bad value.".into()));
        assert_eq!(e, BackendError::BadRequest("bad value".into()));
        assert_eq!(e.status(), 400);
    }
}
