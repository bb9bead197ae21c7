//! The source install step: a package built from a git tag with local patches —
//! fetch, check out the revision, apply each patch (an already-applied patch is
//! detected and kept), install without dependencies, and record what was installed in
//! `/var/lib/cuda-upgrade/records/NAME.json`, which the next probe reads back.

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::facts::NodeFacts;
use crate::manifest::GitSource;
use crate::transport::NodeCommand;

use super::{Action, Operation, Step, StepKind, Verification};

/// Where checkouts live on the node.
pub const CHECKOUT_DIR: &str = "/var/lib/cuda-upgrade/src";
/// Where install records live on the node (the probe reads them).
pub const RECORD_DIR: &str = "/var/lib/cuda-upgrade/records";

/// Failed to plan a source install.
#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    /// A patch file named by the manifest could not be read on the controller.
    #[error("Failed to read patch `{}`", path.display())]
    Patch {
        /// The patch file.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
}

/// Fetch, check out, patch, install, record. Arguments: url rev checkout python
/// subdirectory record package index-url patch... The build runs isolated, its build
/// requirements from the index (empty: pip's own configuration on the node).
const INSTALL_SCRIPT: &str = r#"set -eu
url=$1; rev=$2; checkout=$3; python=$4; subdirectory=$5; record=$6; package=$7; index_url=$8; shift 8
if [ -d "$checkout/.git" ]; then
    git -C "$checkout" remote set-url origin "$url"
    git -C "$checkout" fetch --quiet --tags --force origin
else
    mkdir -p -- "$(dirname -- "$checkout")"
    git clone --quiet -- "$url" "$checkout"
fi
git -C "$checkout" -c advice.detachedHead=false checkout --quiet --force "$rev"
git -C "$checkout" clean --quiet -fdx
for patch in "$@"; do
    if git -C "$checkout" apply --check -- "$patch" 2>/dev/null; then
        git -C "$checkout" apply -- "$patch"
    elif git -C "$checkout" apply --reverse --check -- "$patch" 2>/dev/null; then
        echo "patch $patch is already applied"
    else
        echo "patch $patch does not apply to $rev:" >&2
        git -C "$checkout" apply --check -- "$patch" >&2 || true
        exit 1
    fi
done
commit=$(git -C "$checkout" rev-parse HEAD)
"$python" -m pip install --no-deps --no-input --disable-pip-version-check --no-cache-dir ${index_url:+--index-url "$index_url"} -- "$checkout/$subdirectory"
mkdir -p -- "$(dirname -- "$record")"
"$python" - "$record" "$package" "$url" "$rev" "$commit" "$subdirectory" "$python" "$@" <<'PYTHON'
import hashlib, json, os, sys
record, package, url, rev, commit, subdirectory, python, *patches = sys.argv[1:]
digests = [hashlib.sha256(open(p, "rb").read()).hexdigest() for p in patches]
document = {"package": package, "url": url, "rev": rev, "commit": commit,
            "subdirectory": subdirectory or None, "patches": digests, "python": python}
temporary = record + ".tmp"
with open(temporary, "w") as out:
    json.dump(document, out)
os.replace(temporary, record)
PYTHON
"#;

/// Plan the step for one git package. `manifest_dir` resolves patch paths.
pub fn plan(
    package: &str,
    git: &GitSource,
    python: &Path,
    manifest_dir: &Path,
    build_index: Option<&str>,
    facts: &NodeFacts,
) -> Result<Step, SourceError> {
    let mut patches = Vec::new();
    for path in &git.patches {
        let full = manifest_dir.join(path);
        let content = fs_err::read(&full).map_err(|source| SourceError::Patch {
            path: full.clone(),
            source,
        })?;
        patches.push((path.clone(), content));
    }
    let digests: Vec<String> = patches
        .iter()
        .map(|(_, content)| hex::encode(Sha256::digest(content)))
        .collect();
    let python_text = python.display().to_string();
    let installed = facts.packages.iter().any(|p| p.name.to_string() == package);
    let record = facts
        .install_records
        .iter()
        .find(|record| record.package == package);
    let (action, reason) = match record {
        Some(record)
            if installed
                && record.url == git.url
                && record.rev == git.rev
                && record.subdirectory == git.subdirectory
                && record.patches == digests
                && record.python == python_text =>
        {
            (
                Action::NoOp,
                format!(
                    "`{package}` is installed from {}@{} ({}) with its patches",
                    git.url,
                    git.rev,
                    short(&record.commit)
                ),
            )
        }
        Some(record) => (
            Action::Change,
            format!(
                "`{package}` was installed from {}@{}; the manifest wants {}@{} with {} patch(es)",
                record.url,
                record.rev,
                git.url,
                git.rev,
                digests.len()
            ),
        ),
        None => (
            Action::Create,
            format!("`{package}` has no source install record"),
        ),
    };
    let mut operations = Vec::new();
    let mut staged = Vec::new();
    if action != Action::NoOp {
        for (index, (path, content)) in patches.into_iter().enumerate() {
            let name = path.file_name().map_or_else(
                || format!("{index}.patch"),
                |n| n.to_string_lossy().into_owned(),
            );
            let remote = PathBuf::from(super::STAGING_DIR)
                .join("patches")
                .join(package)
                .join(format!("{index:02}-{name}"));
            staged.push(remote.display().to_string());
            operations.push(Operation::staged(remote, content));
        }
        operations.push(Operation::Run(
            NodeCommand::new("sh")
                .arg("-c")
                .script("source-install", INSTALL_SCRIPT)
                .arg("source-install")
                .arg(git.url.clone())
                .arg(git.rev.clone())
                .arg(format!("{CHECKOUT_DIR}/{package}"))
                .arg(python_text)
                .arg(git.subdirectory.clone().unwrap_or_default())
                .arg(format!("{RECORD_DIR}/{package}.json"))
                .arg(package.to_string())
                .arg_url(build_index.unwrap_or_default())
                .args(staged),
        ));
    }
    Ok(Step {
        kind: StepKind::SourceInstall,
        subject: package.to_string(),
        action,
        reason,
        operations,
        blocked: None,
        verification: Some(Verification::SourceInstalled {
            python: python.to_path_buf(),
            package: package.to_string(),
            pip_check: true,
        }),
    })
}

fn short(commit: &str) -> &str {
    commit.get(..12).unwrap_or(commit)
}
