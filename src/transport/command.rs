//! A command for a node, as data: program, quoted arguments, secret arguments, and
//! the few pieces of shell syntax the tool itself writes.
//!
//! [`NodeCommand::render`] is the only way a command becomes a shell line, and it
//! quotes every value with [`crate::shell::quote`]; [`NodeCommand::display`] is the
//! same line with each secret shown as `***`, for plans, logs and journals. Shell
//! syntax (`&&`, `>`, `|`) can only come from `&'static str` literals in this crate, so
//! a manifest value can never become syntax.

use std::fmt;
use std::time::Duration;

use crate::shell;

/// One word of a command.
#[derive(Clone, PartialEq, Eq)]
pub enum Arg {
    /// Shell syntax written by the tool, e.g. `&&` or `2>&1`; never a value.
    Syntax(&'static str),
    /// A value, quoted when rendered, e.g. `/usr/local/cuda-13.0`.
    Quoted(String),
    /// A value that is quoted when rendered and shown as `***` everywhere else.
    Secret(String),
    /// A shell script written by the tool, passed to `sh -c`: quoted when rendered,
    /// shown by name (e.g. `<source-install script>`) so plans stay readable.
    Script {
        /// e.g. `source-install`.
        name: &'static str,
        /// The script's text.
        body: &'static str,
    },
}

impl fmt::Debug for Arg {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Syntax(text) => write!(f, "Syntax({text:?})"),
            Self::Quoted(text) => write!(f, "Quoted({text:?})"),
            Self::Secret(_) => f.write_str("Secret(***)"),
            Self::Script { name, .. } => write!(f, "Script({name})"),
        }
    }
}

/// How long a command may run on a node unless it says otherwise: small file
/// operations, `ldconfig`, `pip check`, the node lock.
pub const DEFAULT_BOUND: Duration = Duration::from_secs(600);

/// How long an installation may run on a node: a pip install of a full stack, the
/// toolkit's runfile or apt packages, a source build, streaming a 4 GiB runfile.
pub const INSTALL_BOUND: Duration = Duration::from_secs(3600);

/// A command line to run on a node, e.g. `ldconfig -p`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct NodeCommand {
    args: Vec<Arg>,
    /// How long it may run; [`DEFAULT_BOUND`] when `None`.
    bound: Option<Duration>,
}

impl NodeCommand {
    /// A command running `program`, e.g. `NodeCommand::new("ldconfig")`.
    pub fn new(program: impl Into<String>) -> Self {
        Self {
            args: vec![Arg::Quoted(program.into())],
            bound: None,
        }
    }

    /// Let it run for at most `bound` (e.g. 1 h for a pip install); past it the node
    /// kills its whole process group and the step fails with a timeout.
    pub fn bounded(mut self, bound: Duration) -> Self {
        self.bound = Some(bound);
        self
    }

    /// How long it may run, e.g. 600 s.
    pub fn bound(&self) -> Duration {
        self.bound.unwrap_or(DEFAULT_BOUND)
    }

    /// The shell line a transport runs: [`NodeCommand::render`] under coreutils'
    /// `timeout` with this command's bound (its process group is killed, then, 10 s
    /// later, killed hard), or as is on a node without `timeout`. A watchdog ends the
    /// command when the process that started it (`sshd`'s session, which ends with the
    /// connection, or the local `upgrade`) is gone, so nothing is left running on a node
    /// after a dropped connection; a detached server (`setsid`) is outside its group.
    /// Not for display.
    pub fn render_bounded(&self) -> String {
        let line = shell::quote(&self.render());
        let seconds = self.bound().as_secs().max(1);
        format!(
            "command -v timeout >/dev/null 2>&1 || exec sh -c {line}; \
             parent=$PPID; exec 3<&0; \
             timeout -k 10 {seconds} sh -c {line} <&3 3<&- & job=$!; exec 3<&-; \
             ( while kill -0 \"$parent\" 2>/dev/null; do sleep 1; done; kill -TERM \"$job\" 2>/dev/null ) </dev/null >/dev/null 2>&1 & watch=$!; \
             wait \"$job\"; status=$?; kill \"$watch\" 2>/dev/null; exit \"$status\""
        )
    }

    /// Add one quoted argument.
    pub fn arg(mut self, value: impl Into<String>) -> Self {
        self.args.push(Arg::Quoted(value.into()));
        self
    }

    /// Add quoted arguments.
    pub fn args<I, S>(mut self, values: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.args
            .extend(values.into_iter().map(|value| Arg::Quoted(value.into())));
        self
    }

    /// Add a URL: a secret when it carries credentials (`https://user:token@host/…`).
    pub fn arg_url(self, url: impl Into<String>) -> Self {
        let url = url.into();
        let has_credentials = url::Url::parse(&url)
            .is_ok_and(|parsed| !parsed.username().is_empty() || parsed.password().is_some());
        if has_credentials {
            self.secret(url)
        } else {
            self.arg(url)
        }
    }

    /// Add a secret argument: quoted when run, `***` when shown.
    pub fn secret(mut self, value: impl Into<String>) -> Self {
        self.args.push(Arg::Secret(value.into()));
        self
    }

    /// Add a script written by the tool (for `sh -c`), shown by its name.
    pub fn script(mut self, name: &'static str, body: &'static str) -> Self {
        self.args.push(Arg::Script { name, body });
        self
    }

    /// Add shell syntax written by the tool, e.g. `&&`.
    pub fn syntax(mut self, text: &'static str) -> Self {
        self.args.push(Arg::Syntax(text));
        self
    }

    /// Continue with another command after `&&` (the longer of the two bounds holds).
    pub fn and(mut self, next: NodeCommand) -> Self {
        self.args.push(Arg::Syntax("&&"));
        self.args.extend(next.args);
        self.bound = match (self.bound, next.bound) {
            (Some(first), Some(second)) => Some(first.max(second)),
            (first, second) => first.or(second),
        };
        self
    }

    /// The words of the command.
    pub fn words(&self) -> &[Arg] {
        &self.args
    }

    /// The shell line that runs, every value quoted. Not for display: secrets are in it.
    pub fn render(&self) -> String {
        self.join(|arg| match arg {
            Arg::Syntax(text) => (*text).to_string(),
            Arg::Quoted(value) | Arg::Secret(value) => shell::quote(value),
            Arg::Script { body, .. } => shell::quote(body),
        })
    }

    /// The shell line for people: the same as [`NodeCommand::render`], secrets as `***`.
    pub fn display(&self) -> String {
        self.join(|arg| match arg {
            Arg::Syntax(text) => (*text).to_string(),
            Arg::Quoted(value) => shell::quote(value),
            Arg::Secret(_) => "***".to_string(),
            Arg::Script { name, .. } => format!("<{name} script>"),
        })
    }

    /// The secret values, so output from the node can be masked before it is shown.
    pub fn secrets(&self) -> Vec<&str> {
        self.args
            .iter()
            .filter_map(|arg| match arg {
                Arg::Secret(value) if !value.is_empty() => Some(value.as_str()),
                _ => None,
            })
            .collect()
    }

    fn join(&self, word: impl Fn(&Arg) -> String) -> String {
        self.args.iter().map(word).collect::<Vec<_>>().join(" ")
    }
}

impl fmt::Display for NodeCommand {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.display())
    }
}

/// Replace every secret in `text` with `***`, e.g. for a command's output tail. An empty
/// secret masks nothing; longer secrets are masked first, so one that contains another
/// is not left half-shown.
pub fn mask<S: AsRef<str>>(text: &str, secrets: &[S]) -> String {
    let mut secrets: Vec<&str> = secrets
        .iter()
        .map(AsRef::as_ref)
        .filter(|secret| !secret.is_empty())
        .collect();
    secrets.sort_by_key(|secret| std::cmp::Reverse(secret.len()));
    secrets.iter().fold(text.to_string(), |masked, secret| {
        masked.replace(secret, "***")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_quoted_and_syntax_is_not() {
        let command =
            NodeCommand::new("ldconfig").and(NodeCommand::new("echo").arg("$(reboot); 'x'"));
        assert_eq!(
            command.render(),
            "ldconfig && echo '$(reboot); '\\''x'\\'''"
        );
    }

    #[test]
    fn bounded_lines_run_under_timeout_and_fall_back_without_it() {
        let command = NodeCommand::new("echo")
            .arg("it's")
            .bounded(Duration::from_secs(5));
        let line = command.render_bounded();
        assert!(
            line.starts_with("command -v timeout >/dev/null 2>&1 || exec sh -c ")
                && line.contains("timeout -k 10 5 sh -c "),
            "{line}"
        );
        for path in ["/usr/bin:/bin", "/nonexistent"] {
            let output = std::process::Command::new("/bin/sh")
                .arg("-c")
                .arg(&line)
                .env("PATH", path)
                .output()
                .unwrap();
            if path == "/nonexistent" {
                // No `timeout` and no `echo` on PATH: the fallback branch ran.
                assert!(!output.status.success());
            } else {
                assert_eq!(String::from_utf8_lossy(&output.stdout), "it's\n");
            }
        }
        let started = std::time::Instant::now();
        let hung = NodeCommand::new("sleep")
            .arg("30")
            .bounded(Duration::from_secs(1));
        let output = std::process::Command::new("sh")
            .arg("-c")
            .arg(hung.render_bounded())
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(124));
        assert!(started.elapsed() < Duration::from_secs(10));
    }

    #[test]
    fn a_command_dies_with_the_process_that_started_it() {
        let dir = tempfile::tempdir().unwrap();
        let pid_file = dir.path().join("pid");
        let command = NodeCommand::new("sh")
            .arg("-c")
            .arg("echo $$ > \"$1\"; exec sleep 60")
            .arg("hung")
            .arg(pid_file.display().to_string());
        // The starter (standing in for sshd's session) leaves after half a second.
        let mut starter = std::process::Command::new("sh")
            .arg("-c")
            .arg("sh -c \"$1\" </dev/null >/dev/null 2>&1 & sleep 0.5")
            .arg("starter")
            .arg(command.render_bounded())
            .spawn()
            .unwrap();
        starter.wait().unwrap();
        let started = std::time::Instant::now();
        let alive = |pid: &str| std::path::Path::new(&format!("/proc/{pid}")).exists();
        let mut pid = String::new();
        while started.elapsed() < Duration::from_secs(10) {
            pid = std::fs::read_to_string(&pid_file)
                .unwrap_or_default()
                .trim()
                .to_string();
            if !pid.is_empty() && !alive(&pid) {
                break;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        assert!(!pid.is_empty(), "the command never started");
        assert!(!alive(&pid), "`sleep 60` outlived its starter by 10 s");
    }

    #[test]
    fn secrets_are_masked_for_people() {
        let command = NodeCommand::new("env").secret("hf_abc").arg("plain");
        assert_eq!(command.render(), "env hf_abc plain");
        assert_eq!(command.display(), "env *** plain");
        assert!(!format!("{command:?}").contains("hf_abc"));
        assert_eq!(mask("token=hf_abc", &command.secrets()), "token=***");
        assert_eq!(mask("abc", &[""]), "abc", "an empty secret masks nothing");
        assert_eq!(mask("x=hf_abcdef", &["hf_abc", "hf_abcdef"]), "x=***");
    }
}
