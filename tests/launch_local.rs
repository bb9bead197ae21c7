//! The verification launch for real through the local transport: a small Python server
//! that logs like SGLang, becomes ready, fails with a Traceback, exits, or hangs.
#![expect(
    clippy::unwrap_used,
    reason = "a test fails loudly at the first surprise"
)]

use std::path::{Path, PathBuf};
use std::time::Duration;

use cuda_upgrade::exec::launch::{LaunchFailure, LaunchOutcome, LaunchSpec, launch};
use cuda_upgrade::manifest::Verify;
use cuda_upgrade::transport::{LocalTransport, Transport};

const SERVER: &str = r#"
import http.server, sys, time, threading
mode, port = sys.argv[1], int(sys.argv[2])
print("[2026-12-02 12:00:00] Load weight begin.", flush=True)
if mode == "traceback":
    raise ImportError("libnvrtc.so.13: cannot open shared object file: No such file or directory")
if mode == "exit":
    sys.exit(3)
if mode == "hang":
    time.sleep(60)
class Health(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200 if self.path == "/health" else 404)
        self.end_headers()
    def log_message(self, *args):
        pass
server = http.server.HTTPServer(("127.0.0.1", port), Health)
print("[2026-12-02 12:00:01] The server is fired up and ready to roll!", flush=True)
server.serve_forever()
"#;

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn spec(dir: &Path, mode: &str, port: u16, timeout: Duration) -> LaunchSpec {
    let script = dir.join("server.py");
    std::fs::write(&script, SERVER).unwrap();
    LaunchSpec {
        verify: Verify {
            launch: vec![
                "python3".into(),
                script.display().to_string(),
                mode.into(),
                port.to_string(),
            ],
            workdir: Some(dir.to_path_buf()),
            log: dir.join("logs/server.log"),
            ready: "The server is fired up".into(),
            fail: vec!["Traceback".into()],
            timeout,
            require_idle_gpus: false,
            health: Some(format!("http://127.0.0.1:{port}/health")),
            keep_running: false,
        },
        pid_file: dir.join("run/server.pid"),
        python: PathBuf::from("python3"),
        secrets: Vec::new(),
        stop_earlier: true,
    }
}

fn alive(pid: u32) -> bool {
    Path::new(&format!("/proc/{pid}")).exists()
        && !std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .unwrap_or_default()
            .contains(") Z ")
}

#[tokio::test]
async fn ready_then_healthy_then_stopped() {
    let dir = tempfile::tempdir().unwrap();
    let transport = Transport::Local(LocalTransport::new());
    let outcome = launch(
        &transport,
        &spec(dir.path(), "ready", free_port(), Duration::from_secs(30)),
    )
    .await
    .unwrap();
    let LaunchOutcome::Ready {
        time_to_ready,
        pid,
        stopped,
    } = outcome
    else {
        panic!("not ready: {outcome:?}");
    };
    assert!(stopped);
    assert!(time_to_ready < Duration::from_secs(30));
    assert!(!alive(pid), "the server was stopped");
    let pid_file = std::fs::read_to_string(dir.path().join("run/server.pid")).unwrap();
    assert_eq!(pid_file.split(' ').next(), Some(pid.to_string().as_str()));
}

#[tokio::test]
async fn traceback_fails_with_the_last_lines() {
    let dir = tempfile::tempdir().unwrap();
    let transport = Transport::Local(LocalTransport::new());
    let outcome = launch(
        &transport,
        &spec(
            dir.path(),
            "traceback",
            free_port(),
            Duration::from_secs(30),
        ),
    )
    .await
    .unwrap();
    let LaunchOutcome::Failed {
        failure,
        last_lines,
        ..
    } = outcome
    else {
        panic!("not failed: {outcome:?}");
    };
    assert!(
        matches!(failure, LaunchFailure::FailPattern { ref pattern, .. } if pattern == "Traceback")
    );
    assert!(
        last_lines
            .iter()
            .any(|line| line.contains("libnvrtc.so.13")),
        "{last_lines:?}"
    );
}

#[tokio::test]
async fn a_server_that_exits_is_noticed_before_the_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let transport = Transport::Local(LocalTransport::new());
    let begin = std::time::Instant::now();
    let outcome = launch(
        &transport,
        &spec(dir.path(), "exit", free_port(), Duration::from_secs(60)),
    )
    .await
    .unwrap();
    assert!(
        matches!(
            outcome,
            LaunchOutcome::Failed {
                failure: LaunchFailure::Exited,
                ..
            }
        ),
        "{outcome:?}"
    );
    assert!(begin.elapsed() < Duration::from_secs(20));
}

#[tokio::test]
async fn a_hanging_server_times_out_and_is_stopped() {
    let dir = tempfile::tempdir().unwrap();
    let transport = Transport::Local(LocalTransport::new());
    let outcome = launch(
        &transport,
        &spec(dir.path(), "hang", free_port(), Duration::from_secs(2)),
    )
    .await
    .unwrap();
    let LaunchOutcome::Failed { failure, pid, .. } = outcome else {
        panic!("not failed: {outcome:?}");
    };
    assert_eq!(failure, LaunchFailure::Timeout { seconds: 2 });
    assert!(!alive(pid.unwrap()));
}

fn recorded_pid(dir: &Path) -> u32 {
    std::fs::read_to_string(dir.join("run/server.pid"))
        .unwrap()
        .split(' ')
        .next()
        .unwrap()
        .parse()
        .unwrap()
}

/// A launch cut off while it watches (its controller gone) leaves its detached server
/// running; the next launch under the node lock stops that server first, by its pid
/// and start time, and then runs its own.
#[tokio::test]
async fn a_server_an_interrupted_launch_left_running_is_stopped_by_the_next() {
    let dir = tempfile::tempdir().unwrap();
    let transport = Transport::Local(LocalTransport::new());
    let first = spec(dir.path(), "hang", free_port(), Duration::from_secs(60));
    let cut = tokio::time::timeout(Duration::from_secs(2), launch(&transport, &first)).await;
    assert!(cut.is_err(), "the first launch was to be cut off: {cut:?}");
    let orphan = recorded_pid(dir.path());
    assert!(alive(orphan), "the detached server outlives its launch");

    let mut unlocked = spec(dir.path(), "ready", free_port(), Duration::from_secs(30));
    unlocked.stop_earlier = false;
    // Without the node lock the record is left alone (another run may be watching it).
    let outcome = launch(&transport, &unlocked).await.unwrap();
    assert!(
        matches!(outcome, LaunchOutcome::Ready { .. }),
        "{outcome:?}"
    );
    assert!(
        alive(orphan),
        "a launch without the lock stops nothing of another's"
    );
    // That launch recorded its own (stopped) server; record the orphan again, as the
    // cut launch had left it.
    let stat = std::fs::read_to_string(format!("/proc/{orphan}/stat")).unwrap();
    let started = stat
        .rsplit_once(") ")
        .unwrap()
        .1
        .split(' ')
        .nth(19)
        .unwrap()
        .to_string();
    std::fs::write(
        dir.path().join("run/server.pid"),
        format!("{orphan} {started}\n"),
    )
    .unwrap();

    let next = spec(dir.path(), "ready", free_port(), Duration::from_secs(30));
    let outcome = launch(&transport, &next).await.unwrap();
    assert!(
        matches!(outcome, LaunchOutcome::Ready { .. }),
        "{outcome:?}"
    );
    assert!(
        !alive(orphan),
        "the interrupted launch's server was stopped"
    );
}

/// A record whose pid now names another process (same pid, another start time) stops
/// nothing; a server kept running on purpose (`keep_running`) is never taken for an
/// interrupted launch's.
#[tokio::test]
async fn a_reused_pid_and_a_kept_server_are_left_alone() {
    let dir = tempfile::tempdir().unwrap();
    let transport = Transport::Local(LocalTransport::new());
    let mut bystander = std::process::Command::new("sleep")
        .arg("30")
        .spawn()
        .unwrap();
    std::fs::create_dir_all(dir.path().join("run")).unwrap();
    std::fs::write(
        dir.path().join("run/server.pid"),
        format!("{} 1\n", bystander.id()),
    )
    .unwrap();
    let mut kept = spec(dir.path(), "ready", free_port(), Duration::from_secs(30));
    kept.verify.keep_running = true;
    let outcome = launch(&transport, &kept).await.unwrap();
    let LaunchOutcome::Ready { pid, stopped, .. } = outcome else {
        panic!("not ready: {outcome:?}");
    };
    assert!(!stopped);
    assert!(
        alive(bystander.id()),
        "another process with the recorded pid is left alone"
    );
    let next = spec(dir.path(), "ready", free_port(), Duration::from_secs(30));
    let outcome = launch(&transport, &next).await.unwrap();
    assert!(
        matches!(outcome, LaunchOutcome::Ready { .. }),
        "{outcome:?}"
    );
    assert!(alive(pid), "the kept server still runs");
    cuda_upgrade::exec::launch::stop(&transport, pid)
        .await
        .unwrap();
    bystander.kill().unwrap();
    bystander.wait().unwrap();
}
