//! A Python environment's packages as `pip freeze --all` prints them: captured before a
//! run changes them (kept as a before-image, named in the journal) and compared when a
//! rollback returns the environment to them.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::transport::{Expected, NodeCommand, Transport, TransportError, WriteSpec};

use super::journal::EnvironmentImage;

/// `python -m pip freeze --all`, as exact bytes.
pub async fn freeze(transport: &Transport, python: &Path) -> Result<Vec<u8>, TransportError> {
    let command = NodeCommand::new(python.display().to_string()).args([
        "-m",
        "pip",
        "freeze",
        "--all",
        "--disable-pip-version-check",
    ]);
    let output = transport.run(&command, None).await?;
    if output.success() {
        Ok(output.stdout)
    } else {
        Err(TransportError::ReadFile {
            host: transport.name().to_string(),
            path: format!("{} (pip freeze)", python.display()),
            message: output.tail(5),
        })
    }
}

/// Keep the environment's packages now as a before-image in `images` and return what
/// the journal records of them, with the bytes of the `pip freeze --all` kept.
pub async fn capture(
    transport: &Transport,
    python: &Path,
    images: &Path,
    index_urls: Vec<String>,
) -> Result<(EnvironmentImage, Vec<u8>), TransportError> {
    let bytes = freeze(transport, python).await?;
    let digest = hex::encode(<sha2::Sha256 as sha2::Digest>::digest(&bytes));
    let spec = WriteSpec {
        secret: true,
        private_directory: true,
        expected: Expected::Any,
        before_images: None,
        ..WriteSpec::new(images.join(&digest), 0o600)
    };
    transport
        .write_file(crate::transport::Stdin::Bytes(&bytes), &spec)
        .await?;
    let image = EnvironmentImage {
        python: python.to_path_buf(),
        freeze: digest,
        index_urls,
        wheels: None,
        not_kept: Vec::new(),
    };
    Ok((image, bytes))
}

/// The image's file on the node.
pub fn image_path(images: &Path, image: &EnvironmentImage) -> PathBuf {
    images.join(&image.freeze)
}

/// Normalized name → its freeze line (`torch==2.9.1+cu130`, `sglang @ file:///…`);
/// comments, options and editable lines are left out.
pub fn parse_freeze(text: &str) -> BTreeMap<String, String> {
    text.lines()
        .map(str::trim)
        .filter(|line| !line.is_empty() && !line.starts_with('#') && !line.starts_with('-'))
        .filter_map(|line| {
            let name = line
                .split(['=', ' ', '@', '<', '>', '!', '~', ';', '['])
                .next()?;
            let normalized = pep508_rs::PackageName::new(name.to_string()).ok()?;
            Some((normalized.to_string(), line.to_string()))
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
        .filter(|(name, line)| current.get(*name) != Some(*line))
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
        assert_eq!(install, ["NVIDIA_cublas_cu12===12.8.4.1", "torch===2.9.1"]);
        assert_eq!(remove, ["nvidia-cublas"]);
    }
}
