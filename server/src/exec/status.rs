//! What the API server says about a command: how it ended (the `Status` on the exec
//! stream's error channel) and why it could not start.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Status;

/// The exit code the end of a command gives: 0 for success, the code of a
/// `NonZeroExitCode` failure, `None` when the end says neither (the stream broke).
pub fn exit_code(status: Option<&Status>) -> Option<i32> {
    let status = status?;
    if status.status.as_deref() == Some("Success") {
        return Some(0);
    }
    if status.reason.as_deref() != Some("NonZeroExitCode") {
        return None;
    }
    status
        .details
        .as_ref()?
        .causes
        .iter()
        .flatten()
        .find(|cause| cause.reason.as_deref() == Some("ExitCode"))
        .and_then(|cause| cause.message.as_deref()?.trim().parse().ok())
}

/// The sentence a terminal ends with.
pub fn ended_sentence(code: Option<i32>, status: Option<&Status>) -> String {
    match (code, status) {
        (Some(code), _) => format!("The command ended with exit code {code}."),
        (
            None,
            Some(Status {
                message: Some(message),
                ..
            }),
        ) if !message.is_empty() => format!("The command ended: {message}"),
        (None, _) => "The connection to the container ended.".into(),
    }
}

/// Why a command could not start, in the API server's words where it gave some.
pub fn refusal(error: &kube::Error) -> String {
    match error {
        kube::Error::Api(status) if !status.message.is_empty() => status.message.clone(),
        other => format!("The API server did not open the terminal: {other}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(json: serde_json::Value) -> Status {
        serde_json::from_value(json).expect("a Status")
    }

    #[test]
    fn the_exit_code_is_read_from_how_the_api_server_ends_a_command() {
        let success = status(serde_json::json!({"status": "Success"}));
        assert_eq!(exit_code(Some(&success)), Some(0));
        // What the kubelet sends for `exit 3` (apimachinery's remotecommand).
        let three = status(serde_json::json!({
            "status": "Failure",
            "message": "command terminated with non-zero exit code: error executing command [sh -c exit 3], exit code 3",
            "reason": "NonZeroExitCode",
            "details": {"causes": [{"reason": "ExitCode", "message": "3"}]},
        }));
        assert_eq!(exit_code(Some(&three)), Some(3));
        assert_eq!(
            ended_sentence(exit_code(Some(&three)), Some(&three)),
            "The command ended with exit code 3."
        );
        let broken = status(serde_json::json!({
            "status": "Failure",
            "message": "error dialing backend: EOF",
            "reason": "InternalError",
        }));
        assert_eq!(exit_code(Some(&broken)), None);
        assert_eq!(
            ended_sentence(None, Some(&broken)),
            "The command ended: error dialing backend: EOF"
        );
        assert_eq!(exit_code(None), None);
    }
}
