//! Benchmark: how long after the server writes its ready line `upgrade` notices it,
//! over repeated launches through the local transport (p50 and p99), and how many
//! round trips a verification launch takes.
//!
//! `cargo bench --bench launch_latency -- [LAUNCHES] [--host HOST --ssh-config FILE]`
//! (default 50 launches, local transport; with `--host`, over SSH, e.g. to a testbed
//! node, whose clock is this machine's).
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
use cuda_upgrade::transport::{
    LocalTransport, NodeCommand, SshOptions, SshTransport, Stdin, Transport, WriteSpec,
};

/// Prints the ready line with the wall-clock time it was written, then idles.
const SERVER: &str = r#"
import sys, time
print("[bench] loading", flush=True)
time.sleep(0.05)
print(f"The server is fired up and ready to roll! written_ns={time.time_ns()}", flush=True)
time.sleep(600)
"#;

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|arg| arg != "--bench")
        .collect();
    let launches: usize = args.first().and_then(|arg| arg.parse().ok()).unwrap_or(50);
    let flag = |name: &str| {
        args.iter()
            .position(|arg| arg == name)
            .and_then(|at| args.get(at + 1))
            .cloned()
    };
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let transport = match flag("--host") {
        Some(host) => {
            let options = SshOptions {
                config_file: flag("--ssh-config").map(PathBuf::from),
                ..SshOptions::default()
            };
            Transport::Ssh(
                runtime
                    .block_on(SshTransport::connect(&host, &options))
                    .unwrap(),
            )
        }
        None => Transport::Local(LocalTransport::new()),
    };
    // Files live on the node, in its own /tmp (a testbed node's is private).
    let local_dir = tempfile::tempdir().unwrap();
    let dir = if matches!(transport, Transport::Local(_)) {
        local_dir.path().to_path_buf()
    } else {
        PathBuf::from("/tmp/cuda-upgrade-bench")
    };
    let script = dir.join("server.py");
    runtime
        .block_on(transport.write_file(
            Stdin::Bytes(SERVER.as_bytes()),
            &WriteSpec::new(&script, 0o644),
        ))
        .unwrap();
    println!("transport: {}", transport.name());
    let mut latencies = Vec::with_capacity(launches);
    for run in 0..launches {
        let log = dir.join(format!("server-{run}.log"));
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
            pid_file: dir.join("server.pid"),
            python: PathBuf::from("python3"),
            secrets: Vec::new(),
            stop_earlier: true,
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
        let read = NodeCommand::new("cat").arg(log.display().to_string());
        let text = runtime
            .block_on(transport.run(&read, None))
            .unwrap()
            .stdout_text();
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
