//! `verify`: the launch that proves the stack works, its health check, timeouts and
//! log.

use super::toolkit::Credentials;
use super::*;

impl Checker {
    pub(super) fn verify(&mut self, node: &Node) -> Option<Verify> {
        const KEYS: &[&str] = &[
            "launch",
            "workdir",
            "log",
            "ready",
            "fail",
            "timeout",
            "require_idle_gpus",
            "health",
            "keep_running",
        ];
        let mut fields = self.fields(node, "verify", KEYS)?;
        let launch_node = self.require(&mut fields, "launch");
        let launch = launch_node.and_then(|n| self.program_words(n, "verify.launch"));
        let workdir = fields
            .take("workdir")
            .and_then(|n| self.absolute_path(n, "verify.workdir"));
        let log = self
            .require(&mut fields, "log")
            .and_then(|n| self.log_path(n, "verify.log"));
        let ready = self
            .require(&mut fields, "ready")
            .and_then(|n| self.line(n, "verify.ready"));
        let fail = fields
            .take("fail")
            .map(|n| match &n.kind {
                NodeKind::Scalar(_) => self.line(n, "verify.fail").into_iter().collect(),
                _ => self
                    .strings(n, "verify.fail")
                    .into_iter()
                    .map(|(text, _)| text)
                    .collect(),
            })
            .unwrap_or_else(|| vec!["Traceback".to_string()]);
        let timeout = self.require(&mut fields, "timeout").and_then(|n| {
            let text = self.non_empty_string(n, "verify.timeout")?;
            match parse_duration(&text) {
                Ok(duration) => Some(duration),
                Err(hint) => {
                    self.error_with_hint(n.span, format!("invalid duration `{text}` for `verify.timeout`: expected e.g. `90s`, `10m` or `1h30m`"), hint);
                    None
                }
            }
        });
        let require_idle_gpus = fields
            .take("require_idle_gpus")
            .and_then(|n| self.boolean(n, "verify.require_idle_gpus"))
            .unwrap_or(true);
        let health = fields
            .take("health")
            .and_then(|n| self.url(n, "verify.health", &["http", "https"], Credentials::Refused));
        let keep_running = fields
            .take("keep_running")
            .and_then(|n| self.boolean(n, "verify.keep_running"))
            .unwrap_or(false);
        self.finish(fields);
        Some(Verify {
            launch: launch?,
            workdir,
            log: log?,
            ready: ready?,
            fail,
            timeout: timeout?,
            require_idle_gpus,
            health,
            keep_running,
        })
    }

    /// A program and its arguments, written as a list or as one line split like a shell
    /// would (no expansion), e.g. `verify.launch`; the program may not start with `-`.
    pub(super) fn program_words(&mut self, n: &Node, context: &str) -> Option<Vec<String>> {
        let words = match &n.kind {
            NodeKind::Sequence(_) => {
                let words: Vec<String> = self
                    .strings(n, context)
                    .into_iter()
                    .map(|(word, _)| word)
                    .collect();
                if words.is_empty() {
                    self.error(n.span, format!("expected `{context}` to name a program"));
                    return None;
                }
                words
            }
            _ => {
                let text = self.line(n, context)?;
                match shell::split(&text) {
                    Ok(words) if !words.is_empty() => words,
                    Ok(_) => {
                        self.error(n.span, format!("expected `{context}` to name a program"));
                        return None;
                    }
                    Err(error) => {
                        self.error(n.span, format!("invalid `{context}`: {error}"));
                        return None;
                    }
                }
            }
        };
        let program = words.first().map(String::as_str).unwrap_or_default();
        if program.starts_with('-') {
            self.error(
                n.span,
                format!("invalid `{context}`: the program `{program}` starts with `-`, which would be read as an option"),
            );
            return None;
        }
        Some(words)
    }

    /// The verification log: an absolute file path outside the system's directories,
    /// since the launch replaces the file.
    pub(super) fn log_path(&mut self, node: &Node, context: &str) -> Option<PathBuf> {
        let path = self.file_path(node, context)?;
        let normalized: PathBuf = path.components().collect();
        let system = SYSTEM_TREES
            .iter()
            .find(|tree| normalized.starts_with(tree) || is_lib_tree(&normalized));
        if let Some(tree) = system {
            let tree = if is_lib_tree(&normalized) {
                "/lib*"
            } else {
                tree
            };
            self.error_with_hint(
                node.span,
                format!("invalid `{context}` `{}`: the launch writes the log, and `{tree}` belongs to the system", path.display()),
                "write it under `/var/log`, `/var/tmp` or the workdir, e.g. `/var/log/sglang-verify.log`",
            );
            return None;
        }
        Some(path)
    }
}

/// Trees the verification log may not be written into (and `/lib*`, see [`is_lib_tree`]).
pub(super) const SYSTEM_TREES: &[&str] = &[
    "/etc", "/usr", "/bin", "/sbin", "/boot", "/proc", "/sys", "/dev", "/lib", "/run",
];

/// `/lib`, `/lib64`, `/libx32`… and anything below them.
pub(super) fn is_lib_tree(path: &Path) -> bool {
    path.components()
        .nth(1)
        .and_then(|c| c.as_os_str().to_str())
        .is_some_and(|first| first.starts_with("lib"))
}
