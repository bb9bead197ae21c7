//! The source install step: a package built from a git tag with local patches —
//! fetch, check out the revision, apply each patch (an already-applied patch is
//! detected and kept), install without dependencies, and record what was installed in
//! `/var/lib/cuda-upgrade/records/NAME.json`, which the next probe reads back.

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::facts::NodeFacts;
use crate::manifest::{GitSource, has_credentials, redact_url};
use crate::transport::{INSTALL_BOUND, NodeCommand};

use super::{
    Action, BuildRequirements, BuildResolution, Delivery, FetchMode, Installer, Operation,
    Placement, SECRETS_DIR, Step, StepKind, Verification,
};

/// Where checkouts live on the node.
pub const CHECKOUT_DIR: &str = "/var/lib/cuda-upgrade/src";
/// Where install records live on the node (the probe reads them).
pub const RECORD_DIR: &str = "/var/lib/cuda-upgrade/records";

/// The build index that means "none": the build runs with `--no-index` (the node may
/// have no route to any index, `--fetch controller`); its build requirements must then
/// already be on the node.
pub const NO_INDEX: &str = "-";

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
/// subdirectory record package index-url git-url-file index-url-file find-links uv
/// patch... The build runs isolated, with pip, or with `uv` when its path is given
/// (its flags are [`super::installer::UV_INSTALL_FLAGS`], and `--reinstall`: a patched
/// tree of the same version is built again), its build requirements from the index (empty: pip's
/// own configuration on the node; [`NO_INDEX`]: no index at all) and from the
/// `find-links` directory the controller sent them to (empty: none).
///
/// A URL with credentials never appears on a command line: `url` and `index-url` are
/// then the masked forms, and the real ones are read from root-only files (removed at
/// once) into the environment — git rewrites the masked URL into the real one through
/// `url.<real>.insteadOf` given as `GIT_CONFIG_*` variables, and pip reads
/// `PIP_INDEX_URL`. Every value git reads as an argument comes after `--` or
/// `--end-of-options`.
const INSTALL_SCRIPT: &str = r#"set -eu
url=$1; rev=$2; checkout=$3; python=$4; subdirectory=$5; record=$6; package=$7; index_url=$8; git_url_file=$9; index_url_file=${10}; find_links=${11}; uv=${12}; shift 12
if [ -n "$git_url_file" ]; then
    real_url=$(cat -- "$git_url_file"); rm -f -- "$git_url_file"
    GIT_CONFIG_COUNT=1; GIT_CONFIG_KEY_0="url.$real_url.insteadOf"; GIT_CONFIG_VALUE_0=$url
    export GIT_CONFIG_COUNT GIT_CONFIG_KEY_0 GIT_CONFIG_VALUE_0
fi
if [ -n "$index_url_file" ]; then
    PIP_INDEX_URL=$(cat -- "$index_url_file"); rm -f -- "$index_url_file"
    UV_INDEX_URL=$PIP_INDEX_URL
    export PIP_INDEX_URL UV_INDEX_URL
fi
no_index=
if [ "$index_url" = - ]; then no_index=1; index_url=; fi
if [ -d "$checkout/.git" ]; then
    git -C "$checkout" remote set-url -- origin "$url"
    git -C "$checkout" fetch --quiet --tags --force origin
else
    mkdir -p -- "$(dirname -- "$checkout")"
    git clone --quiet -- "$url" "$checkout"
fi
git -C "$checkout" -c advice.detachedHead=false checkout --quiet --force --end-of-options "$rev" --
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
# The controller sends a build requirements directory only when there are some.
if [ -n "$find_links" ] && [ ! -d "$find_links" ]; then find_links=; fi
if [ -n "$uv" ]; then
    "$uv" pip install --python "$python" --no-deps --no-cache --link-mode copy --compile-bytecode --reinstall ${no_index:+--no-index} ${index_url:+--index-url "$index_url"} ${find_links:+--find-links "$find_links"} -- "$checkout/$subdirectory"
else
    "$python" -m pip install --no-deps --no-input --disable-pip-version-check --no-cache-dir ${no_index:+--no-index} ${index_url:+--index-url "$index_url"} ${find_links:+--find-links "$find_links"} -- "$checkout/$subdirectory"
fi
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

/// Plan the step for one git package. `manifest_dir` resolves patch paths. With
/// [`FetchMode::Controller`] the node clones nothing from the repository: the controller
/// sends a `git bundle` of the pinned revision, and git on the node reads the
/// repository's URL as that bundle (`url.BUNDLE.insteadOf`, as for a URL with
/// credentials), so the install record names the repository as before.
pub fn plan(
    package: &str,
    git: &GitSource,
    python: &Path,
    manifest_dir: &Path,
    build: &BuildResolution,
    facts: &NodeFacts,
    delivery: &Delivery,
) -> Result<Step, SourceError> {
    let Delivery { fetch, installer } = delivery;
    // Build requirements come from the first open index (through the controller with
    // `--fetch controller`, which resolves them over every index).
    let build_index = build.indexes.iter().find(|index| !index.explicit);
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
    // What is shown, recorded on the node and compared: the URL without credentials.
    let shown_url = redact_url(&git.url);
    let installed = facts.packages.iter().any(|p| p.name.to_string() == package);
    let record = facts
        .install_records
        .iter()
        .find(|record| record.package == package);
    let (action, reason) = match record {
        Some(record)
            if installed
                && record.url == shown_url
                && record.rev == git.rev
                && record.subdirectory == git.subdirectory
                && record.patches == digests
                && record.python == python_text =>
        {
            (
                Action::NoOp,
                format!(
                    "`{package}` is installed from {}@{} ({}) with its patches",
                    shown_url,
                    git.rev,
                    short(&record.commit)
                ),
            )
        }
        Some(record) => (
            Action::Change,
            format!(
                "`{package}` was installed from {}@{}; the manifest wants {}@{} with {} patch(es)",
                redact_url(&record.url),
                record.rev,
                shown_url,
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
        operations.extend(installer.send());
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
        let mut find_links = String::new();
        let git_url_file = match fetch {
            FetchMode::Node => secret_file(
                &mut operations,
                &git.url,
                format!("source-{package}.git-url"),
            ),
            FetchMode::Controller => {
                let bundle = PathBuf::from(super::STAGING_DIR)
                    .join("bundles")
                    .join(format!("{package}.bundle"));
                let requirements = build_index.map(|_| {
                    let dir = PathBuf::from(super::STAGING_DIR)
                        .join("build")
                        .join(package);
                    find_links = dir.display().to_string();
                    BuildRequirements {
                        package: package.to_string(),
                        subdirectory: git.subdirectory.clone(),
                        resolution: build.clone(),
                        dir,
                        known: None,
                    }
                });
                operations.push(Operation::GitBundle {
                    url: git.url.clone(),
                    rev: git.rev.clone(),
                    path: bundle.clone(),
                    build: requirements.map(Box::new),
                });
                let path = PathBuf::from(SECRETS_DIR).join(format!("source-{package}.git-url"));
                operations.push(Operation::Upload {
                    path: path.clone(),
                    placement: Placement::Secret,
                    content: bundle.display().to_string().into_bytes(),
                });
                path.display().to_string()
            }
        };
        // A node whose files the controller fetches reaches no index.
        let build_index = match fetch {
            FetchMode::Node => build_index.map_or("", |index| index.url.as_str()),
            FetchMode::Controller => NO_INDEX,
        };
        let index_url_file = secret_file(
            &mut operations,
            build_index,
            format!("source-{package}.index-url"),
        );
        operations.push(Operation::Run(
            NodeCommand::new("sh")
                .arg("-c")
                .script("source-install", INSTALL_SCRIPT)
                .arg("source-install")
                .arg(shown_url)
                .arg(git.rev.clone())
                .arg(format!("{CHECKOUT_DIR}/{package}"))
                .arg(python_text)
                .arg(git.subdirectory.clone().unwrap_or_default())
                .arg(format!("{RECORD_DIR}/{package}.json"))
                .arg(package.to_string())
                .arg(if index_url_file.is_empty() {
                    build_index.to_string()
                } else {
                    String::new()
                })
                .arg(git_url_file)
                .arg(index_url_file)
                .arg(find_links)
                .arg(match installer {
                    Installer::Pip => String::new(),
                    Installer::Uv(_) => super::installer::UV_PATH.to_string(),
                })
                .args(staged)
                .bounded(INSTALL_BOUND),
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
            installer: installer.clone(),
            pip_check: true,
        }),
    })
}

/// When `url` has credentials, add the upload of a root-only file holding it (under
/// [`SECRETS_DIR`], named `name`) and return the file's path; else return `""`.
fn secret_file(operations: &mut Vec<Operation>, url: &str, name: String) -> String {
    if !has_credentials(url) {
        return String::new();
    }
    let path = PathBuf::from(SECRETS_DIR).join(name);
    operations.push(Operation::Upload {
        path: path.clone(),
        placement: Placement::Secret,
        content: url.as_bytes().to_vec(),
    });
    path.display().to_string()
}

fn short(commit: &str) -> &str {
    commit.get(..12).unwrap_or(commit)
}

#[cfg(test)]
mod tests {
    use super::*;

    const TOKEN: &str = "s3cr3t-t0ken";

    fn facts() -> NodeFacts {
        let path =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/facts/h200.facts.json");
        NodeFacts::read(&path).unwrap()
    }

    fn resolution(index: &str) -> BuildResolution {
        BuildResolution {
            indexes: vec![super::super::BuildIndex {
                name: "default".to_string(),
                url: index.to_string(),
                explicit: false,
            }],
            pins: std::collections::BTreeMap::new(),
            environment: crate::resolve::TargetEnvironment::parse_facts(
                r#"{"python": "3.12.3", "implementation": "cpython", "glibc": "2.35", "arch": "x86_64", "gpu_arch": []}"#,
                "facts.json",
            )
            .unwrap()
            .to_facts(),
            options: crate::resolve::ResolveOptions::default(),
        }
    }

    /// See: issue 9 — git and index URLs with credentials never reach a command line,
    /// a plan or the install record; they go to root-only files.
    #[test]
    fn credentials_stay_off_the_command_line() {
        let git = GitSource {
            url: format!("https://{TOKEN}@git.example.invalid/org/sglang"),
            rev: "v0.5.9".to_string(),
            subdirectory: Some("python".to_string()),
            patches: Vec::new(),
            version: None,
        };
        let index = format!("https://user:{TOKEN}@index.example.invalid/simple");
        let step = plan(
            "sglang",
            &git,
            Path::new("/opt/env/bin/python3"),
            Path::new("."),
            &resolution(&index),
            &facts(),
            &Delivery::default(),
        )
        .unwrap();
        assert!(!step.reason.contains(TOKEN), "{}", step.reason);
        let mut secrets = Vec::new();
        for operation in &step.operations {
            match operation {
                Operation::Run(command) => {
                    assert!(!command.render().contains(TOKEN), "{}", command.render());
                    assert!(
                        command
                            .render()
                            .contains("https://***@git.example.invalid/org/sglang")
                    );
                }
                Operation::Upload {
                    path,
                    placement: Placement::Secret,
                    content,
                } => {
                    assert!(path.starts_with(SECRETS_DIR));
                    secrets.push(String::from_utf8(content.clone()).unwrap());
                }
                other => panic!("unexpected operation: {other:?}"),
            }
            assert!(!operation.describe().contains(TOKEN));
        }
        assert_eq!(secrets, [git.url.clone(), index]);
    }

    /// The script hands the real URL to git through its environment: a local clone
    /// through a masked URL that only the rewrite makes reachable.
    #[test]
    fn git_reads_the_real_url_from_its_environment() {
        let dir = tempfile::tempdir().unwrap();
        let origin = dir.path().join("origin");
        let run = |args: &[&str], cwd: &Path| {
            let status = std::process::Command::new("git")
                .args(args)
                .current_dir(cwd)
                .env("GIT_AUTHOR_NAME", "t")
                .env("GIT_AUTHOR_EMAIL", "t@example.invalid")
                .env("GIT_COMMITTER_NAME", "t")
                .env("GIT_COMMITTER_EMAIL", "t@example.invalid")
                .status()
                .unwrap();
            assert!(status.success(), "git {args:?}");
        };
        std::fs::create_dir(&origin).unwrap();
        run(&["init", "-q"], &origin);
        run(&["commit", "-q", "--allow-empty", "-m", "x"], &origin);
        run(&["tag", "v1"], &origin);
        let real = format!("file://{}", origin.display());
        let secret = dir.path().join("git-url");
        std::fs::write(&secret, &real).unwrap();
        // A script that stops after the checkout: the same header and git lines.
        let header_end = INSTALL_SCRIPT.find("git -C \"$checkout\" clean").unwrap();
        let script = &INSTALL_SCRIPT[..header_end];
        let checkout = dir.path().join("checkout");
        let output = std::process::Command::new("sh")
            .arg("-c")
            .arg(script)
            .arg("source-install")
            .arg("https://***@git.example.invalid/org/repo")
            .arg("v1")
            .arg(&checkout)
            .args(["python3", "", "/nonexistent", "pkg", ""])
            .arg(&secret)
            .args(["", "", ""])
            .output()
            .unwrap();
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        assert!(checkout.join(".git").is_dir());
        assert!(!secret.exists(), "the secret file is removed once read");
    }

    /// The script's uv line uses the installer's flags: one list of them.
    #[test]
    fn the_script_installs_with_the_installers_uv_flags() {
        let flags = super::super::installer::UV_INSTALL_FLAGS.join(" ");
        assert!(
            INSTALL_SCRIPT.contains(&format!("--python \"$python\" {flags} --reinstall")),
            "{flags}"
        );
    }
}
