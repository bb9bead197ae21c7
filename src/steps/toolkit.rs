//! The toolkit step: install a CUDA toolkit into its own prefix with NVIDIA's runfile,
//! side by side with the others, judged by the installed version (its `version.json`),
//! not by the directory's existence.

use std::path::PathBuf;

use crate::facts::{NodeFacts, ToolkitVersionSource};
use crate::manifest::{InstallerKind, Toolkit};
use crate::transport::NodeCommand;

use super::{Action, Operation, Step, StepKind, Verification};

/// Where runfiles are staged on the node before they run.
pub const STAGING_DIR: &str = "/var/tmp/cuda-upgrade";

/// The commands that install `toolkit`, in order.
fn operations(toolkit: &Toolkit) -> Vec<Operation> {
    match (toolkit.installer, &toolkit.source) {
        (InstallerKind::Runfile, Some(source)) => {
            let name = source
                .url
                .rsplit('/')
                .next()
                .unwrap_or("cuda.run")
                .to_string();
            let staged = PathBuf::from(STAGING_DIR).join(&name);
            let staged_text = staged.display().to_string();
            vec![
                Operation::Transfer {
                    url: source.url.clone(),
                    sha256: source.sha256.clone(),
                    path: staged,
                    mode: 0o700,
                },
                // The runfile's own flags; `--override` skips its compiler-version check.
                // See: https://docs.nvidia.com/cuda/cuda-installation-guide-linux/#runfile-advanced-options
                Operation::Run(
                    NodeCommand::new("sh")
                        .arg(staged_text.clone())
                        .arg("--silent")
                        .arg("--toolkit")
                        .arg(format!("--installpath={}", toolkit.prefix.display()))
                        .arg("--override"),
                ),
                Operation::Run(NodeCommand::new("rm").arg("-f").arg("--").arg(staged_text)),
            ]
        }
        (_, _) => {
            let package = toolkit.package.clone().unwrap_or_default();
            vec![Operation::Run(
                NodeCommand::new("env")
                    .arg("DEBIAN_FRONTEND=noninteractive")
                    .arg("apt-get")
                    .arg("install")
                    .arg("-y")
                    .arg("--no-install-recommends")
                    .arg(package),
            )]
        }
    }
}

/// Plan the step from the node's facts.
pub fn plan(toolkit: &Toolkit, facts: &NodeFacts) -> Step {
    let prefix = toolkit.prefix.display().to_string();
    let installed =
        facts.toolkits.installed.iter().find(|found| {
            found.prefix == toolkit.prefix || found.aliases.contains(&toolkit.prefix)
        });
    let (action, reason) = match installed {
        None => (Action::Create, format!("no toolkit in `{prefix}`")),
        Some(found) => match (&found.version, found.version_source) {
            (Some(version), Some(ToolkitVersionSource::VersionJson))
                if *version == toolkit.version =>
            {
                (
                    Action::NoOp,
                    format!("CUDA {version} is installed in `{prefix}`"),
                )
            }
            (Some(version), _) if version.release() != toolkit.version.release() => (
                Action::Change,
                format!(
                    "`{prefix}` holds CUDA {version}, the manifest wants {}",
                    toolkit.version
                ),
            ),
            (Some(version), Some(ToolkitVersionSource::VersionJson)) => (
                Action::Change,
                format!(
                    "`{prefix}` holds CUDA {version}, the manifest wants {}",
                    toolkit.version
                ),
            ),
            (Some(version), _) => (
                Action::Change,
                format!(
                    "`{prefix}` has no version.json; its nvcc reports release {version}, which cannot confirm {}",
                    toolkit.version
                ),
            ),
            (None, _) => (
                Action::Change,
                format!("`{prefix}` exists but holds no recognizable toolkit"),
            ),
        },
    };
    let operations = if action == Action::NoOp {
        Vec::new()
    } else {
        operations(toolkit)
    };
    // A toolkit without version.json was not laid out by a runfile (a distribution
    // package, a container image): installing over it would mix two installations.
    let foreign = installed.is_some_and(|found| {
        action != Action::NoOp && found.version_source != Some(ToolkitVersionSource::VersionJson)
    });
    let blocked = foreign.then(|| {
        format!(
            "`{prefix}` holds a toolkit installed by other means; remove it or choose another `toolkit.prefix` rather than running the runfile over it"
        )
    });
    Step {
        kind: StepKind::Toolkit,
        subject: prefix.clone(),
        action,
        reason,
        operations,
        blocked,
        verification: Some(Verification::ToolkitVersion {
            prefix: toolkit.prefix.clone(),
            version: toolkit.version.clone(),
        }),
    }
}

/// With `keep_existing: false`, one `-` step per other toolkit under `/usr/local`
/// (the default `/usr/local/cuda` link is left for the installer to repoint).
pub fn removals(toolkit: &Toolkit, facts: &NodeFacts) -> Vec<Step> {
    if toolkit.keep_existing {
        return Vec::new();
    }
    facts
        .toolkits
        .installed
        .iter()
        .filter(|found| found.prefix != toolkit.prefix && !found.aliases.contains(&toolkit.prefix))
        .filter(|found| {
            found.prefix.starts_with("/usr/local")
                && found
                    .prefix
                    .file_name()
                    .is_some_and(|name| name.to_string_lossy().starts_with("cuda-"))
        })
        .map(|found| {
            let prefix = found.prefix.display().to_string();
            let version = found
                .version
                .as_ref()
                .map_or_else(|| "an unknown version".to_string(), |v| format!("CUDA {v}"));
            Step {
                kind: StepKind::Toolkit,
                subject: prefix.clone(),
                action: Action::Remove,
                reason: format!(
                    "`{prefix}` holds {version}, and the manifest does not keep other toolkits"
                ),
                operations: vec![Operation::Run(
                    NodeCommand::new("rm").arg("-rf").arg("--").arg(prefix),
                )],
                blocked: None,
                verification: None,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn h200() -> NodeFacts {
        NodeFacts::read(
            &Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/facts/h200.facts.json"),
        )
        .unwrap()
    }

    fn toolkit(prefix: &str, keep_existing: bool) -> Toolkit {
        Toolkit {
            version: "13.0.1".parse().unwrap(),
            prefix: PathBuf::from(prefix),
            installer: InstallerKind::Runfile,
            source: Some(crate::manifest::Source {
                url: "https://example.invalid/cuda_13.0.1_580.82.07_linux.run".into(),
                sha256: "0".repeat(64).parse().unwrap(),
            }),
            package: None,
            keep_existing,
            provenance: None,
        }
    }

    #[test]
    fn a_toolkit_installed_by_other_means_blocks_the_runfile() {
        let step = plan(&toolkit("/usr/local/cuda-13.0", true), &h200());
        assert_eq!(step.action, Action::Change);
        assert!(step.blocked.is_some(), "{step:?}");
    }

    #[test]
    fn a_new_prefix_is_created_and_others_are_kept_or_removed() {
        let step = plan(&toolkit("/usr/local/cuda-13.0.1", true), &h200());
        assert_eq!(step.action, Action::Create);
        assert!(step.blocked.is_none());
        assert!(removals(&toolkit("/usr/local/cuda-13.0.1", true), &h200()).is_empty());
        let removed = removals(&toolkit("/usr/local/cuda-13.0.1", false), &h200());
        assert_eq!(removed.len(), 1);
        assert_eq!(removed[0].action, Action::Remove);
        assert_eq!(
            removed[0].operations[0].describe(),
            "rm -rf -- /usr/local/cuda-13.0"
        );
    }
}
