//! The node's production service, started again once the verification server stopped
//! (the manifest's `service`): a systemd unit restarted (`systemctl restart -- UNIT`),
//! or a command started detached in its own session with its output appended to its
//! log. It is up once the unit is `active` (or the command still runs) and, when a
//! health URL is given, the URL answers 200 from the node, all within the service's
//! bound. Every value reaches the node's shell through the one quoting function, the
//! scripts here take them as `"$1"`.

use std::path::Path;
use std::time::Duration;

use serde::Serialize;

use crate::manifest::{Service, ServiceStart};
use crate::transport::{NodeCommand, Transport};

use super::ExecError;

/// How the node's production service was started again.
#[derive(Debug, Clone, Serialize)]
pub struct ServiceRecord {
    /// e.g. `systemd unit \`sglang.service\``.
    pub how: String,
    /// It answered (active, or its health URL 200) within its bound.
    pub up: bool,
    /// What was seen, e.g. the unit's state or the health URL's answer.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

/// Start a command detached in its own session, output appended to its log; print its
/// pid.
const START_SCRIPT: &str = r#"set -eu
log=$1; workdir=$2; shift 2
mkdir -p -- "$(dirname -- "$log")"
if [ -n "$workdir" ]; then cd -- "$workdir"; fi
setsid -- "$@" >> "$log" 2>&1 < /dev/null &
echo "$!"
"#;

/// Wait until the unit is active (exit 0), failed or the bound ends (exit 1); print its
/// state.
const UNIT_SCRIPT: &str = r#"unit=$1; seconds=$2
end=$(( $(date +%s) + seconds ))
while :; do
    state=$(systemctl is-active -- "$unit" 2>/dev/null) || true
    if [ "$state" = active ]; then echo active; exit 0; fi
    if [ "$state" = failed ]; then echo failed; exit 1; fi
    if [ "$(date +%s)" -ge "$end" ]; then echo "${state:-unknown}"; exit 1; fi
    sleep 1
done
"#;

/// Wait until the process still runs after a moment, and (when a URL is given) the URL
/// answers 200, within the bound; print what was seen.
const UP_PROGRAM: &str = r#"import os, sys, time, urllib.request
pid, url, seconds = int(sys.argv[1]), sys.argv[2], float(sys.argv[3])
end = time.monotonic() + seconds
def alive():
    if pid <= 0:
        return True
    try:
        os.kill(pid, 0)
        return True
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
time.sleep(min(1.0, seconds))
seen = "no answer"
while True:
    if not alive():
        print("the process exited")
        sys.exit(1)
    if not url:
        print("running, pid %d" % pid)
        sys.exit(0)
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            seen = "%s answered %d" % (url, response.status)
            if response.status == 200:
                print(seen)
                sys.exit(0)
    except Exception as caught:
        seen = "%s: %s" % (url, caught)
    if time.monotonic() > end:
        print(seen)
        sys.exit(1)
    time.sleep(0.5)
"#;

/// What `service` is, e.g. `systemd unit \`sglang.service\``.
pub fn describe(service: &Service) -> String {
    match &service.start {
        ServiceStart::Systemd { unit } => format!("systemd unit `{unit}`"),
        ServiceStart::Command { command, .. } => format!(
            "command `{}`",
            command.first().map(String::as_str).unwrap_or_default()
        ),
    }
}

/// Start `service` on the node and wait (bounded) until it is up; `python` probes its
/// health URL.
pub async fn start(
    transport: &Transport,
    service: &Service,
    python: &Path,
) -> Result<ServiceRecord, ExecError> {
    let how = describe(service);
    let seconds = service.timeout.as_secs().max(1);
    let bound = service.timeout + Duration::from_secs(60);
    let pid = match &service.start {
        ServiceStart::Systemd { unit } => {
            let restart = NodeCommand::new("systemctl")
                .args(["restart", "--", unit.as_str()])
                .bounded(bound);
            let output = transport.run(&restart, None).await?;
            if !output.success() {
                return Ok(ServiceRecord {
                    how,
                    up: false,
                    detail: Some(format!(
                        "`{}` failed: {}",
                        restart.display(),
                        output.tail(3)
                    )),
                });
            }
            let wait = NodeCommand::new("sh")
                .arg("-c")
                .script("service-unit", UNIT_SCRIPT)
                .args(["sh", unit.as_str(), &seconds.to_string()])
                .bounded(bound);
            let output = transport.run(&wait, None).await?;
            if !output.success() {
                return Ok(ServiceRecord {
                    how,
                    up: false,
                    detail: Some(format!("the unit is {}", output.tail(1).trim())),
                });
            }
            0
        }
        ServiceStart::Command {
            command,
            workdir,
            log,
        } => {
            let start = NodeCommand::new("sh")
                .arg("-c")
                .script("service-start", START_SCRIPT)
                .arg("sh")
                .arg(log.display().to_string())
                .arg(
                    workdir
                        .as_ref()
                        .map(|dir| dir.display().to_string())
                        .unwrap_or_default(),
                )
                .args(command.iter().cloned());
            let output = transport.run(&start, None).await?;
            let pid = output.stdout_text().trim().parse::<i64>().ok();
            match pid {
                Some(pid) if output.success() => pid,
                _ => {
                    return Ok(ServiceRecord {
                        how,
                        up: false,
                        detail: Some(format!("it did not start: {}", output.tail(3))),
                    });
                }
            }
        }
    };
    let up = NodeCommand::new(python.display().to_string())
        .arg("-c")
        .arg(UP_PROGRAM)
        .arg(pid.to_string())
        .arg(service.health.clone().unwrap_or_default())
        .arg(seconds.to_string())
        .bounded(bound);
    let output = transport.run(&up, None).await?;
    Ok(ServiceRecord {
        how,
        up: output.success(),
        detail: Some(output.tail(1).trim().to_string()),
    })
}
