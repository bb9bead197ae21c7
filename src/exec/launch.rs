//! The verification launch: start the server detached with its log and pid file,
//! stream the log until the ready line, a fail pattern or the timeout, probe the
//! health URL on the node, and stop the server unless asked to keep it.
//!
//! The log is read with `tail -F --pid`, which follows the file through inotify and
//! ends when the server exits: the controller never polls, and a server that dies
//! without printing anything is noticed at once.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde::Serialize;
use tokio::io::{AsyncBufReadExt, BufReader};

use crate::facts::{GpuProcess, parse_compute_apps};
use crate::manifest::Verify;
use crate::transport::{NodeCommand, Transport, mask};

use super::ExecError;

/// How many log lines a failure report shows.
pub const LAST_LINES: usize = 40;

/// Where the verification launch records its pid on the node.
pub const PID_FILE: &str = "/run/cuda-upgrade/launch.pid";

/// What to launch and how to judge it.
#[derive(Debug, Clone)]
pub struct LaunchSpec {
    /// The manifest's `verify` section.
    pub verify: Verify,
    /// Where the server's pid is recorded, e.g. `/var/lib/cuda-upgrade/launch.pid`.
    pub pid_file: PathBuf,
    /// The interpreter that probes the health URL on the node.
    pub python: PathBuf,
    /// Secret values to show as `***` wherever the server's output is reported.
    pub secrets: Vec<String>,
    /// Stop first a server that an earlier launch started and never stopped (its run
    /// was cut off), found by the pid and start time in `pid_file`. Only under the node
    /// lock: no other apply can be watching it then.
    pub stop_earlier: bool,
}

/// Why a launch did not become ready.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum LaunchFailure {
    /// A line matched a fail pattern, e.g. `Traceback`.
    FailPattern {
        /// The pattern.
        pattern: String,
        /// The matching line.
        line: String,
    },
    /// The server exited before printing the ready line.
    Exited,
    /// Neither ready nor failed within the timeout.
    Timeout {
        /// Seconds waited.
        seconds: u64,
    },
    /// The health URL did not answer 200.
    Unhealthy {
        /// e.g. `http://127.0.0.1:30000/health`.
        url: String,
        /// What the probe saw.
        detail: String,
    },
    /// The server could not be started.
    StartFailed {
        /// The start command's output.
        detail: String,
    },
}

impl std::fmt::Display for LaunchFailure {
    /// Why a launch failed, in words, e.g. ``a log line matched `Traceback`: Traceback
    /// (most recent call last):``.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::FailPattern { pattern, line } => {
                write!(f, "a log line matched `{pattern}`: {line}")
            }
            Self::Exited => f.write_str("the server exited before its ready line"),
            Self::Timeout { seconds } => write!(f, "no ready line within {seconds} s"),
            Self::Unhealthy { url, detail } => write!(f, "`{url}` did not answer 200: {detail}"),
            Self::StartFailed { detail } => write!(f, "the server did not start: {detail}"),
        }
    }
}

/// How a verification launch ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum LaunchOutcome {
    /// The ready line appeared (and the health URL answered, when given).
    Ready {
        /// From the start of the server to the ready line's detection.
        #[serde(rename = "time_to_ready_ms", serialize_with = "millis")]
        time_to_ready: Duration,
        /// The server's pid.
        pid: u32,
        /// `true` when the server was stopped afterwards.
        stopped: bool,
    },
    /// GPUs are busy: the launch was not started.
    Refused {
        /// Who holds the GPUs.
        holders: Vec<GpuProcess>,
        /// Why, e.g. ``nvidia-smi` is not installed`.
        reason: String,
    },
    /// It started and failed.
    Failed {
        /// Why.
        failure: LaunchFailure,
        /// The last lines of the log.
        last_lines: Vec<String>,
        /// The server's pid, when it started.
        pid: Option<u32>,
    },
}

impl LaunchFailure {
    fn masked(self, secrets: &[String]) -> Self {
        match self {
            Self::FailPattern { pattern, line } => Self::FailPattern {
                pattern,
                line: mask(&line, secrets),
            },
            Self::Unhealthy { url, detail } => Self::Unhealthy {
                url,
                detail: mask(&detail, secrets),
            },
            Self::StartFailed { detail } => Self::StartFailed {
                detail: mask(&detail, secrets),
            },
            other @ (Self::Exited | Self::Timeout { .. }) => other,
        }
    }
}

impl LaunchOutcome {
    /// The same outcome with every secret value in the server's output as `***`.
    pub fn masked(self, secrets: &[String]) -> Self {
        match self {
            Self::Failed {
                failure,
                last_lines,
                pid,
            } => Self::Failed {
                failure: failure.masked(secrets),
                last_lines: last_lines.iter().map(|line| mask(line, secrets)).collect(),
                pid,
            },
            other @ (Self::Ready { .. } | Self::Refused { .. }) => other,
        }
    }
}

fn millis<S: serde::Serializer>(value: &Duration, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_u128(value.as_millis())
}

/// Start the server detached, in its own session (so it can be stopped as a group),
/// with stdout and stderr appended to a fresh log; print its pid.
///
/// The log is never truncated in place: a new file is renamed over it, and only when
/// no file is there or the file is a log an earlier launch created (its path is
/// recorded in `PID_FILE.log`). So a manifest's `verify.log` can never empty a file the
/// tool did not write, and a symbolic link at that path is replaced, not followed.
const START_SCRIPT: &str = r#"set -eu
log=$1; pid_file=$2; workdir=$3; shift 3
mkdir -p -- "$(dirname -- "$log")" "$(dirname -- "$pid_file")"
owned="$pid_file.log"
if [ -e "$log" ] || [ -L "$log" ]; then
    if ! [ -f "$owned" ] || [ "$(cat -- "$owned")" != "$log" ]; then
        echo "refusing to replace $log: it exists and no earlier verification launch created it; remove it or choose another verify.log" >&2
        exit 3
    fi
fi
fresh=$(mktemp -- "$log.XXXXXX")
chmod 0644 -- "$fresh"
mv -fT -- "$fresh" "$log"
printf '%s\n' "$log" > "$owned"
if [ -n "$workdir" ]; then cd -- "$workdir"; fi
setsid -- "$@" >> "$log" 2>&1 < /dev/null &
pid=$!
# The pid and its start time (field 22 of /proc/PID/stat, counted after the command
# name, which may hold spaces): a later launch stops this server only if both match.
started=$(sed 's/^.*) //' "/proc/$pid/stat" 2>/dev/null | cut -d ' ' -f 20) || started=
printf '%s %s\n' "$pid" "$started" > "$pid_file"
echo "$pid"
"#;

/// Print the pid of the server an earlier launch recorded in the pid file when it still
/// runs (same pid, same start time), and forget the record either way. A kept server
/// (`verify.keep_running`) is recorded elsewhere and never named here.
const EARLIER_SCRIPT: &str = r#"pid_file=$1
[ -f "$pid_file" ] || exit 0
read -r pid started < "$pid_file" || true
rm -f -- "$pid_file"
case "$pid" in ''|*[!0-9]*) exit 0 ;; esac
[ -n "${started:-}" ] || exit 0
now=$(sed 's/^.*) //' "/proc/$pid/stat" 2>/dev/null | cut -d ' ' -f 20) || exit 0
[ "$now" = "$started" ] && echo "$pid"
exit 0
"#;

/// Move the record of a server kept running (`verify.keep_running`) aside, so no later
/// launch takes it for one an interrupted run left behind.
const KEEP_SCRIPT: &str = r#"pid_file=$1 pid=$2
read -r recorded rest < "$pid_file" 2>/dev/null || exit 0
[ "$recorded" = "$pid" ] && mv -f -- "$pid_file" "$pid_file.kept"
exit 0
"#;

/// Stop the server's process group: TERM, up to 10 s, then KILL.
const STOP_SCRIPT: &str = r#"pid=$1
running() { [ -e "/proc/$pid" ] && ! grep -q ') Z ' "/proc/$pid/stat" 2>/dev/null; }
running || exit 0
# Signal numbers and `-PGID`: the portable spelling that dash's builtin kill accepts.
kill -15 "-$pid" 2>/dev/null || kill -15 "$pid" 2>/dev/null || true
i=0
while running && [ "$i" -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
if running; then kill -9 "-$pid" 2>/dev/null || kill -9 "$pid" 2>/dev/null || true; fi
# The driver may list the pid a little longer while it tears the GPU context down (seen
# on an H200: `[No data]` for a killed server); wait for that too, bounded, so the next
# launch's idle check does not trip over this one.
if command -v nvidia-smi >/dev/null 2>&1; then
    i=0
    while [ "$i" -lt 150 ] && nvidia-smi --query-compute-apps=pid --format=csv,noheader 2>/dev/null | tr -d ' ' | grep -qx -- "$pid"; do
        sleep 0.1; i=$((i + 1))
    done
fi
"#;

/// Ask the GPUs who holds them.
pub async fn gpu_holders(
    transport: &Transport,
) -> Result<Result<Vec<GpuProcess>, String>, ExecError> {
    let command = NodeCommand::new("nvidia-smi")
        .arg("--query-compute-apps=gpu_uuid,pid,process_name,used_memory")
        .arg("--format=csv");
    let output = transport.run(&command, None).await?;
    if output.status == Some(127) {
        return Ok(Err(
            "`nvidia-smi` is not installed, so idle GPUs cannot be confirmed".to_string(),
        ));
    }
    if !output.success() {
        return Ok(Err(format!("`nvidia-smi` failed: {}", output.tail(5))));
    }
    Ok(parse_compute_apps(&output.stdout_text()).map_err(|error| error.to_string()))
}

/// Run the verification launch.
pub async fn launch(transport: &Transport, spec: &LaunchSpec) -> Result<LaunchOutcome, ExecError> {
    let verify = &spec.verify;
    if spec.stop_earlier {
        stop_earlier(transport, spec).await?;
    }
    if verify.require_idle_gpus {
        match gpu_holders(transport).await? {
            Ok(holders) if holders.is_empty() => {}
            Ok(holders) => {
                let reason = format!(
                    "{} process(es) hold the GPUs: {}",
                    holders.len(),
                    holders
                        .iter()
                        .map(|p| format!("pid {} `{}`", p.pid, p.process_name))
                        .collect::<Vec<_>>()
                        .join(", ")
                );
                return Ok(LaunchOutcome::Refused { holders, reason });
            }
            Err(reason) => {
                return Ok(LaunchOutcome::Refused {
                    holders: Vec::new(),
                    reason,
                });
            }
        }
    }
    let start = NodeCommand::new("sh")
        .arg("-c")
        .script("start-detached", START_SCRIPT)
        .arg("start")
        .arg(verify.log.display().to_string())
        .arg(spec.pid_file.display().to_string())
        .arg(
            verify
                .workdir
                .as_ref()
                .map(|w| w.display().to_string())
                .unwrap_or_default(),
        )
        .args(verify.launch.iter().cloned());
    let started_at = Instant::now();
    let output = transport.run(&start, None).await?;
    let pid = output.stdout_text().trim().parse::<u32>().ok();
    let Some(pid) = pid.filter(|_| output.success()) else {
        return Ok(LaunchOutcome::Failed {
            failure: LaunchFailure::StartFailed {
                detail: output.tail(10),
            },
            last_lines: Vec::new(),
            pid: None,
        }
        .masked(&spec.secrets));
    };
    let watched = watch_log(transport, spec, pid, started_at).await;
    let outcome = match watched {
        Ok(Watch::Ready(time_to_ready)) => match check_health(transport, spec).await? {
            Some(failure) => LaunchOutcome::Failed {
                failure,
                last_lines: Vec::new(),
                pid: Some(pid),
            },
            None => LaunchOutcome::Ready {
                time_to_ready,
                pid,
                stopped: !verify.keep_running,
            },
        },
        Ok(Watch::Failed(failure, last_lines)) => LaunchOutcome::Failed {
            failure,
            last_lines,
            pid: Some(pid),
        },
        Err(error) => {
            stop(transport, pid).await?;
            return Err(error);
        }
    };
    let keep = verify.keep_running && matches!(outcome, LaunchOutcome::Ready { .. });
    if keep {
        let command = NodeCommand::new("sh")
            .arg("-c")
            .script("keep-launch", KEEP_SCRIPT)
            .arg("keep")
            .arg(spec.pid_file.display().to_string())
            .arg(pid.to_string());
        transport.run(&command, None).await?;
    } else {
        stop(transport, pid).await?;
    }
    Ok(outcome.masked(&spec.secrets))
}

enum Watch {
    Ready(Duration),
    Failed(LaunchFailure, Vec<String>),
}

async fn watch_log(
    transport: &Transport,
    spec: &LaunchSpec,
    pid: u32,
    started_at: Instant,
) -> Result<Watch, ExecError> {
    let verify = &spec.verify;
    // Validation bounds a timeout to 7 days; the bound is applied again here so that
    // no value can overflow the deadline below.
    let timeout = verify.timeout.min(crate::manifest::MAX_DURATION);
    // `timeout` bounds the remote tail even if the controller goes away.
    let limit = timeout.as_secs().saturating_add(5);
    let command = NodeCommand::new("timeout")
        .arg(limit.to_string())
        .arg("tail")
        .arg("-n")
        .arg("+1")
        .arg(format!("--pid={pid}"))
        .arg("-F")
        .arg("--")
        .arg(verify.log.display().to_string());
    let stream = transport.stream(&command).await?;
    let mut lines = BufReader::new(stream.stdout).lines();
    let mut last: std::collections::VecDeque<String> =
        std::collections::VecDeque::with_capacity(LAST_LINES);
    let deadline = tokio::time::Instant::from_std(started_at)
        .checked_add(timeout)
        .unwrap_or_else(tokio::time::Instant::now);
    let result = loop {
        let line = match tokio::time::timeout_at(deadline, lines.next_line()).await {
            Err(_) => {
                break Watch::Failed(
                    LaunchFailure::Timeout {
                        seconds: verify.timeout.as_secs(),
                    },
                    last.into(),
                );
            }
            Ok(Ok(Some(line))) => line,
            Ok(Ok(None)) => break Watch::Failed(LaunchFailure::Exited, last.into()),
            Ok(Err(_)) => break Watch::Failed(LaunchFailure::Exited, last.into()),
        };
        if last.len() == LAST_LINES {
            last.pop_front();
        }
        last.push_back(line.clone());
        if line.contains(&verify.ready) {
            break Watch::Ready(started_at.elapsed());
        }
        if let Some(pattern) = verify
            .fail
            .iter()
            .find(|pattern| line.contains(pattern.as_str()))
        {
            // A Traceback's interesting part comes after its first line: read on briefly.
            let grace = tokio::time::Instant::now() + Duration::from_millis(500);
            while let Ok(Ok(Some(more))) = tokio::time::timeout_at(grace, lines.next_line()).await {
                if last.len() == LAST_LINES {
                    last.pop_front();
                }
                last.push_back(more);
            }
            break Watch::Failed(
                LaunchFailure::FailPattern {
                    pattern: pattern.clone(),
                    line,
                },
                last.into(),
            );
        }
    };
    drop(lines);
    drop(stream.handle);
    Ok(result)
}

async fn check_health(
    transport: &Transport,
    spec: &LaunchSpec,
) -> Result<Option<LaunchFailure>, ExecError> {
    let Some(url) = &spec.verify.health else {
        return Ok(None);
    };
    // Asked from the node itself: the URL is the node's (`127.0.0.1` is the node).
    const PROGRAM: &str = r#"import sys, time, urllib.request
url = sys.argv[1]
error = "no answer"
for attempt in range(20):
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            print(response.status)
            sys.exit(0 if response.status == 200 else 1)
    except Exception as caught:
        error = str(caught)
        time.sleep(0.25)
print(error)
sys.exit(1)
"#;
    let command = NodeCommand::new(spec.python.display().to_string())
        .arg("-c")
        .arg(PROGRAM)
        .arg(url.clone());
    let output = transport.run(&command, None).await?;
    Ok((!output.success()).then(|| LaunchFailure::Unhealthy {
        url: url.clone(),
        detail: output.tail(3),
    }))
}

/// Stop the server an earlier, interrupted launch left running (see [`EARLIER_SCRIPT`]).
async fn stop_earlier(transport: &Transport, spec: &LaunchSpec) -> Result<(), ExecError> {
    let command = NodeCommand::new("sh")
        .arg("-c")
        .script("earlier-launch", EARLIER_SCRIPT)
        .arg("earlier")
        .arg(spec.pid_file.display().to_string());
    let output = transport.run(&command, None).await?;
    if let Ok(pid) = output.stdout_text().trim().parse::<u32>() {
        tracing::info!(
            node = transport.name(),
            pid,
            "stopping the verification server an interrupted launch left running"
        );
        stop(transport, pid).await?;
    }
    Ok(())
}

/// Stop the process group the launch started (by its recorded pid only).
pub async fn stop(transport: &Transport, pid: u32) -> Result<(), ExecError> {
    let command = NodeCommand::new("sh")
        .arg("-c")
        .script("stop-group", STOP_SCRIPT)
        .arg("stop")
        .arg(pid.to_string());
    transport.run(&command, None).await?;
    Ok(())
}
