//! pip's default index remembered between runs, so that a warm run starts no Python.
//!
//! Asking pip ([`super::pip_config`]) starts an interpreter or two (half a second, more
//! behind a version manager's shims). The answer is kept in the cache directory
//! (`pip-default-v1.json`) with what it was read from: the environment pip reads (every
//! `PIP_*` variable, `PATH`, `HOME`, the XDG and virtual-environment variables, the
//! interpreter asked) and the files pip named (the interpreter itself, pip's own
//! module, every configuration file pip looks for, present or not, with size and
//! modification time). While all of them are unchanged the answer is reused; otherwise
//! pip is asked again, in one interpreter that also names those files.
//!
//! A `PIP_INDEX_URL` in the environment is read directly, as before, and so are pip's
//! files where they say everything ([`super::pip_files`]): no Python, no record. An
//! answer with credentials in it is never written down.

use std::ffi::OsStr;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use sha2::Digest;

use super::pip_config::{self, DefaultIndex, DefaultIndexSource, PipConfigError};
use super::pip_files;
use crate::settings::env;

/// The record's file name inside the cache directory.
const RECORD_FILE: &str = "pip-default-v1.json";

/// How long the one interpreter may take before it is abandoned.
const PYTHON_TIMEOUT: Duration = Duration::from_secs(30);

/// Environment variables besides `PIP_*` that change what pip reads.
const WATCHED_VARIABLES: [&str; 9] = [
    "PATH",
    "HOME",
    "XDG_CONFIG_HOME",
    "XDG_CONFIG_DIRS",
    "VIRTUAL_ENV",
    "CONDA_PREFIX",
    "PYENV_VERSION",
    "PYTHONHOME",
    "PYTHONPATH",
];

/// Asks pip's configuration and pip's built-in default in one interpreter, and names
/// the files the answer depends on. Any failure (pip's internals moved) falls back to
/// [`pip_config::default_index`], which only uses pip's command line.
const PROGRAM: &str = r#"import json, os, sys
import pip
from pip._internal.configuration import Configuration, get_configuration_files
from pip._internal.models.index import PyPI
configuration = Configuration(isolated=False)
configuration.load()
values = dict(configuration.items())
files = [os.path.realpath(sys.executable), pip.__file__]
files += [path for paths in get_configuration_files().values() for path in paths]
if os.environ.get("PIP_CONFIG_FILE"):
    files.append(os.environ["PIP_CONFIG_FILE"])
print(json.dumps({"install": values.get("install.index-url"), "global": values.get("global.index-url"), "default": PyPI.simple_url, "files": files}))
"#;

/// The remembered answer and what it was read from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Record {
    /// The sha256 of the environment pip reads and the interpreter asked (values may
    /// hold secrets: only their digest is kept).
    environment: String,
    /// Each file with its size and modification time (nanoseconds), `None` if absent.
    files: Vec<(PathBuf, Option<(u64, u128)>)>,
    /// The URL; an answer with credentials (user, password or a query) is never kept.
    url: String,
    /// `None` for pip's built-in default, else the configuration key.
    key: Option<String>,
}

/// What [`PROGRAM`] prints.
#[derive(Deserialize)]
struct Answer {
    install: Option<String>,
    global: Option<String>,
    default: String,
    files: Vec<PathBuf>,
}

/// pip's default index for `python`, remembered in `cache_dir` (when given) while
/// nothing pip reads changed; see the module documentation.
pub fn default_index(
    python: &OsStr,
    cache_dir: Option<&Path>,
) -> Result<DefaultIndex, PipConfigError> {
    if env::var(env::PIP_INDEX_URL).is_some() {
        return pip_config::default_index(python);
    }
    if let Some(found) = pip_files::default_index(Path::new(python), &env::var) {
        return Ok(found);
    }
    let Some(cache_dir) = cache_dir else {
        return pip_config::default_index(python);
    };
    let path = cache_dir.join(RECORD_FILE);
    let environment = watched_environment(python);
    if let Some(record) = read_record(&path)
        && record.environment == environment
        && record.files.iter().all(|(file, seen)| stat(file) == *seen)
    {
        return Ok(answer_of(&record));
    }
    let Some(answer) = ask(python) else {
        return pip_config::default_index(python);
    };
    let (url, key) = match (answer.install, answer.global) {
        (Some(url), _) if !url.is_empty() => (url, Some("install.index-url".to_string())),
        (_, Some(url)) if !url.is_empty() => (url, Some("global.index-url".to_string())),
        _ => (answer.default, None),
    };
    if !url.contains("://") || url.contains(char::is_whitespace) {
        return pip_config::default_index(python);
    }
    let record = Record {
        environment,
        files: answer
            .files
            .into_iter()
            .map(|file| {
                let seen = stat(&file);
                (file, seen)
            })
            .collect(),
        url,
        key,
    };
    // A record that cannot be written only costs the next run the question again.
    if !has_credentials(&record.url) {
        let _ = write_record(&path, &record);
    }
    Ok(answer_of(&record))
}

fn answer_of(record: &Record) -> DefaultIndex {
    DefaultIndex {
        url: record.url.clone(),
        source: match &record.key {
            Some(key) => DefaultIndexSource::PipConfig(key.clone()),
            None => DefaultIndexSource::PipDefault,
        },
    }
}

fn watched_environment(python: &OsStr) -> String {
    let mut watched: Vec<(String, String)> = env::all()
        .into_iter()
        .filter(|(name, _)| is_watched(name))
        .collect();
    watched.sort();
    watched.push((
        "(python)".to_string(),
        python.to_string_lossy().into_owned(),
    ));
    let mut digest = sha2::Sha256::new();
    for (name, value) in &watched {
        digest.update(name.as_bytes());
        digest.update([0]);
        digest.update(value.as_bytes());
        digest.update([0]);
    }
    hex::encode(digest.finalize())
}

fn is_watched(name: &str) -> bool {
    name.starts_with("PIP_") || WATCHED_VARIABLES.contains(&name)
}

/// Whether `url` carries credentials: a user, a password or a query (`?token=…`).
fn has_credentials(url: &str) -> bool {
    match url::Url::parse(url) {
        Ok(parsed) => {
            !parsed.username().is_empty() || parsed.password().is_some() || parsed.query().is_some()
        }
        Err(_) => true,
    }
}

fn stat(path: &Path) -> Option<(u64, u128)> {
    let metadata = fs_err::metadata(path).ok()?;
    let modified = metadata
        .modified()
        .ok()
        .and_then(|time| time.duration_since(UNIX_EPOCH).ok())
        .map_or(0, |elapsed| elapsed.as_nanos());
    Some((metadata.len(), modified))
}

fn read_record(path: &Path) -> Option<Record> {
    serde_json::from_slice(&fs_err::read(path).ok()?).ok()
}

fn write_record(path: &Path, record: &Record) -> std::io::Result<()> {
    let bytes = serde_json::to_vec_pretty(record).map_err(std::io::Error::other)?;
    crate::local_file::write_atomic(path, &bytes)
}

/// Run [`PROGRAM`] in `python`, bounded in time; `None` on any failure.
fn ask(python: &OsStr) -> Option<Answer> {
    let mut child = Command::new(python)
        .args(["-c", PROGRAM])
        .env("PIP_DISABLE_PIP_VERSION_CHECK", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    let mut stdout = String::new();
    let mut pipe = child.stdout.take()?;
    let deadline = Instant::now() + PYTHON_TIMEOUT;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(5)),
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return None;
            }
        }
    };
    pipe.read_to_string(&mut stdout).ok()?;
    if !status.success() {
        return None;
    }
    serde_json::from_str(stdout.trim()).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_names_what_it_was_read_from() {
        let environment = watched_environment(OsStr::new("python3"));
        assert_eq!(environment, watched_environment(OsStr::new("python3")));
        assert_ne!(environment, watched_environment(OsStr::new("python3.12")));
        assert!(is_watched("PIP_CONFIG_FILE") && is_watched("VIRTUAL_ENV") && !is_watched("TERM"));
        assert!(has_credentials("https://user:token@mirror.example/simple"));
        assert!(has_credentials("https://mirror.example/simple?token=x"));
        assert!(!has_credentials("https://mirror.example/simple"));
        let directory = tempfile::tempdir().unwrap();
        let file = directory.path().join("pip.conf");
        assert_eq!(stat(&file), None);
        fs_err::write(&file, "[global]\n").unwrap();
        assert_eq!(stat(&file).map(|(size, _)| size), Some(9));
        let record = Record {
            environment,
            files: vec![(file.clone(), stat(&file))],
            url: "https://mirror.example/simple".to_string(),
            key: Some("global.index-url".to_string()),
        };
        let path = directory.path().join(RECORD_FILE);
        write_record(&path, &record).unwrap();
        assert_eq!(read_record(&path), Some(record.clone()));
        assert_eq!(
            answer_of(&record).source,
            DefaultIndexSource::PipConfig("global.index-url".to_string())
        );
    }
}
