//! The metadata of a release that offers only an sdist, as uv finds it: the sdist's
//! `PKG-INFO` when PEP 643 says its dependency fields are static (`Metadata-Version`
//! 2.2 or later, below 3, and none of `Requires-Dist`, `Requires-Python`,
//! `Provides-Extra` marked `Dynamic`), else its `pyproject.toml` `[project]` table when
//! that is static ([`super::pyproject`]), else the metadata its build backend prepares in an isolated build
//! environment (`pip install --dry-run --no-deps --report`, which runs the backend's
//! `prepare_metadata_for_build_wheel` in a fresh environment with the sdist's build
//! requirements). The sdist is downloaded once and checked against its sha256; what is
//! read or built is cached by that digest like any metadata file.
//!
//! `Dynamic` values are matched as uv (0.13) matches them, in the spelling of the core
//! metadata specification (`Requires-Dist`): setuptools writes `Dynamic: requires-dist`
//! for every `setup.py` project, and uv reads those `PKG-INFO` files as static rather
//! than building each one (astral-sh/uv#18667 keeps that trade-off open). `flash-attn`
//! is such a project: its `setup.py` imports torch, so an isolated build fails, and
//! uv's answer comes from `PKG-INFO` (`torch`, `einops`).
//!
//! It does not decide whether an sdist may be installed (the resolver's `no_build`) and
//! never builds a wheel: the node builds it, and the lock says so.

use std::io::Read;
use std::path::Path;
use std::time::Duration;

use sha2::Digest;

use super::error::ClientError;
use super::http::Http;
use super::simple::ProjectFile;
use super::types::{IndexLocation, redact};
use crate::index::filename::DistFilename;

/// How long one metadata build may take (a build environment is installed first).
const BUILD_TIMEOUT: Duration = Duration::from_secs(300);

/// `PKG-INFO` larger than this is not read (a metadata file is a few KiB).
const MAX_PKG_INFO: u64 = 4 << 20;

/// The core metadata of the sdist `file`, as `METADATA` text.
pub(super) async fn sdist_metadata(
    http: &Http,
    index: &IndexLocation,
    file: &ProjectFile,
    build_python: &Path,
    builds: &tokio::sync::Semaphore,
) -> Result<Vec<u8>, ClientError> {
    let failed = |reason: String| ClientError::SdistBuild {
        filename: file.filename.clone(),
        index: index.name.clone(),
        reason,
    };
    let bytes = http.bytes(&index.name, &file.url).await?;
    if let Some(expected) = &file.sha256 {
        let actual = hex::encode(sha2::Sha256::digest(&bytes));
        if actual != expected.as_str() {
            return Err(ClientError::HashMismatch {
                url: redact(&file.url),
                index: index.name.clone(),
                expected: expected.to_string(),
                actual,
            });
        }
    }
    let top = read_top_files(&bytes, &file.filename).map_err(failed)?;
    if let Some(pkg_info) = top.pkg_info
        && is_static(&pkg_info)
    {
        return Ok(pkg_info);
    }
    if let (Some(pyproject), DistFilename::Sdist(sdist)) = (&top.pyproject, &file.dist)
        && let Some(metadata) =
            super::pyproject::static_metadata(pyproject, &sdist.name, &sdist.version)
    {
        return Ok(metadata);
    }
    // The semaphore is never closed, so acquiring fails only if it were.
    let _permit = builds.acquire().await;
    build_metadata(&bytes, &file.filename, build_python)
        .await
        .map_err(failed)
}

/// What a failed metadata build says went wrong: the build's last Python exception,
/// e.g. `ModuleNotFoundError: No module named 'pkg_resources'`, else pip's last three
/// lines (which mostly say "see above").
fn build_failure_summary(stderr: &str) -> String {
    let lines: Vec<&str> = stderr
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty())
        .collect();
    let exception = lines.iter().rev().find(|line| {
        let head = line.split_once(": ").map_or(**line, |(head, _)| head);
        let class = head.strip_suffix(':').unwrap_or(head);
        let short = class.rsplit('.').next().unwrap_or(class);
        !class.contains(' ')
            && (short.ends_with("Error") || short.ends_with("Exception"))
            && short.chars().next().is_some_and(char::is_uppercase)
    });
    match exception {
        Some(line) => (*line).to_string(),
        None => lines[lines.len().saturating_sub(3)..].join(" "),
    }
}

/// The files at the top directory of an sdist that may carry its metadata statically.
#[derive(Debug, Default)]
pub(crate) struct TopFiles {
    /// `NAME-VERSION/PKG-INFO`.
    pub(crate) pkg_info: Option<Vec<u8>>,
    /// `NAME-VERSION/pyproject.toml`.
    pub(crate) pyproject: Option<Vec<u8>>,
}

impl TopFiles {
    /// The slot for an archive path, e.g. `deepspeed-0.19.8/PKG-INFO`; `None` for any
    /// other file or one already read.
    fn slot(&mut self, path: &str) -> Option<&mut Option<Vec<u8>>> {
        let path = path.trim_start_matches("./");
        let (top, name) = path.split_once('/')?;
        if top.is_empty() || name.contains('/') {
            return None;
        }
        let slot = match name {
            "PKG-INFO" => &mut self.pkg_info,
            "pyproject.toml" => &mut self.pyproject,
            _ => return None,
        };
        slot.is_none().then_some(slot)
    }

    fn complete(&self) -> bool {
        self.pkg_info.is_some() && self.pyproject.is_some()
    }
}

/// The top `PKG-INFO` and `pyproject.toml` of a `.tar.gz` or `.zip` sdist, e.g.
/// `deepspeed-0.19.8/PKG-INFO`; an error when it is not such an archive.
pub(crate) fn read_top_files(bytes: &[u8], filename: &str) -> Result<TopFiles, String> {
    match DistFilename::parse(filename) {
        Ok(DistFilename::Sdist(_)) if filename.ends_with(".zip") => zip_top_files(bytes),
        Ok(DistFilename::Sdist(_)) => tar_gz_top_files(bytes),
        _ => Err(format!("`{filename}` is not an sdist")),
    }
}

fn zip_top_files(bytes: &[u8]) -> Result<TopFiles, String> {
    let mut archive = zip::ZipArchive::new(std::io::Cursor::new(bytes))
        .map_err(|error| format!("not a zip archive: {error}"))?;
    let mut found = TopFiles::default();
    for position in 0..archive.len() {
        let name = (|| Some(archive.name_for_index(position)?.ok()?.to_string()))();
        let Some(name) = name else {
            continue;
        };
        if found.slot(&name).is_none() {
            continue;
        }
        let entry = archive
            .by_index(position)
            .map_err(|error| format!("unreadable zip entry: {error}"))?;
        let mut text = Vec::new();
        entry
            .take(MAX_PKG_INFO)
            .read_to_end(&mut text)
            .map_err(|error| format!("unreadable `{name}`: {error}"))?;
        if let Some(slot) = found.slot(&name) {
            *slot = Some(text);
        }
        if found.complete() {
            break;
        }
    }
    Ok(found)
}

/// Walks a gzip-compressed ustar/GNU/PAX archive for `NAME/PKG-INFO` and
/// `NAME/pyproject.toml`.
fn tar_gz_top_files(bytes: &[u8]) -> Result<TopFiles, String> {
    let mut decoder = flate2::read::GzDecoder::new(bytes);
    let mut header = [0u8; 512];
    let mut long_name: Option<String> = None;
    let mut found = TopFiles::default();
    // An sdist has far fewer entries; the bound keeps a hostile archive finite.
    for _ in 0..1_000_000 {
        if !read_block(&mut decoder, &mut header)? || header.iter().all(|byte| *byte == 0) {
            return Ok(found);
        }
        let size = octal(&header[124..136])?;
        let kind = header[156];
        let name = match long_name.take() {
            Some(name) => name,
            None => {
                let base = c_string(&header[0..100]);
                let prefix = if &header[257..262] == b"ustar" {
                    c_string(&header[345..500])
                } else {
                    String::new()
                };
                if prefix.is_empty() {
                    base
                } else {
                    format!("{prefix}/{base}")
                }
            }
        };
        let padded = size.div_ceil(512) * 512;
        match kind {
            // GNU long name, or a PAX header that may carry `path`.
            b'L' | b'x' => {
                let data = read_exact(&mut decoder, padded, size)?;
                if kind == b'L' {
                    long_name = Some(c_string(&data));
                } else if let Some(path) = pax_path(&data) {
                    long_name = Some(path);
                }
                continue;
            }
            b'0' | 0 if size <= MAX_PKG_INFO && found.slot(&name).is_some() => {
                let data = read_exact(&mut decoder, padded, size)?;
                if let Some(slot) = found.slot(&name) {
                    *slot = Some(data);
                }
                if found.complete() {
                    return Ok(found);
                }
            }
            _ => skip(&mut decoder, padded)?,
        }
    }
    Err("the archive has too many entries".to_string())
}

fn read_block(reader: &mut impl Read, block: &mut [u8; 512]) -> Result<bool, String> {
    let mut filled = 0;
    while filled < block.len() {
        match reader.read(&mut block[filled..]) {
            Ok(0) if filled == 0 => return Ok(false),
            Ok(0) => return Err("the archive ends inside a header".to_string()),
            Ok(read) => filled += read,
            Err(error) => return Err(format!("not a gzip-compressed tar archive: {error}")),
        }
    }
    Ok(true)
}

fn read_exact(reader: &mut impl Read, padded: u64, size: u64) -> Result<Vec<u8>, String> {
    let mut data = Vec::new();
    reader
        .take(padded)
        .read_to_end(&mut data)
        .map_err(|error| format!("unreadable archive entry: {error}"))?;
    if (data.len() as u64) < size {
        return Err("the archive ends inside an entry".to_string());
    }
    data.truncate(usize::try_from(size).unwrap_or(data.len()));
    Ok(data)
}

fn skip(reader: &mut impl Read, padded: u64) -> Result<(), String> {
    std::io::copy(&mut reader.take(padded), &mut std::io::sink())
        .map(|_| ())
        .map_err(|error| format!("unreadable archive entry: {error}"))
}

fn c_string(bytes: &[u8]) -> String {
    let end = bytes
        .iter()
        .position(|byte| *byte == 0)
        .unwrap_or(bytes.len());
    String::from_utf8_lossy(&bytes[..end]).into_owned()
}

fn octal(field: &[u8]) -> Result<u64, String> {
    let text = c_string(field);
    let text = text.trim();
    if text.is_empty() {
        return Ok(0);
    }
    u64::from_str_radix(text, 8).map_err(|_| format!("a tar header has the size `{text}`"))
}

/// `path` of PAX records (`LEN path=VALUE\n`).
fn pax_path(data: &[u8]) -> Option<String> {
    String::from_utf8_lossy(data).lines().find_map(|record| {
        let (_, pair) = record.split_once(' ')?;
        pair.strip_prefix("path=").map(str::to_string)
    })
}

/// PEP 643: `Metadata-Version` 2.2 or later (below 3) and no dependency field dynamic,
/// `Dynamic` values matched in the specification's spelling, as uv matches them.
fn is_static(pkg_info: &[u8]) -> bool {
    let text = String::from_utf8_lossy(pkg_info);
    let mut version: Option<(u32, u32)> = None;
    let mut dynamic = false;
    for line in text.lines() {
        if line.is_empty() {
            break;
        }
        let Some((key, value)) = line.split_once(':') else {
            continue;
        };
        let value = value.trim();
        match key.trim().to_ascii_lowercase().as_str() {
            "metadata-version" => {
                version = value
                    .split_once('.')
                    .and_then(|(major, minor)| Some((major.parse().ok()?, minor.parse().ok()?)));
            }
            "dynamic" => {
                dynamic |= matches!(
                    value,
                    "Requires-Dist" | "Requires-Python" | "Provides-Extra"
                );
            }
            _ => {}
        }
    }
    version.is_some_and(|version| ((2, 2)..(3, 0)).contains(&version)) && !dynamic
}

/// The metadata pip's build environment prepares for the sdist, as `METADATA` text.
async fn build_metadata(bytes: &[u8], filename: &str, python: &Path) -> Result<Vec<u8>, String> {
    let directory = BuildDirectory::create()?;
    // A fixed name: nothing of the index's file name reaches the argument list.
    let archive = directory.path.join(if filename.ends_with(".zip") {
        "sdist.zip"
    } else {
        "sdist.tar.gz"
    });
    fs_err::write(&archive, bytes).map_err(|error| error.to_string())?;
    let report = directory.path.join("report.json");
    let mut command = tokio::process::Command::new(python);
    command
        .args([
            "-m",
            "pip",
            "install",
            "--dry-run",
            "--no-deps",
            "--ignore-installed",
        ])
        .args([
            "--quiet",
            "--no-input",
            "--disable-pip-version-check",
            "--report",
        ])
        .arg(&report)
        .arg("--")
        .arg(&archive)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true);
    let output = tokio::time::timeout(BUILD_TIMEOUT, command.output())
        .await
        .map_err(|_| {
            format!(
                "its metadata build took longer than {} s",
                BUILD_TIMEOUT.as_secs()
            )
        })?
        .map_err(|error| format!("Failed to run `{} -m pip`: {error}", python.display()))?;
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        return Err(format!(
            "its metadata build failed ({}): {}",
            output.status,
            build_failure_summary(&stderr)
        ));
    }
    let text = fs_err::read_to_string(&report).map_err(|error| error.to_string())?;
    metadata_from_report(&text)
}

/// A private directory under the system's temporary directory, removed on drop.
struct BuildDirectory {
    path: std::path::PathBuf,
}

impl BuildDirectory {
    fn create() -> Result<Self, String> {
        use std::os::unix::fs::DirBuilderExt;
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |elapsed| elapsed.as_nanos());
        let path =
            std::env::temp_dir().join(format!("cuda-upgrade-sdist-{}-{nanos}", std::process::id()));
        std::fs::DirBuilder::new()
            .mode(0o700)
            .create(&path)
            .map_err(|error| format!("Failed to create `{}`: {error}", path.display()))?;
        Ok(Self { path })
    }
}

impl Drop for BuildDirectory {
    fn drop(&mut self) {
        // Best effort: a leftover directory in the temporary directory is harmless.
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

/// `METADATA` text from a pip installation report's first item.
fn metadata_from_report(text: &str) -> Result<Vec<u8>, String> {
    let report: serde_json::Value =
        serde_json::from_str(text).map_err(|error| format!("pip's report is not JSON: {error}"))?;
    let metadata = report
        .get("install")
        .and_then(|install| install.get(0))
        .and_then(|item| item.get("metadata"))
        .ok_or_else(|| "pip's report names no install item".to_string())?;
    let field = |key: &str| metadata.get(key).and_then(serde_json::Value::as_str);
    let list = |key: &str| -> Vec<&str> {
        metadata
            .get(key)
            .and_then(serde_json::Value::as_array)
            .map(|values| {
                values
                    .iter()
                    .filter_map(serde_json::Value::as_str)
                    .collect()
            })
            .unwrap_or_default()
    };
    let mut out = String::new();
    out.push_str(&format!(
        "Metadata-Version: {}\n",
        field("metadata_version").unwrap_or("2.1")
    ));
    for (header, key) in [("Name", "name"), ("Version", "version")] {
        let value = field(key).ok_or_else(|| format!("pip's report has no `{key}`"))?;
        out.push_str(&format!("{header}: {value}\n"));
    }
    if let Some(requires_python) = field("requires_python") {
        out.push_str(&format!("Requires-Python: {requires_python}\n"));
    }
    for requirement in list("requires_dist") {
        out.push_str(&format!("Requires-Dist: {requirement}\n"));
    }
    for extra in list("provides_extra") {
        out.push_str(&format!("Provides-Extra: {extra}\n"));
    }
    Ok(out.into_bytes())
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::*;

    fn tar_gz(entries: &[(&str, &[u8])]) -> Vec<u8> {
        let mut tar = Vec::new();
        for (name, data) in entries {
            let mut header = [0u8; 512];
            header[..name.len()].copy_from_slice(name.as_bytes());
            let size = format!("{:011o}\0", data.len());
            header[124..136].copy_from_slice(size.as_bytes());
            header[156] = b'0';
            header[257..263].copy_from_slice(b"ustar\0");
            tar.extend_from_slice(&header);
            tar.extend_from_slice(data);
            tar.resize(tar.len().div_ceil(512) * 512, 0);
        }
        tar.extend_from_slice(&[0u8; 1024]);
        let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        encoder.write_all(&tar).unwrap();
        encoder.finish().unwrap()
    }

    #[test]
    fn the_top_pkg_info_of_a_tar_gz_sdist() {
        let archive = tar_gz(&[
            (
                "demo-1.0/demo.egg-info/PKG-INFO",
                b"Metadata-Version: 2.1\nName: wrong\n",
            ),
            ("demo-1.0/setup.py", b"print()\n"),
            (
                "demo-1.0/PKG-INFO",
                b"Metadata-Version: 2.2\nName: demo\nVersion: 1.0\n",
            ),
        ]);
        let top = read_top_files(&archive, "demo-1.0.tar.gz").unwrap();
        assert!(
            String::from_utf8(top.pkg_info.unwrap())
                .unwrap()
                .contains("Name: demo")
        );
        assert!(top.pyproject.is_none());
        let bare = read_top_files(&tar_gz(&[("demo-1.0/setup.py", b"")]), "demo-1.0.tar.gz");
        assert!(bare.unwrap().pkg_info.is_none());
        assert!(read_top_files(b"not gzip", "demo-1.0.tar.gz").is_err());
    }

    #[test]
    fn pep_643_static_dependency_fields() {
        assert!(is_static(
            b"Metadata-Version: 2.2\nName: a\nDynamic: summary\n"
        ));
        assert!(is_static(b"Metadata-Version: 2.4\nName: a\n"));
        assert!(!is_static(
            b"Metadata-Version: 2.4\nDynamic: Requires-Dist\n"
        ));
        assert!(!is_static(
            b"Metadata-Version: 2.3\nDynamic: Requires-Python\n"
        ));
        assert!(!is_static(
            b"Metadata-Version: 2.2\nDynamic: Provides-Extra\n"
        ));
        // setuptools' spelling, e.g. flash-attn 2.8.3.post2's `PKG-INFO`: static to uv.
        assert!(is_static(
            b"Metadata-Version: 2.4\nName: flash_attn\nRequires-Dist: torch\nDynamic: requires-dist\nDynamic: requires-python\n"
        ));
        assert!(!is_static(b"Metadata-Version: 3.0\nName: a\n"));
        assert!(!is_static(b"Metadata-Version: 2.1\nName: a\n"));
        assert!(!is_static(b"Name: a\n"));
    }

    #[test]
    fn a_pip_report_becomes_metadata() {
        let report = r#"{"version": "1", "install": [{"metadata": {"metadata_version": "2.4",
            "name": "deepspeed", "version": "0.19.8", "requires_dist": ["torch>=2.0.0",
            "wandb; extra == \"dev\""], "provides_extra": ["dev"], "requires_python": ">=3.8"}}]}"#;
        let text = String::from_utf8(metadata_from_report(report).unwrap()).unwrap();
        let metadata =
            crate::index::metadata::CoreMetadata::parse(text.as_bytes(), "deepspeed-0.19.8.tar.gz")
                .unwrap();
        assert_eq!(metadata.name.to_string(), "deepspeed");
        assert_eq!(metadata.requires_dist.len(), 2);
        assert_eq!(metadata.provides_extra.len(), 1);
        assert_eq!(metadata.requires_python.unwrap().to_string(), ">=3.8");
    }

    #[test]
    fn a_failed_build_is_summarized_by_its_last_exception() {
        let stderr = "  error: subprocess-exited-with-error\n  \n  Traceback (most recent call last):\n    File \"<string>\", line 5, in <module>\n  ModuleNotFoundError: No module named 'pkg_resources'\n  [end of output]\n\nnote: This error originates from a subprocess, and is likely not a problem with pip.\nerror: metadata-generation-failed\n";
        assert_eq!(
            build_failure_summary(stderr),
            "ModuleNotFoundError: No module named 'pkg_resources'"
        );
        assert_eq!(
            build_failure_summary(
                "  wheel_stub.error.InstallFailedError: \n  ****\n  [end of output]\n"
            ),
            "wheel_stub.error.InstallFailedError:"
        );
        assert_eq!(
            build_failure_summary("one\ntwo\nthree\nfour\n"),
            "two three four"
        );
    }
}
