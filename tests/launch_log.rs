//! The verification launch's log through the local transport: a file the tool did not
//! create is never truncated, a log of an earlier launch is replaced, and a timeout at
//! the manifest's maximum does not overflow the deadline.
//!
//! See: issue 9 — `verify.log` could point at any file, which the launch truncated; a
//! timeout of billions of hours panicked the launch.

use std::path::{Path, PathBuf};
use std::time::Duration;

use cuda_upgrade::exec::launch::{LaunchFailure, LaunchOutcome, LaunchSpec, launch};
use cuda_upgrade::manifest::{MAX_DURATION, Verify};
use cuda_upgrade::transport::{LocalTransport, Transport};

fn spec(dir: &Path, launch: &[&str], timeout: Duration) -> LaunchSpec {
    LaunchSpec {
        verify: Verify {
            launch: launch.iter().map(ToString::to_string).collect(),
            workdir: Some(dir.to_path_buf()),
            log: dir.join("logs/server.log"),
            ready: "ready-line".into(),
            fail: vec!["Traceback".into()],
            timeout,
            require_idle_gpus: false,
            health: None,
            keep_running: false,
        },
        pid_file: dir.join("run/server.pid"),
        python: PathBuf::from("python3"),
        secrets: Vec::new(),
        stop_earlier: true,
    }
}

#[tokio::test]
async fn a_foreign_file_is_never_truncated_and_our_own_log_is_replaced() {
    let dir = tempfile::tempdir().unwrap();
    let transport = Transport::Local(LocalTransport::new());
    let log = dir.path().join("logs/server.log");
    std::fs::create_dir_all(log.parent().unwrap()).unwrap();
    std::fs::write(&log, "precious\n").unwrap();
    let ready = ["sh", "-c", "echo ready-line; sleep 30"];
    let outcome = launch(
        &transport,
        &spec(dir.path(), &ready, Duration::from_secs(20)),
    )
    .await
    .unwrap();
    let LaunchOutcome::Failed {
        failure: LaunchFailure::StartFailed { detail },
        ..
    } = outcome
    else {
        panic!("a foreign log was replaced: {outcome:?}");
    };
    assert!(
        detail.contains("no earlier verification launch created it"),
        "{detail}"
    );
    assert_eq!(std::fs::read_to_string(&log).unwrap(), "precious\n");

    std::fs::remove_file(&log).unwrap();
    for _ in 0..2 {
        let outcome = launch(
            &transport,
            &spec(dir.path(), &ready, Duration::from_secs(20)),
        )
        .await
        .unwrap();
        assert!(
            matches!(outcome, LaunchOutcome::Ready { .. }),
            "{outcome:?}"
        );
        assert_eq!(std::fs::read_to_string(&log).unwrap(), "ready-line\n");
    }
}

#[tokio::test]
async fn the_longest_timeout_does_not_overflow() {
    let dir = tempfile::tempdir().unwrap();
    let transport = Transport::Local(LocalTransport::new());
    for timeout in [MAX_DURATION, Duration::MAX] {
        let outcome = launch(
            &transport,
            &spec(dir.path(), &["sh", "-c", "echo Traceback"], timeout),
        )
        .await
        .unwrap();
        assert!(
            matches!(outcome, LaunchOutcome::Failed { .. }),
            "{outcome:?}"
        );
    }
}
