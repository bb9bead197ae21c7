//! The URL of pip's default index: the index a manifest means by an entry without
//! `url` (e.g. `- { name: default }`).
//!
//! Looked up in pip's own order, never from a literal in this code:
//! 1. the `PIP_INDEX_URL` environment variable;
//! 2. pip's configuration as pip itself reads it (`python3 -m pip config list`, which
//!    honours `PIP_CONFIG_FILE`, the global, user and site files): `install.index-url`
//!    wins over `global.index-url`, as it does for `pip install`;
//! 3. pip's built-in default, asked of the machine's pip at run time: first its
//!    `PyPI.simple_url` constant, then, should that internal name move, the
//!    `(default …)` that `pip download --help` prints for `--index-url`.
//!
//! This module runs pip as a child process (bounded in time) and does no network I/O.

use std::ffi::OsStr;
use std::fmt;
use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::settings::env;

/// How long one pip invocation may take before it is abandoned.
const PIP_TIMEOUT: Duration = Duration::from_secs(30);

/// Where the default index URL was found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DefaultIndexSource {
    /// The `PIP_INDEX_URL` environment variable.
    Environment,
    /// A key of pip's configuration, e.g. `global.index-url`.
    PipConfig(String),
    /// pip's built-in default, as the machine's pip reports it.
    PipDefault,
}

impl fmt::Display for DefaultIndexSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Environment => write!(f, "`{}`", env::PIP_INDEX_URL),
            Self::PipConfig(key) => write!(f, "pip configuration `{key}`"),
            Self::PipDefault => f.write_str("pip's built-in default"),
        }
    }
}

/// pip's default index, e.g. `https://mirror.example/simple` from `global.index-url`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DefaultIndex {
    /// The simple-API base URL, possibly with credentials: never print it unredacted.
    pub url: String,
    /// Where it was found.
    pub source: DefaultIndexSource,
}

/// Failed to find pip's default index.
#[derive(Debug, thiserror::Error)]
pub enum PipConfigError {
    /// Neither the environment, pip's configuration nor pip itself named an index.
    #[error(
        "Failed to find pip's default index URL: `{}` is unset and `{python} -m pip` named none ({reason})",
        env::PIP_INDEX_URL
    )]
    NotFound {
        /// The interpreter asked, e.g. `python3`.
        python: String,
        /// What went wrong with each attempt, e.g. `No module named pip`.
        reason: String,
    },
}

/// Find pip's default index URL, asking the interpreter `python` (e.g. `python3`).
pub fn default_index(python: &OsStr) -> Result<DefaultIndex, PipConfigError> {
    if let Some(url) = env::var(env::PIP_INDEX_URL) {
        return Ok(DefaultIndex {
            url,
            source: DefaultIndexSource::Environment,
        });
    }
    let mut reasons = Vec::new();
    match run_pip(python, &["-m", "pip", "config", "list"]) {
        Ok(stdout) => {
            if let Some((key, url)) = parse_config_list(&stdout) {
                return Ok(DefaultIndex {
                    url,
                    source: DefaultIndexSource::PipConfig(key),
                });
            }
        }
        Err(error) => reasons.push(error),
    }
    match run_pip(
        python,
        &[
            "-c",
            "from pip._internal.models.index import PyPI; print(PyPI.simple_url)",
        ],
    ) {
        Ok(stdout) => {
            let url = stdout.trim();
            if url.contains("://") && !url.contains(char::is_whitespace) {
                return Ok(DefaultIndex {
                    url: url.to_string(),
                    source: DefaultIndexSource::PipDefault,
                });
            }
        }
        Err(error) => reasons.push(error),
    }
    match run_pip(python, &["-m", "pip", "download", "--help"]) {
        Ok(stdout) => {
            if let Some(url) = parse_help_default(&stdout) {
                return Ok(DefaultIndex {
                    url,
                    source: DefaultIndexSource::PipDefault,
                });
            }
            reasons.push("`pip download --help` shows no default for `--index-url`".to_string());
        }
        Err(error) => reasons.push(error),
    }
    reasons.dedup();
    Err(PipConfigError::NotFound {
        python: python.to_string_lossy().into_owned(),
        reason: if reasons.is_empty() {
            "pip's configuration has no `index-url`".to_string()
        } else {
            reasons.join("; ")
        },
    })
}

/// The index URL in `pip config list` output, e.g. `global.index-url='https://m/simple'`
/// → `("global.index-url", "https://m/simple")`. `install.index-url` wins over
/// `global.index-url`; `:env:` entries are skipped (the environment is read first).
pub fn parse_config_list(stdout: &str) -> Option<(String, String)> {
    let mut global = None;
    let mut install = None;
    for line in stdout.lines() {
        let Some((key, value)) = line.trim().split_once('=') else {
            continue;
        };
        let value = unquote(value.trim());
        if value.is_empty() {
            continue;
        }
        match key.trim() {
            "install.index-url" => install = Some(("install.index-url", value)),
            "global.index-url" => global = Some(("global.index-url", value)),
            _ => {}
        }
    }
    install
        .or(global)
        .map(|(key, value)| (key.to_string(), value.to_string()))
}

/// The URL in `(default URL)` of `--index-url` in pip's help text, e.g.
/// `-i, --index-url <url>  Base URL of the Python Package Index (default https://m/simple).`
pub fn parse_help_default(help: &str) -> Option<String> {
    let after_option = &help[help.find("--index-url")?..];
    let after_default = &after_option[after_option.find("(default")? + "(default".len()..];
    let url = after_default.split_whitespace().next()?;
    let url = url.trim_end_matches(['.', ',']).trim_end_matches(')');
    url.contains("://").then(|| url.to_string())
}

/// Strip one pair of matching quotes, e.g. `'https://m/simple'` → `https://m/simple`.
fn unquote(value: &str) -> &str {
    for quote in ['\'', '"'] {
        if let Some(inner) = value
            .strip_prefix(quote)
            .and_then(|rest| rest.strip_suffix(quote))
        {
            return inner;
        }
    }
    value
}

/// Run `python ARGS…` with a time limit; stdout on success, a short reason otherwise.
fn run_pip(python: &OsStr, args: &[&str]) -> Result<String, String> {
    let mut child = Command::new(python)
        .args(args)
        // Wide help text so optparse does not wrap a URL.
        .env("COLUMNS", "1000")
        .env("PIP_DISABLE_PIP_VERSION_CHECK", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|error| format!("cannot run `{}`: {error}", python.to_string_lossy()))?;
    let deadline = Instant::now() + PIP_TIMEOUT;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(20)),
            Ok(None) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("`{}` timed out", args.join(" ")));
            }
            Err(error) => return Err(error.to_string()),
        }
    };
    let mut stdout = String::new();
    let mut stderr = String::new();
    if let Some(mut pipe) = child.stdout.take() {
        let _ = pipe.read_to_string(&mut stdout);
    }
    if let Some(mut pipe) = child.stderr.take() {
        let _ = pipe.read_to_string(&mut stderr);
    }
    if status.success() {
        Ok(stdout)
    } else {
        let last_line = stderr.lines().last().unwrap_or("").trim().to_string();
        Err(if last_line.is_empty() {
            format!("`{}` exited with {status}", args.join(" "))
        } else {
            last_line
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_list_prefers_install() {
        let stdout = ":env:.find-links='/opt/wheels'\nglobal.index-url='https://a.example/simple'\ninstall.index-url=\"https://b.example/simple\"\n";
        assert_eq!(
            parse_config_list(stdout),
            Some((
                "install.index-url".to_string(),
                "https://b.example/simple".to_string()
            ))
        );
        assert_eq!(parse_config_list("global.cert='/etc/x.crt'\n"), None);
    }

    #[test]
    fn help_default() {
        let help = "  -i, --index-url <url>       Base URL of the Python Package Index (default\n                              https://mirror.example/simple). This should point";
        assert_eq!(
            parse_help_default(help).as_deref(),
            Some("https://mirror.example/simple")
        );
        assert_eq!(parse_help_default("--index-url <url> Base URL"), None);
    }
}
