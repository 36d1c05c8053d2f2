//! A terminal into a container (`/api/exec`, its own WebSocket) on the real node, as
//! the person: what is typed runs and its output comes back, the exit code is said,
//! a person without `pods/exec` is refused, signing out or the Pod's end ends an open
//! terminal, and 10 MB of output passes without Portico holding it. Part of the `live_logs` area
//! (one real node for both).
use std::time::Duration;

use portico_core::live::terminal::{TerminalCommand, TerminalEvent, TerminalSize, TerminalStart};

use super::{admin, run_pod, token_mode_portal, until_running};
use crate::kit::socket::{self, Frame, Socket};

const WAIT: Duration = Duration::from_secs(30);

/// A namespace with a running Pod `shell` (container `app`), Portico in token mode,
/// and a person `ada` signed in with `exec_verbs` on `pods/exec` (and `get` on Pods).
struct Setup {
    ns: String,
    origin: String,
    cookie: String,
    user: String,
    _portal: Portal,
}

/// Portico serving the test: in this process, or (to measure its memory alone) its
/// own, with its pid.
enum Portal {
    InProcess {
        _state: Box<portico_server::web::state::AppState>,
    },
    Process {
        _child: tokio::process::Child,
        pid: u32,
    },
}

async fn setup(prefix: &str, exec_verbs: &[&str]) -> Setup {
    setup_limited(prefix, exec_verbs, None).await
}

/// [`setup`], Portico bounded by `limits`.
async fn setup_limited(
    prefix: &str,
    exec_verbs: &[&str],
    limits: Option<portico_server::live::budgets::limits::LiveLimits>,
) -> Setup {
    let admin = admin().await;
    let (ns, token) = prepare(&admin, prefix, exec_verbs).await;
    let (origin, portal) = token_mode_portal(&admin, limits).await;
    signed_in(
        ns,
        token,
        origin,
        Portal::InProcess {
            _state: Box::new(portal),
        },
    )
    .await
}

/// [`setup`], Portico a process of its own.
async fn setup_in_process_of_its_own(prefix: &str, exec_verbs: &[&str]) -> Setup {
    let admin = admin().await;
    let (ns, token) = prepare(&admin, prefix, exec_verbs).await;
    let (origin, child, pid) = crate::kit::process::token_mode_portico(
        std::path::Path::new(env!("CARGO_BIN_EXE_portico")),
        portico_control_plane::cluster::TestCluster::shared_real().admin_kubeconfig(),
        &[],
    )
    .await;
    signed_in(ns, token, origin, Portal::Process { _child: child, pid }).await
}

/// The namespace, its running Pod and ada's rights: the namespace and her token.
async fn prepare(admin: &kube::Client, prefix: &str, exec_verbs: &[&str]) -> (String, String) {
    let ns = crate::kit::fresh_namespace(admin, prefix).await;
    run_pod(admin, &ns, "shell", "sleep 3600").await;
    let token = crate::kit::account_token(admin, &ns, "ada").await;
    crate::kit::grant(admin, &ns, "pods-ada", ("", "pods"), &["get"], "ada").await;
    if !exec_verbs.is_empty() {
        crate::kit::grant(admin, &ns, "exec-ada", ("", "pods/exec"), exec_verbs, "ada").await;
    }
    until_running(admin, &ns, "shell", 0).await;
    (ns, token)
}

async fn signed_in(ns: String, token: String, origin: String, portal: Portal) -> Setup {
    let cookie = crate::kit::sign_in(&origin, &token).await;
    Setup {
        user: crate::kit::account_user(&ns, "ada"),
        ns,
        origin,
        cookie,
        _portal: portal,
    }
}

/// The terminal's socket of the signed-in person, opened from `origin` (none: not
/// a browser), or the handshake's refusal.
async fn handshake(setup: &Setup, origin: Option<&str>) -> Result<Socket, socket::Error> {
    socket::open(&setup.origin, socket::EXEC, Some(&setup.cookie), origin).await
}

/// A terminal socket of the signed-in person, `command` started in `shell`.
async fn open(setup: &Setup, command: TerminalCommand) -> Socket {
    let mut socket = handshake(setup, Some(&setup.origin))
        .await
        .expect("the terminal's socket opens");
    let start = TerminalStart {
        namespace: setup.ns.clone(),
        pod: "shell".into(),
        container: None,
        command,
        size: TerminalSize {
            cols: 100,
            rows: 30,
        },
    };
    socket::send_json(&mut socket, &start).await;
    socket
}

/// Opens a shell and reads its start.
async fn started_shell(setup: &Setup) -> Socket {
    let mut socket = open(setup, TerminalCommand::Shell).await;
    let started = event(&mut socket, &mut String::new()).await;
    assert!(
        matches!(started, TerminalEvent::Started { .. }),
        "{started:?}"
    );
    socket
}

async fn resize(socket: &mut Socket, cols: u16, rows: u16) {
    let input = portico_core::live::terminal::TerminalInput::Resize {
        size: TerminalSize { cols, rows },
    };
    socket::send_json(socket, &input).await;
}

/// What comes next: output bytes, an event, or `None` once the socket closed.
enum Next {
    Output(Vec<u8>),
    Event(TerminalEvent),
}

async fn next(socket: &mut Socket) -> Option<Next> {
    // Pings do not count: the terminal must say something within WAIT.
    let deadline = tokio::time::Instant::now() + WAIT;
    let frame = socket::next_frame_by(socket, deadline)
        .await
        .expect("the terminal says something in time")?;
    Some(match frame {
        Frame::Binary(bytes) => Next::Output(bytes.to_vec()),
        Frame::Text(text) => Next::Event(serde_json::from_str(&text).expect("an event")),
    })
}

/// The first event, any output before it kept in `shown`.
async fn event(socket: &mut Socket, shown: &mut String) -> TerminalEvent {
    loop {
        match next(socket).await {
            Some(Next::Event(event)) => return event,
            Some(Next::Output(bytes)) => shown.push_str(&String::from_utf8_lossy(&bytes)),
            None => panic!("the terminal closed without an event; it showed {shown:?}"),
        }
    }
}

/// Reads output until a line reads `wanted` once the terminal's escapes are taken
/// out (bash brackets each prompt in paste-mode switches).
async fn until_line(socket: &mut Socket, wanted: &str) {
    let mut shown = String::new();
    loop {
        let mut lines = shown.split(['\r', '\n']).map(portico_core::terminal::clean);
        if lines.any(|line| line.trim_end() == wanted) {
            return;
        }
        match next(socket).await {
            Some(Next::Output(bytes)) => shown.push_str(&String::from_utf8_lossy(&bytes)),
            Some(Next::Event(event)) => panic!("{event:?} before {wanted:?}; shown: {shown:?}"),
            None => panic!("closed before {wanted:?}; shown: {shown:?}"),
        }
    }
}

/// How many times [`until_size`] asks.
const SIZE_QUESTIONS: usize = 20;

/// Types `stty size` until it answers `wanted`. A resize travels apart from the keys
/// (the exec protocol's own channel, then the runtime's resize call), so a question
/// typed just after it may still be answered with the old size; a size that never
/// comes fails after [`SIZE_QUESTIONS`] answers.
async fn until_size(socket: &mut Socket, wanted: &str) {
    let mut shown = String::new();
    let mut answers: Vec<String> = Vec::new();
    while answers.len() < SIZE_QUESTIONS {
        type_in(socket, "stty size\r").await;
        loop {
            // Whole lines only: the last piece may be half an answer.
            let mut lines: Vec<String> = shown
                .split(['\r', '\n'])
                .map(|line| portico_core::terminal::clean(line).trim().to_string())
                .collect();
            lines.pop();
            let sizes: Vec<String> = lines
                .into_iter()
                .filter(|line| {
                    let parts: Vec<&str> = line.split(' ').collect();
                    parts.len() == 2 && parts.iter().all(|part| part.parse::<u16>().is_ok())
                })
                .collect();
            if sizes.len() > answers.len() {
                answers = sizes;
                break;
            }
            match next(socket).await {
                Some(Next::Output(bytes)) => shown.push_str(&String::from_utf8_lossy(&bytes)),
                Some(Next::Event(event)) => panic!("{event:?} before {wanted:?}; shown: {shown:?}"),
                None => panic!("closed before {wanted:?}; shown: {shown:?}"),
            }
        }
        if answers.last().map(String::as_str) == Some(wanted) {
            return;
        }
    }
    panic!("the terminal never said {wanted:?}; it said {answers:?}");
}

async fn type_in(socket: &mut Socket, keys: &str) {
    socket::send_binary(socket, keys.as_bytes()).await;
}

#[tokio::test]
async fn what_is_typed_runs_in_the_container_as_the_person_and_its_exit_code_is_said() {
    let setup = setup("terminal", &["create", "get"]).await;
    let mut socket = open(&setup, TerminalCommand::Shell).await;
    let started = event(&mut socket, &mut String::new()).await;
    assert_eq!(
        started,
        TerminalEvent::Started {
            container: "app".into(),
            containers: vec!["app".into()]
        }
    );
    // The answer on a line of its own: the echo of what was typed shows `$((6*7))`.
    type_in(&mut socket, "echo $((6*7))\r").await;
    until_line(&mut socket, "42").await;
    // The terminal has the page's size from its start.
    until_size(&mut socket, "30 100").await;
    // The page's window grows: so does the terminal.
    resize(&mut socket, 120, 40).await;
    until_size(&mut socket, "40 120").await;
    // Larger than a terminal may be: the largest, and the session goes on.
    resize(&mut socket, 5000, 3000).await;
    until_size(&mut socket, "1000 1000").await;
    type_in(&mut socket, "exit 3\r").await;
    let ended = event(&mut socket, &mut String::new()).await;
    assert_eq!(
        ended,
        TerminalEvent::Ended {
            code: Some(3),
            message: "The command ended with exit code 3.".into()
        }
    );
}

#[tokio::test]
async fn attack_a_person_without_pods_exec_is_refused_and_nothing_runs() {
    // `get` alone opens the API server's WebSocket upgrade; `create` is what is missing.
    let setup = setup("terminal-refused", &["get"]).await;
    let admin = admin().await;
    // What the attack would leave behind, were it to run.
    let mut socket = open(
        &setup,
        TerminalCommand::Program(vec!["touch".into(), "/tmp/intruded".into()]),
    )
    .await;
    let refused = event(&mut socket, &mut String::new()).await;
    assert_eq!(
        refused,
        TerminalEvent::Refused {
            message: format!(
                "{} may not create pods/exec in namespace {}.",
                setup.user, setup.ns
            )
        }
    );
    assert!(next(&mut socket).await.is_none(), "the socket closes");
    // The file was not made: looked for as the admin.
    let pods: kube::Api<k8s_openapi::api::core::v1::Pod> = kube::Api::namespaced(admin, &setup.ns);
    let mut looked = pods
        .exec(
            "shell",
            [
                "sh",
                "-c",
                "test -e /tmp/intruded && echo present || echo absent",
            ],
            &kube::api::AttachParams::default().stderr(false),
        )
        .await
        .expect("the admin may look");
    let mut out = String::new();
    tokio::io::AsyncReadExt::read_to_string(&mut looked.stdout().expect("stdout"), &mut out)
        .await
        .expect("read");
    assert_eq!(out.trim(), "absent");
}

#[tokio::test]
async fn signing_out_ends_an_open_terminal() {
    let setup = setup("terminal-sign-out", &["create", "get"]).await;
    let mut socket = started_shell(&setup).await;
    let signed_out = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .expect("http")
        .post(format!("{}/auth/logout", setup.origin))
        .header("origin", &setup.origin)
        .header("cookie", &setup.cookie)
        .send()
        .await
        .expect("sign out");
    assert_eq!(signed_out.status().as_u16(), 303);
    let ended = event(&mut socket, &mut String::new()).await;
    let TerminalEvent::Ended { code, message } = ended else {
        panic!("{ended:?}");
    };
    assert_eq!(code, None);
    assert!(message.contains("sign-in ended"), "{message}");
    assert!(next(&mut socket).await.is_none(), "the socket closes");
}

#[tokio::test]
async fn ten_mb_of_output_reaches_the_page_whole_without_portico_holding_it() {
    const BYTES: usize = 10_000_000;
    let _heavy = crate::kit::REAL_NODE_HEAVY.lock().await;
    // Its own process: the other tests' portals in this one would count too.
    let setup = setup_in_process_of_its_own("terminal-flood", &["create", "get"]).await;
    let Portal::Process { pid, .. } = &setup._portal else {
        unreachable!("a process of its own")
    };
    let pid = *pid;
    let before = crate::kit::rss_mb(pid, "VmRSS:");
    let script = format!("head -c {BYTES} /dev/zero | tr '\\0' x; echo; echo done-$((40+2))");
    let mut socket = open(
        &setup,
        TerminalCommand::Program(vec!["sh".into(), "-c".into(), script]),
    )
    .await;
    let started = event(&mut socket, &mut String::new()).await;
    assert!(
        matches!(started, TerminalEvent::Started { .. }),
        "{started:?}"
    );
    // Counted as it comes, never kept: only what Portico holds can grow.
    let (mut xs, mut tail, mut peak) = (0usize, String::new(), before);
    let ended = loop {
        match next(&mut socket).await {
            Some(Next::Output(bytes)) => {
                xs += bytes.iter().filter(|b| **b == b'x').count();
                tail.push_str(&String::from_utf8_lossy(&bytes));
                let keep = tail.len().saturating_sub(64);
                tail = tail.split_off(tail.floor_char_boundary(keep));
                peak = peak.max(crate::kit::rss_mb(pid, "VmRSS:"));
            }
            Some(Next::Event(event)) => break event,
            None => panic!("closed after {xs} bytes"),
        }
    };
    assert_eq!(xs, BYTES, "every byte of the output came");
    assert!(tail.contains("done-42"), "{tail:?}");
    assert!(
        matches!(ended, TerminalEvent::Ended { code: Some(0), .. }),
        "{ended:?}"
    );
    // The output passes through a chunk at a time: 10 MB never sits in memory.
    assert!(
        peak - before < 16.0,
        "the process grew {:.1} MB while 10 MB passed",
        peak - before
    );
}

#[tokio::test]
async fn a_terminal_ends_when_its_pod_goes() {
    let setup = setup("terminal-pod-gone", &["create", "get"]).await;
    let mut socket = started_shell(&setup).await;
    let pods: kube::Api<k8s_openapi::api::core::v1::Pod> =
        kube::Api::namespaced(admin().await, &setup.ns);
    pods.delete("shell", &kube::api::DeleteParams::default())
        .await
        .expect("the Pod is deleted");
    // Its container is stopped, the shell with it: the terminal says it ended.
    let ended = event(&mut socket, &mut String::new()).await;
    assert!(matches!(ended, TerminalEvent::Ended { .. }), "{ended:?}");
    assert!(next(&mut socket).await.is_none(), "the socket closes");
}

#[tokio::test]
async fn a_terminal_nobody_types_into_is_closed_after_the_idle_time() {
    let limits = portico_server::live::budgets::limits::LiveLimits {
        terminal_idle: Duration::from_secs(3),
        ..Default::default()
    };
    let setup = setup_limited("terminal-idle", &["create", "get"], Some(limits)).await;
    let mut socket = started_shell(&setup).await;
    // Typing counts as use; then nobody types.
    type_in(&mut socket, "echo $((6*7))\r").await;
    until_line(&mut socket, "42").await;
    let ended = event(&mut socket, &mut String::new()).await;
    assert_eq!(
        ended,
        TerminalEvent::Ended {
            code: None,
            message: "Nothing was typed for 3 seconds: the terminal is closed.".into()
        }
    );
    assert!(next(&mut socket).await.is_none(), "the socket closes");
}

#[tokio::test]
async fn attack_a_terminal_opened_from_another_site_is_refused_before_it_opens() {
    let setup = setup("terminal-cross-site", &["create", "get"]).await;
    // Another site's page, with the person's cookie sent along by their browser.
    let (status, body) = socket::refusal(handshake(&setup, Some("https://evil.example")).await);
    assert_eq!(status, 403);
    assert_eq!(body, "Portico refuses terminals opened from other sites.");
}

#[tokio::test]
async fn a_person_past_their_terminals_is_refused_and_the_open_one_goes_on() {
    let limits = portico_server::live::budgets::limits::LiveLimits {
        terminals_per_person: 1,
        ..Default::default()
    };
    let setup = setup_limited("terminal-bounded", &["create", "get"], Some(limits)).await;
    let mut socket = started_shell(&setup).await;
    let (status, body) = socket::refusal(handshake(&setup, Some(&setup.origin)).await);
    assert_eq!(status, 429);
    assert_eq!(
        body,
        "You have 1 terminals open in Portico, the most one person may: close one and try again."
    );
    type_in(&mut socket, "echo $((6*7))\r").await;
    until_line(&mut socket, "42").await;
}

#[tokio::test]
async fn a_terminal_ends_when_the_permission_to_open_it_is_withdrawn() {
    let limits = portico_server::live::budgets::limits::LiveLimits {
        recheck: Duration::from_secs(1),
        ..Default::default()
    };
    let setup = setup_limited("terminal-withdrawn", &["create", "get"], Some(limits)).await;
    let mut socket = started_shell(&setup).await;
    let bindings: kube::Api<k8s_openapi::api::rbac::v1::RoleBinding> =
        kube::Api::namespaced(admin().await, &setup.ns);
    bindings
        .delete("exec-ada", &kube::api::DeleteParams::default())
        .await
        .expect("the binding is deleted");
    let ended = event(&mut socket, &mut String::new()).await;
    assert_eq!(
        ended,
        TerminalEvent::Ended {
            code: None,
            message:
                "Your permission to open terminals here was withdrawn: the terminal is closed."
                    .into()
        }
    );
    assert!(next(&mut socket).await.is_none(), "the socket closes");
}
