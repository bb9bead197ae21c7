//! The build requirements of a source install, for a node that reaches no index
//! (`--fetch controller`): the controller reads `[build-system] requires` from the
//! `pyproject.toml` of the bundled commit (PEP 518; none there: `setuptools>=40.8.0`,
//! as pip assumes), has its own pip download their wheels for the node's tags (wheels
//! only, dependencies included, from the manifest's first open index), keeps them in its
//! cache once per set, and sends the node each one it lacks. The node builds with
//! `--no-index --find-links`.

use std::path::{Path, PathBuf};
use std::time::Duration;

use sha2::{Digest, Sha256};

use crate::steps::BuildRequirements;
use crate::transport::{Transport, WriteSpec, Written, download};

use super::ExecError;
use super::send::held;

/// The longest `pip download` of a set of build requirements may run.
const DOWNLOAD_BOUND: Duration = Duration::from_secs(600);

/// What pip assumes for a project without `[build-system]` (PEP 518).
const FALLBACK: &str = "setuptools>=40.8.0";

/// Send the wheels of the build requirements of `build` (read from `bundle`) to the node;
/// `cache_dir` is the controller's download cache, `spec` how a wheel is written at a path.
pub async fn send(
    transport: &Transport,
    cache_dir: &Path,
    spec: &dyn Fn(&Path) -> WriteSpec,
    bundle: &download::Bundle,
    build: &BuildRequirements,
) -> Result<Vec<Written>, ExecError> {
    let pyproject = match &build.subdirectory {
        Some(subdirectory) => format!("{}/pyproject.toml", subdirectory.trim_end_matches('/')),
        None => "pyproject.toml".to_string(),
    };
    let requires = requires(bundle.file(&pyproject).await.as_deref());
    if requires.is_empty() {
        return Ok(Vec::new());
    }
    let failed = |reason: String| ExecError::BuildRequirements {
        package: build.package.clone(),
        requires: requires.join(", "),
        reason,
    };
    let wheels = download(&requires, build, cache_dir)
        .await
        .map_err(failed)?;
    let mut files = Vec::new();
    for wheel in wheels {
        let name = wheel
            .file_name()
            .map(|name| name.to_string_lossy().into_owned());
        let Some(name) = name else { continue };
        let digest = download::sha256_of(&wheel)
            .await
            .map_err(|error| failed(error.to_string()))?;
        let sha256 = digest
            .parse::<crate::manifest::Sha256>()
            .map_err(|error| failed(error.to_string()))?;
        files.push((wheel, build.dir.join(name), sha256));
    }
    let asked: Vec<(&Path, &crate::manifest::Sha256)> = files
        .iter()
        .map(|(_, path, sha256)| (path.as_path(), sha256))
        .collect();
    let held = held(transport, &asked).await?;
    let outgoing: Vec<(PathBuf, WriteSpec)> = files
        .iter()
        .filter(|(_, path, _)| !held.contains(path))
        .map(|(wheel, path, _)| (wheel.clone(), spec(path)))
        .collect();
    let (written, result) = super::send::send_all(transport, &outgoing).await;
    result?;
    Ok(written)
}

/// `[build-system] requires` of a `pyproject.toml`; [`FALLBACK`] without the file or
/// the table.
pub fn requires(pyproject: Option<&str>) -> Vec<String> {
    let Some(text) = pyproject else {
        return vec![FALLBACK.to_string()];
    };
    let mut in_table = false;
    let mut table_seen = false;
    let mut value: Option<String> = None;
    for line in text.lines() {
        let trimmed = line.trim();
        if let Some(open) = &mut value {
            open.push('\n');
            open.push_str(line);
            if closes(open) {
                break;
            }
            continue;
        }
        if trimmed.starts_with('[') {
            in_table =
                trimmed.trim_start_matches('[').trim_end_matches(']').trim() == "build-system";
            table_seen |= in_table;
            continue;
        }
        if !in_table {
            continue;
        }
        if let Some((key, rest)) = trimmed.split_once('=')
            && key.trim() == "requires"
        {
            let rest = rest.trim().to_string();
            if closes(&rest) {
                return strings(&rest);
            }
            value = Some(rest);
        }
    }
    match value {
        Some(open) => strings(&open),
        None if table_seen => Vec::new(),
        None => vec![FALLBACK.to_string()],
    }
}

/// Whether an array's text has its closing `]` (outside strings).
fn closes(text: &str) -> bool {
    let mut quote: Option<char> = None;
    for c in strip_comments(text).chars() {
        match (quote, c) {
            (None, '"' | '\'') => quote = Some(c),
            (Some(q), c) if c == q => quote = None,
            (None, ']') => return true,
            _ => {}
        }
    }
    false
}

/// The text with each line's `#` comment (outside strings) removed.
fn strip_comments(text: &str) -> String {
    let mut out = String::new();
    for line in text.lines() {
        let mut quote: Option<char> = None;
        for c in line.chars() {
            match (quote, c) {
                (None, '#') => break,
                (None, '"' | '\'') => quote = Some(c),
                (Some(q), c) if c == q => quote = None,
                _ => {}
            }
            out.push(c);
        }
        out.push('\n');
    }
    out
}

/// The quoted strings of an array's text, in order.
fn strings(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut quote: Option<(char, String)> = None;
    for c in strip_comments(text).chars() {
        match &mut quote {
            None if c == '"' || c == '\'' => quote = Some((c, String::new())),
            None => {}
            Some((q, value)) if c == *q => {
                found.push(std::mem::take(value));
                quote = None;
            }
            Some((_, value)) => value.push(c),
        }
    }
    found
}

/// `pip download` of `requires` on the controller for the node's tags into the cache
/// (once per set of requirements, tags and index); the wheels' paths.
async fn download(
    requires: &[String],
    build: &BuildRequirements,
    cache_dir: &Path,
) -> Result<Vec<PathBuf>, String> {
    let target = Target::of(&build.tags).ok_or_else(|| {
        "the node's wheel tags are unknown (its interpreter could not be probed)".to_string()
    })?;
    let mut key = Sha256::new();
    for part in requires.iter().chain(&build.tags).chain([&build.index_url]) {
        key.update(part.as_bytes());
        key.update([0]);
    }
    let key = hex::encode(key.finalize());
    let dir = cache_dir.join("build").join(&key[..16]);
    let flight = download::in_flight(&dir);
    let _flight = flight.lock().await;
    if !dir.join(".complete").is_file() {
        let partial = dir.with_extension(format!("partial.{}", std::process::id()));
        let _ = tokio::fs::remove_dir_all(&partial).await;
        let mut command = tokio::process::Command::new("python3");
        command
            .args(["-m", "pip", "download", "--only-binary=:all:", "--no-input"])
            .args(["--disable-pip-version-check", "--implementation"])
            .arg(&target.implementation)
            .arg("--python-version")
            .arg(&target.python_version);
        for abi in &target.abis {
            command.arg("--abi").arg(abi);
        }
        for platform in &target.platforms {
            command.arg("--platform").arg(platform);
        }
        command
            .arg("--dest")
            .arg(&partial)
            .arg("--")
            .args(requires)
            // The index URL may carry credentials: through the environment, never argv.
            .env("PIP_INDEX_URL", &build.index_url)
            .env_remove("PIP_EXTRA_INDEX_URL")
            .stdin(std::process::Stdio::null())
            .kill_on_drop(true);
        let output = tokio::time::timeout(DOWNLOAD_BOUND, command.output())
            .await
            .map_err(|_| format!("pip download ran past {} s", DOWNLOAD_BOUND.as_secs()))?
            .map_err(|error| format!("pip could not run on the controller: {error}"))?;
        if !output.status.success() {
            let stderr = String::from_utf8_lossy(&output.stderr);
            let tail: Vec<&str> = stderr.lines().rev().take(3).collect();
            let tail: Vec<&str> = tail.into_iter().rev().collect();
            return Err(crate::manifest::redact_text(&tail.join(" ")));
        }
        tokio::fs::write(partial.join(".complete"), b"")
            .await
            .map_err(|error| error.to_string())?;
        let _ = tokio::fs::remove_dir_all(&dir).await;
        tokio::fs::rename(&partial, &dir)
            .await
            .map_err(|error| error.to_string())?;
    }
    let mut wheels = Vec::new();
    let mut entries = tokio::fs::read_dir(&dir)
        .await
        .map_err(|error| error.to_string())?;
    while let Some(entry) = entries
        .next_entry()
        .await
        .map_err(|error| error.to_string())?
    {
        if entry.path().extension().is_some_and(|ext| ext == "whl") {
            wheels.push(entry.path());
        }
    }
    wheels.sort();
    Ok(wheels)
}

/// What `pip download` is told of the node, from its wheel tags.
#[derive(Debug, PartialEq, Eq)]
struct Target {
    /// e.g. `cp`.
    implementation: String,
    /// e.g. `311`.
    python_version: String,
    /// e.g. `cp311` (`abi3` and `none` are implied).
    abis: Vec<String>,
    /// e.g. `manylinux_2_35_x86_64`, …, `linux_x86_64`.
    platforms: Vec<String>,
}

impl Target {
    /// From tags like `cp311-cp311-manylinux_2_35_x86_64`, most preferred first.
    fn of(tags: &[String]) -> Option<Self> {
        let first = tags.first()?;
        let interpreter = first.split('-').next()?;
        let split = interpreter.find(|c: char| c.is_ascii_digit())?;
        let (implementation, python_version) = interpreter.split_at(split);
        let mut abis = Vec::new();
        let mut platforms = Vec::new();
        for tag in tags {
            let mut parts = tag.splitn(3, '-');
            let (Some(_), Some(abi), Some(platform)) = (parts.next(), parts.next(), parts.next())
            else {
                continue;
            };
            if !matches!(abi, "abi3" | "none") && !abis.iter().any(|known| known == abi) {
                abis.push(abi.to_string());
            }
            if platform != "any" && !platforms.iter().any(|known| known == platform) {
                platforms.push(platform.to_string());
            }
        }
        Some(Self {
            implementation: implementation.to_string(),
            python_version: python_version.to_string(),
            abis,
            platforms,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn build_requirements_come_from_the_build_system_table() {
        let pyproject = "[project]\nname = \"x\"\nrequires = [\"no\"]\n\n[build-system]\n# the backend\nrequires = [\n  \"setuptools>=61\",  # pinned low\n  'wheel',\n  \"scm[toml]>=8; python_version >= '3.8'\",\n]\nbuild-backend = \"setuptools.build_meta\"\n";
        assert_eq!(
            requires(Some(pyproject)),
            [
                "setuptools>=61",
                "wheel",
                "scm[toml]>=8; python_version >= '3.8'"
            ]
        );
        assert_eq!(
            requires(Some("[build-system]\nrequires = []\n")),
            Vec::<String>::new()
        );
        assert_eq!(requires(Some("[project]\nname = \"x\"\n")), [FALLBACK]);
        assert_eq!(requires(None), [FALLBACK]);
    }

    #[test]
    fn pip_is_told_the_node_from_its_tags() {
        let tags: Vec<String> = [
            "cp311-cp311-manylinux_2_35_x86_64",
            "cp311-abi3-manylinux_2_35_x86_64",
            "cp311-none-manylinux_2_17_x86_64",
            "cp311-cp311-linux_x86_64",
            "py3-none-any",
        ]
        .iter()
        .map(ToString::to_string)
        .collect();
        assert_eq!(
            Target::of(&tags),
            Some(Target {
                implementation: "cp".to_string(),
                python_version: "311".to_string(),
                abis: vec!["cp311".to_string()],
                platforms: vec![
                    "manylinux_2_35_x86_64".to_string(),
                    "manylinux_2_17_x86_64".to_string(),
                    "linux_x86_64".to_string()
                ],
            })
        );
        assert_eq!(Target::of(&[]), None);
    }
}
