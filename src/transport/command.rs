//! A command for a node, as data: program, quoted arguments, secret arguments, and
//! the few pieces of shell syntax the tool itself writes.
//!
//! [`NodeCommand::render`] is the only way a command becomes a shell line, and it
//! quotes every value with [`crate::shell::quote`]; [`NodeCommand::display`] is the
//! same line with each secret shown as `***`, for plans, logs and journals. Shell
//! syntax (`&&`, `>`, `|`) can only come from `&'static str` literals in this crate, so
//! a manifest value can never become syntax.

use std::fmt;

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

/// A command line to run on a node, e.g. `ldconfig -p`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct NodeCommand {
    args: Vec<Arg>,
}

impl NodeCommand {
    /// A command running `program`, e.g. `NodeCommand::new("ldconfig")`.
    pub fn new(program: impl Into<String>) -> Self {
        Self {
            args: vec![Arg::Quoted(program.into())],
        }
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

    /// Continue with another command after `&&`.
    pub fn and(mut self, next: NodeCommand) -> Self {
        self.args.push(Arg::Syntax("&&"));
        self.args.extend(next.args);
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
