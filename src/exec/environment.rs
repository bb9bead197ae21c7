//! A Python environment's packages as `pip freeze --all` lines: captured before a run
//! changes them (kept as a before-image, named in the journal) and compared when a
//! rollback returns the environment to them. The lines come from the probe's report of
//! the interpreter (each distribution's metadata and `direct_url.json`, what `pip
//! freeze` reads), not from pip itself, whose start alone costs a node a third of a second.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::facts::{InstalledPackage, NodeFacts, PackageOrigin, ProbeRequest, ProbeScope};
use crate::resolve::same_version;
use crate::transport::{Expected, Transport, TransportError, WriteSpec};

use super::ExecError;
use super::journal::EnvironmentImage;

/// The packages of `facts`' interpreter as `pip freeze --all` lines (`torch==2.9.1+cu130`,
/// `sglang @ file:///…`, `-e /src/x`), sorted by name; `None` when the probe found no
/// interpreter that answered. A version that is not PEP 440 has no line: pip can
/// reinstall no such release, and the line is left out on both sides of a comparison.
pub fn freeze_lines(facts: &NodeFacts) -> Option<Vec<u8>> {
    facts.python.as_ref()?;
    Some(lines_of(&facts.packages))
}

fn lines_of(packages: &[InstalledPackage]) -> Vec<u8> {
    let mut text = String::new();
    for package in packages {
        let line = match (&package.origin, &package.version) {
            (PackageOrigin::Editable { location }, _) => format!("-e {location}"),
            (PackageOrigin::DirectUrl { url }, _) => format!("{} @ {url}", package.name),
            (PackageOrigin::Index, Some(version)) => format!("{}=={version}", package.name),
            (PackageOrigin::Index, None) => continue,
        };
        text.push_str(&line);
        text.push('\n');
    }
    text.into_bytes()
}

/// The packages of `python` on the node now, as [`freeze_lines`] prints them: one probe
/// of the interpreter.
pub async fn installed(transport: &Transport, python: &Path) -> Result<Vec<u8>, ExecError> {
    let request = ProbeRequest {
        scope: ProbeScope::Step,
        ..ProbeRequest::new(python, Vec::new())
    };
    let facts = super::gather_facts(transport, &request).await?;
    freeze_lines(&facts).ok_or_else(|| {
        ExecError::Transport(TransportError::ReadFile {
            host: transport.name().to_string(),
            path: format!("{} (installed packages)", python.display()),
            message: "the interpreter does not answer".to_string(),
        })
    })
}

/// Keep `lines` (the environment's packages, [`freeze_lines`]) as a before-image in
/// `images` and return what the journal records of them.
pub async fn capture(
    transport: &Transport,
    python: &Path,
    lines: &[u8],
    images: &Path,
    index_urls: Vec<String>,
) -> Result<EnvironmentImage, TransportError> {
    let digest = hex::encode(<sha2::Sha256 as sha2::Digest>::digest(lines));
    let spec = WriteSpec {
        secret: true,
        private_directory: true,
        expected: Expected::Any,
        before_images: None,
        ..WriteSpec::new(images.join(&digest), 0o600)
    };
    transport
        .write_file(crate::transport::Stdin::Bytes(lines), &spec)
        .await?;
    Ok(EnvironmentImage {
        python: python.to_path_buf(),
        freeze: digest,
        index_urls,
        wheels: None,
        not_kept: Vec::new(),
    })
}

/// The image's file on the node.
pub fn image_path(images: &Path, image: &EnvironmentImage) -> PathBuf {
    images.join(&image.freeze)
}

/// Normalized name → its freeze line with the name normalized (`PyYAML==6.0.1` reads
/// `pyyaml==6.0.1`, as a before-image `pip freeze` printed and one from the probe are
/// compared); comments, options and editable lines are left out.
pub fn parse_freeze(text: &str) -> BTreeMap<String, String> {
    text.lines()
        .map(str::trim)
        .filter(|line| !line.is_empty() && !line.starts_with('#') && !line.starts_with('-'))
        .filter_map(|line| {
            let name = line
                .split(['=', ' ', '@', '<', '>', '!', '~', ';', '['])
                .next()?;
            let normalized = pep508_rs::PackageName::new(name.to_string()).ok()?;
            let line = format!("{normalized}{}", &line[name.len()..]);
            Some((normalized.to_string(), line))
        })
        .collect()
}

/// What returns `current` to `before`: requirements to install and names to remove. A
/// pinned line is made an exact-string pin (`torch===2.9.1`): `==2.9.1` would also be
/// met by the installed `2.9.1+cu130` (PEP 440 ignores a local label there).
pub fn difference(
    before: &BTreeMap<String, String>,
    current: &BTreeMap<String, String>,
) -> (Vec<String>, Vec<String>) {
    let install = before
        .iter()
        .filter(|(name, line)| {
            !current
                .get(*name)
                .is_some_and(|current| same_pin(current, line))
        })
        .map(|(_, line)| match line.split_once("==") {
            Some((name, version)) if !line.contains(" @ ") && !version.starts_with('=') => {
                format!("{name}==={version}")
            }
            _ => line.clone(),
        })
        .collect();
    let remove = current
        .keys()
        .filter(|name| !before.contains_key(*name))
        .cloned()
        .collect();
    (install, remove)
}

/// Whether two freeze lines of one name hold the same thing: two `NAME==VERSION` pins
/// of the same release by PEP 440 (`cffi==2` and `cffi==2.0.0`), anything else (an
/// exact-string `===` pin, a direct URL) only as the identical line.
fn same_pin(a: &str, b: &str) -> bool {
    let pinned = |line: &str| {
        line.split_once("==")
            .filter(|(_, version)| !line.contains(" @ ") && !version.starts_with('='))
            .map(|(name, version)| (name.to_string(), version.trim().to_string()))
    };
    match (pinned(a), pinned(b)) {
        (Some((a_name, a_version)), Some((b_name, b_version))) => {
            a_name == b_name && same_version(&a_version, &b_version)
        }
        _ => a == b,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn freeze_lines_are_compared_by_normalized_name() {
        let before = parse_freeze(
            "torch==2.9.1\nNVIDIA_cublas_cu12==12.8.4.1\nsglang @ file:///opt/x\n-e git+https://x#egg=y\n",
        );
        let current =
            parse_freeze("torch==2.9.1+cu130\nnvidia-cublas==13.0.0.19\nsglang @ file:///opt/x\n");
        let (install, remove) = difference(&before, &current);
        assert_eq!(install, ["nvidia-cublas-cu12===12.8.4.1", "torch===2.9.1"]);
        assert_eq!(remove, ["nvidia-cublas"]);
    }

    #[test]
    fn pins_of_one_release_spelled_otherwise_are_the_same() {
        let before =
            parse_freeze("cffi==2\nlegacy===1.0-custom-build\nrc==1.0alpha1\ntorch==2.9.1+CU130\n");
        let current = parse_freeze(
            "cffi==2.0.0\nlegacy===1.0-Custom-Build\nrc==1.0.0a1\ntorch==2.9.1+cu130\n",
        );
        let (install, remove) = difference(&before, &current);
        assert_eq!(install, ["legacy===1.0-custom-build"]);
        assert!(remove.is_empty(), "{remove:?}");
        let (install, _) = difference(&parse_freeze("cffi==2.0.1\n"), &current);
        assert_eq!(install, ["cffi===2.0.1"]);
    }

    #[test]
    fn probed_packages_read_as_pip_freeze_lines_and_compare_with_pip_s_own() {
        let packages = crate::facts::parse_pip_freeze(
            "PyYAML==6.0.1\nsglang @ file:///src/sglang/python\ntorch==2.9.1+cu130\n\
             oldpkg===1.0-custom-build\n-e /src/editable\neditable==0.1\n",
        )
        .unwrap();
        let text = String::from_utf8(lines_of(&packages)).unwrap();
        assert_eq!(
            text,
            "editable==0.1\npyyaml==6.0.1\nsglang @ file:///src/sglang/python\ntorch==2.9.1+cu130\n"
        );
        // A before-image `pip freeze` printed (names as their metadata spells them)
        // against the probe's lines now: nothing to do.
        let before =
            parse_freeze("PyYAML==6.0.1\nsglang @ file:///src/sglang/python\ntorch==2.9.1+cu130\n");
        let (install, remove) = difference(&before, &parse_freeze(&text));
        assert!(install.is_empty(), "{install:?}");
        assert_eq!(remove, ["editable"]);
    }
}
