//! Benchmark: how long after the server writes its ready line `upgrade` notices it,
//! over repeated launches through the local transport (p50 and p99), and how many
//! round trips a verification launch takes.
//!
//! `cargo bench --bench launch_latency -- [LAUNCHES]` (default 50).
#![expect(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "a benchmark stops at the first surprise"
)]

use std::path::PathBuf;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use cuda_upgrade::exec::launch::{LaunchOutcome, LaunchSpec, launch, stop};
use cuda_upgrade::manifest::Verify;
use cuda_upgrade::transport::{LocalTransport, Transport};

/// Prints the ready line with the wall-clock time it was written, then idles.
const SERVER: &str = r#"
import sys, time
print("[bench] loading", flush=True)
time.sleep(0.05)
print(f"The server is fired up and ready to roll! written_ns={time.time_ns()}", flush=True)
time.sleep(600)
"#;

fn main() {
    let launches: usize = std::env::args()
        .nth(1)
        .and_then(|arg| arg.parse().ok())
        .unwrap_or(50);
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("server.py");
    std::fs::write(&script, SERVER).unwrap();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let transport = Transport::Local(LocalTransport::new());
    let mut latencies = Vec::with_capacity(launches);
    for run in 0..launches {
        let log = dir.path().join(format!("server-{run}.log"));
        let spec = LaunchSpec {
            verify: Verify {
                launch: vec!["python3".into(), script.display().to_string()],
                workdir: None,
                log: log.clone(),
                ready: "The server is fired up".into(),
                fail: vec!["Traceback".into()],
                timeout: Duration::from_secs(30),
                require_idle_gpus: false,
                health: None,
                keep_running: true,
            },
            pid_file: dir.path().join("server.pid"),
            python: PathBuf::from("python3"),
        };
        let before = transport.round_trips();
        let outcome = runtime.block_on(launch(&transport, &spec)).unwrap();
        let detected = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_nanos();
        let LaunchOutcome::Ready { pid, .. } = outcome else {
            panic!("launch {run} did not become ready: {outcome:?}");
        };
        let trips = transport.round_trips() - before;
        runtime.block_on(stop(&transport, pid)).unwrap();
        let text = std::fs::read_to_string(&log).unwrap();
        let written: u128 = text
            .split("written_ns=")
            .nth(1)
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|digits| digits.parse().ok())
            .expect("the ready line carries its time");
        latencies.push(Duration::from_nanos(
            (detected.saturating_sub(written)) as u64,
        ));
        if run == 0 {
            println!(
                "round trips per verification launch (start, log stream; no idle check, no health): {trips}"
            );
        }
    }
    latencies.sort();
    let percentile = |p: f64| latencies[((latencies.len() as f64 - 1.0) * p).round() as usize];
    println!(
        "ready-line detection over {launches} launches: p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms",
        percentile(0.50).as_secs_f64() * 1e3,
        percentile(0.99).as_secs_f64() * 1e3,
        latencies.last().unwrap().as_secs_f64() * 1e3
    );
}
