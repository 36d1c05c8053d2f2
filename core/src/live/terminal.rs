//! A terminal into a container (`GET /api/exec`, its own WebSocket): what the page
//! and the server say to each other. Keystrokes and output travel as binary frames,
//! unchanged; these are the text frames around them.

use serde::{Deserialize, Serialize};

/// The most arguments, and bytes in all, of a command a terminal may run.
pub const MAX_COMMAND_ARGS: usize = 64;
pub const MAX_COMMAND_BYTES: usize = 4096;
/// The largest terminal, in columns and rows.
pub const MAX_SIZE: u16 = 1000;

/// The page's first message: where and what to run. Sent on the socket, not in its
/// URL, so that a command never lands in an access log.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TerminalStart {
    pub namespace: String,
    pub pod: String,
    /// `None`: the Pod's default container (as for its log).
    #[serde(default)]
    pub container: Option<String>,
    pub command: TerminalCommand,
    pub size: TerminalSize,
}

/// What runs in the terminal.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", tag = "kind", content = "args")]
pub enum TerminalCommand {
    /// `bash` where the container has it, else `sh`.
    Shell,
    /// A program and its arguments, as typed (split as a shell would, unquoted).
    Program(Vec<String>),
}

impl TerminalCommand {
    /// The command line sent to the API server.
    pub fn argv(&self) -> Vec<String> {
        match self {
            // `command -v` is POSIX: any sh can ask whether bash is there.
            Self::Shell => vec![
                "/bin/sh".into(),
                "-c".into(),
                "if command -v bash >/dev/null 2>&1; then exec bash; else exec sh; fi".into(),
            ],
            Self::Program(argv) => argv.clone(),
        }
    }

    /// The command as an audit line names it: the program, and only how many
    /// arguments followed (an argument may be a password: `mysql -pSECRET`).
    pub fn audited(&self) -> String {
        match self {
            Self::Shell => "shell (bash or sh)".into(),
            Self::Program(argv) => match argv.split_first() {
                Some((program, [])) => program.clone(),
                Some((program, rest)) => format!("{program} (+{} arguments)", rest.len()),
                None => String::new(),
            },
        }
    }
}

/// Columns and rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct TerminalSize {
    pub cols: u16,
    pub rows: u16,
}

impl TerminalSize {
    pub fn is_valid(&self) -> bool {
        (1..=MAX_SIZE).contains(&self.cols) && (1..=MAX_SIZE).contains(&self.rows)
    }

    /// Within bounds: a window larger than a terminal can be gets the largest one,
    /// rather than ending the session.
    pub fn clamped(self) -> Self {
        Self {
            cols: self.cols.clamp(1, MAX_SIZE),
            rows: self.rows.clamp(1, MAX_SIZE),
        }
    }
}

impl TerminalStart {
    /// Whether the names are plausible API path segments, and the command and size
    /// within bounds.
    pub fn is_valid(&self) -> bool {
        use crate::resource::is_path_segment;
        let command_fits = match &self.command {
            TerminalCommand::Shell => true,
            TerminalCommand::Program(argv) => {
                !argv.is_empty()
                    && argv.first().is_some_and(|p| !p.is_empty())
                    && argv.len() <= MAX_COMMAND_ARGS
                    && argv.iter().map(String::len).sum::<usize>() <= MAX_COMMAND_BYTES
            }
        };
        is_path_segment(&self.namespace)
            && is_path_segment(&self.pod)
            && self.container.as_deref().is_none_or(is_path_segment)
            && command_fits
            && self.size.is_valid()
    }
}

/// The page's later text messages (keystrokes are binary frames).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", tag = "type")]
pub enum TerminalInput {
    Resize { size: TerminalSize },
}

/// The server's text messages (output is binary frames).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", tag = "type")]
pub enum TerminalEvent {
    /// Running: in this container, of these.
    Started {
        container: String,
        containers: Vec<String>,
    },
    /// It ended: the exit code when the command's end gave one, and a sentence.
    Ended { code: Option<i32>, message: String },
    /// It never started, in the API server's or Portico's words.
    Refused { message: String },
}

#[cfg(test)]
mod tests {
    use super::*;

    fn start(command: TerminalCommand) -> TerminalStart {
        TerminalStart {
            namespace: "team".into(),
            pod: "web-0".into(),
            container: None,
            command,
            size: TerminalSize { cols: 80, rows: 24 },
        }
    }

    #[test]
    fn a_start_is_valid_only_with_path_safe_names_a_bounded_command_and_a_real_size() {
        assert!(start(TerminalCommand::Shell).is_valid());
        assert!(start(TerminalCommand::Program(vec!["mysql".into(), "-e".into()])).is_valid());
        assert!(!start(TerminalCommand::Program(vec![])).is_valid());
        assert!(!start(TerminalCommand::Program(vec![String::new()])).is_valid());
        assert!(!start(TerminalCommand::Program(vec!["x".into(); 65])).is_valid());
        assert!(!start(TerminalCommand::Program(vec!["x".repeat(4097)])).is_valid());
        let mut escaping = start(TerminalCommand::Shell);
        escaping.pod = "../secrets".into();
        assert!(!escaping.is_valid());
        assert_eq!(
            TerminalSize {
                cols: 5000,
                rows: 0
            }
            .clamped(),
            TerminalSize {
                cols: 1000,
                rows: 1
            }
        );
        let mut shapeless = start(TerminalCommand::Shell);
        shapeless.size = TerminalSize { cols: 0, rows: 24 };
        assert!(!shapeless.is_valid());
    }

    #[test]
    fn an_audit_line_names_the_program_and_never_its_arguments() {
        let mysql =
            TerminalCommand::Program(vec!["mysql".into(), "-uroot".into(), "-psecret".into()]);
        assert_eq!(mysql.audited(), "mysql (+2 arguments)");
        assert!(!mysql.audited().contains("secret"));
        assert_eq!(
            TerminalCommand::Program(vec!["top".into()]).audited(),
            "top"
        );
        assert_eq!(TerminalCommand::Shell.audited(), "shell (bash or sh)");
    }

    #[test]
    fn messages_read_as_the_page_writes_them() {
        let json = r#"{"namespace":"team","pod":"db-0","command":{"kind":"program","args":["ls","-l"]},"size":{"cols":120,"rows":40}}"#;
        let start: TerminalStart = serde_json::from_str(json).expect("a start");
        assert_eq!(
            start.command,
            TerminalCommand::Program(vec!["ls".into(), "-l".into()])
        );
        let shell: TerminalStart = serde_json::from_str(
            r#"{"namespace":"team","pod":"db-0","command":{"kind":"shell"},"size":{"cols":1,"rows":1}}"#,
        )
        .expect("a shell");
        assert_eq!(shell.command, TerminalCommand::Shell);
        let resize: TerminalInput =
            serde_json::from_str(r#"{"type":"resize","size":{"cols":100,"rows":30}}"#)
                .expect("a resize");
        assert_eq!(
            resize,
            TerminalInput::Resize {
                size: TerminalSize {
                    cols: 100,
                    rows: 30
                }
            }
        );
    }
}
