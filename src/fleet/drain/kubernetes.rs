//! Kubernetes: `kubectl cordon`, then `kubectl drain --ignore-daemonsets
//! --delete-emptydir-data --timeout=…` before the node's first change; `kubectl uncordon`
//! once it is verified. A node that fails stays cordoned, annotated with the failure
//! (`cuda-upgrade/failure`). A node that was already unschedulable is drained and changed
//! but never uncordoned (the GPU Operator's rule). `kubectl` runs on the controller with
//! its usual configuration (`KUBECONFIG`, the current context); the node's name comes
//! after `--`.
//!
//! See: <https://kubernetes.io/docs/tasks/administer-cluster/safely-drain-node/>

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use crate::converge::{Drain, DrainFuture, DrainStep};
use crate::transport::Transport;

use super::controller;
use super::error::DrainError;
use super::name::{DrainNodeName, failure_line};

/// How long `cordon`, `uncordon`, `get` and `annotate` may take.
const COMMAND_BOUND: Duration = Duration::from_secs(120);

/// The annotation a failed node keeps.
pub const FAILURE_ANNOTATION: &str = "cuda-upgrade/failure";

/// One node's Kubernetes drain.
pub struct Kubernetes {
    /// `kubectl`, or another path to it.
    program: String,
    /// The Kubernetes node, e.g. `gpu3`.
    node: DrainNodeName,
    /// `kubectl drain --timeout`.
    timeout: Duration,
    /// The node was unschedulable before this run: it is never uncordoned.
    found_cordoned: AtomicBool,
}

impl Kubernetes {
    /// `node`'s drain through `program` (`kubectl`).
    pub fn new(program: String, node: DrainNodeName, timeout: Duration) -> Self {
        Self {
            program,
            node,
            timeout,
            found_cordoned: AtomicBool::new(false),
        }
    }

    async fn kubectl(
        &self,
        what: &str,
        args: Vec<String>,
        bound: Duration,
    ) -> Result<controller::Finished, DrainError> {
        controller::run_ok(what, &self.program, &args, &[], bound).await
    }

    async fn take_out(&self) -> Result<DrainStep, DrainError> {
        let node = self.node.as_str();
        let found = self
            .kubectl(
                &format!("read the kubernetes node `{node}`"),
                words(&[
                    "get",
                    "-o",
                    "jsonpath={.spec.unschedulable}",
                    "--",
                    "node",
                    node,
                ]),
                COMMAND_BOUND,
            )
            .await?;
        let cordoned = found.stdout.trim() == "true";
        self.found_cordoned.store(cordoned, Ordering::SeqCst);
        self.kubectl(
            &format!("cordon the kubernetes node `{node}`"),
            words(&["cordon", "--", node]),
            COMMAND_BOUND,
        )
        .await?;
        let timeout = format!("--timeout={}s", self.timeout.as_secs().max(1));
        self.kubectl(
            &format!("drain the kubernetes node `{node}`"),
            words(&[
                "drain",
                "--ignore-daemonsets",
                "--delete-emptydir-data",
                &timeout,
                "--",
                node,
            ]),
            // kubectl ends itself at its timeout; this is the backstop.
            self.timeout + COMMAND_BOUND,
        )
        .await?;
        Ok(DrainStep {
            in_service: false,
            detail: if cordoned {
                "drained (it was cordoned already: it stays cordoned)".to_string()
            } else {
                "cordoned and drained".to_string()
            },
        })
    }

    async fn put_back(&self) -> Result<DrainStep, DrainError> {
        if self.found_cordoned.load(Ordering::SeqCst) {
            return Ok(DrainStep {
                in_service: false,
                detail: "left cordoned as it was found".to_string(),
            });
        }
        let node = self.node.as_str();
        self.kubectl(
            &format!("uncordon the kubernetes node `{node}`"),
            words(&["uncordon", "--", node]),
            COMMAND_BOUND,
        )
        .await?;
        Ok(DrainStep {
            in_service: true,
            detail: "uncordoned".to_string(),
        })
    }

    async fn keep_out(&self, failure: &str) -> Result<DrainStep, DrainError> {
        let node = self.node.as_str();
        let annotation = format!("{FAILURE_ANNOTATION}={}", failure_line(failure));
        self.kubectl(
            &format!("annotate the kubernetes node `{node}`"),
            words(&["annotate", "--overwrite", "--", "node", node, &annotation]),
            COMMAND_BOUND,
        )
        .await?;
        Ok(DrainStep {
            in_service: false,
            detail: format!("left cordoned, annotated `{annotation}`"),
        })
    }
}

fn words(words: &[&str]) -> Vec<String> {
    words.iter().map(|word| word.to_string()).collect()
}

impl Drain for Kubernetes {
    fn describe(&self) -> String {
        format!("kubernetes node `{}`", self.node)
    }

    fn take_out<'a>(&'a self, _transport: &'a Transport) -> DrainFuture<'a> {
        Box::pin(async move { Ok(Kubernetes::take_out(self).await?) })
    }

    fn put_back<'a>(&'a self, _transport: &'a Transport) -> DrainFuture<'a> {
        Box::pin(async move { Ok(Kubernetes::put_back(self).await?) })
    }

    fn keep_out<'a>(&'a self, _transport: &'a Transport, reason: &'a str) -> DrainFuture<'a> {
        Box::pin(async move { Ok(Kubernetes::keep_out(self, reason).await?) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    /// No Kubernetes can run here: a recording stand-in for `kubectl` that answers
    /// `get` with `UNSCHEDULABLE` and records every argument list.
    fn stand_in(dir: &std::path::Path, unschedulable: &str) -> String {
        let path = dir.join("kubectl");
        let log = dir.join("calls");
        std::fs::write(
            &path,
            format!(
                "#!/bin/sh\nprintf '%s\\n' \"$*\" >> '{}'\n[ \"$1\" = get ] && printf '{unschedulable}'\nexit 0\n",
                log.display()
            ),
        )
        .unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        path.display().to_string()
    }

    fn calls(dir: &std::path::Path) -> Vec<String> {
        std::fs::read_to_string(dir.join("calls"))
            .unwrap_or_default()
            .lines()
            .map(str::to_string)
            .collect()
    }

    fn node(name: &str) -> DrainNodeName {
        DrainNodeName::parse(name, super::super::NameRules::Kubernetes).unwrap()
    }

    fn runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
    }

    #[test]
    fn cordon_drain_and_uncordon_run_the_documented_commands() {
        let dir = tempfile::tempdir().unwrap();
        let program = stand_in(dir.path(), "");
        let drain = Kubernetes::new(program, node("gpu-3"), Duration::from_secs(300));
        let transport = Transport::Local(crate::transport::LocalTransport::new());
        runtime().block_on(async {
            let out = Drain::take_out(&drain, &transport).await.unwrap();
            assert!(!out.in_service);
            let back = Drain::put_back(&drain, &transport).await.unwrap();
            assert!(back.in_service, "{back:?}");
        });
        assert_eq!(
            calls(dir.path()),
            [
                "get -o jsonpath={.spec.unschedulable} -- node gpu-3",
                "cordon -- gpu-3",
                "drain --ignore-daemonsets --delete-emptydir-data --timeout=300s -- gpu-3",
                "uncordon -- gpu-3",
            ]
        );
    }

    #[test]
    fn a_node_cordoned_before_is_never_uncordoned_and_a_failed_one_is_annotated() {
        let dir = tempfile::tempdir().unwrap();
        let program = stand_in(dir.path(), "true");
        let drain = Kubernetes::new(program, node("gpu-3"), Duration::from_secs(60));
        let transport = Transport::Local(crate::transport::LocalTransport::new());
        runtime().block_on(async {
            Drain::take_out(&drain, &transport).await.unwrap();
            let back = Drain::put_back(&drain, &transport).await.unwrap();
            assert!(!back.in_service, "{back:?}");
            // See: issue 33 — the annotation is the failure's first line, escaped.
            let kept = Drain::keep_out(&drain, &transport, "step pip\u{1b}[2J failed\u{2028}x=y")
                .await
                .unwrap();
            assert!(kept.detail.contains("cuda-upgrade/failure"), "{kept:?}");
        });
        let calls = calls(dir.path());
        assert!(
            !calls.iter().any(|call| call.starts_with("uncordon")),
            "{calls:?}"
        );
        assert_eq!(
            calls.last().unwrap(),
            "annotate --overwrite -- node gpu-3 cuda-upgrade/failure=step pip\\u{1b}[2J failed"
        );
    }
}
