//! The toolkit step: a CUDA toolkit in its own prefix, installed with NVIDIA's runfile
//! (side by side with the others) or NVIDIA's apt packages, judged by which update is
//! installed, identified exactly (its `version.json`, its apt or rpm meta package, or its
//! nvcc build when exactly one update ships it; see [`crate::facts::Toolkit`]), not by the
//! directory's existence. A toolkit that already is the manifest's update is adopted
//! whatever installed it (NVIDIA's rpm packages included); the runfile is never run over
//! a package-managed toolkit, and apt never on a node without apt-get.

use std::path::{Path, PathBuf};

use crate::cuda::CudaVersion;
use crate::facts::{NodeFacts, Toolkit as InstalledToolkit, ToolkitFacts, ToolkitVersionSource};
use crate::manifest::{InstallerKind, Toolkit};
use crate::rules::{AptNaming, UpdateTable};
use crate::transport::{INSTALL_BOUND, NodeCommand};

use super::{Action, Operation, STAGING_DIR, Step, StepKind, Verification};

/// The commands that install `toolkit`, in order.
fn operations(toolkit: &Toolkit, apt: &AptNaming) -> Vec<Operation> {
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
                        .arg("--override")
                        .bounded(INSTALL_BOUND),
                ),
                Operation::Run(NodeCommand::new("rm").arg("-f").arg("--").arg(staged_text)),
            ]
        }
        (_, _) => {
            // The meta package pinned to the manifest's update, e.g.
            // `cuda-toolkit-13-0=13.0.1-1`; every value after `--`.
            // See: https://docs.nvidia.com/cuda/cuda-installation-guide-linux/#network-repo-installation-for-ubuntu
            let package = toolkit.package.clone().unwrap_or_default();
            let pinned = format!("{package}={}", apt.pinned_version(&toolkit.version));
            vec![
                Operation::Run(
                    NodeCommand::new("env")
                        .arg("DEBIAN_FRONTEND=noninteractive")
                        .arg("apt-get")
                        .arg("update")
                        .arg("-q")
                        .bounded(INSTALL_BOUND),
                ),
                Operation::Run(
                    NodeCommand::new("env")
                        .arg("DEBIAN_FRONTEND=noninteractive")
                        .arg("apt-get")
                        .arg("install")
                        .arg("-y")
                        .arg("--no-install-recommends")
                        .arg("--")
                        .arg(pinned)
                        .bounded(INSTALL_BOUND),
                ),
            ]
        }
    }
}

/// Whether the toolkit is exactly `wanted`: identified to the update, and that update.
fn is_exactly(found: &InstalledToolkit, wanted: &CudaVersion) -> bool {
    found
        .version_source
        .is_some_and(ToolkitVersionSource::is_exact)
        && found.version.as_ref() == Some(wanted)
}

/// The installed packages of the toolkit's line in short, e.g. `cuda-compiler-13-0
/// 13.0.2-1 and 28 other packages of CUDA 13.0`: the meta package that names the update
/// when there is one.
fn package_list(found: &InstalledToolkit, apt: &AptNaming) -> String {
    let installed: Vec<_> = found
        .packages
        .iter()
        .filter(|package| package.installed)
        .collect();
    let line = found.version.as_ref().map_or_else(
        || "its line".to_string(),
        |v| format!("CUDA {}", v.release()),
    );
    match (
        found
            .meta_package(apt)
            .or_else(|| installed.first().copied()),
        installed.len(),
    ) {
        (None, _) => "no installed package".to_string(),
        (Some(package), 1) => format!("{} {}", package.name, package.version),
        (Some(package), count) => format!(
            "{} {} and {} other packages of {line}",
            package.name,
            package.version,
            count - 1
        ),
    }
}

/// The meta package to name in `toolkit.package` to adopt `found`: the installed one
/// that identified it, else the line's first, e.g. `cuda-toolkit-13-0`.
fn adopting_package(found: &InstalledToolkit, apt: &AptNaming, version: &CudaVersion) -> String {
    found
        .meta_package(apt)
        .map(|package| package.name.clone())
        .or_else(|| apt.meta_packages_for(version).into_iter().next())
        .unwrap_or_default()
}

/// How to remove rpm packages on the node, e.g. `dnf remove`; `rpm -e` where the facts
/// name no dnf, zypper or yum.
fn rpm_remove(toolkits: &ToolkitFacts) -> String {
    toolkits
        .rpm_front_end()
        .map_or_else(|| "rpm -e".to_string(), |tool| format!("{tool} remove"))
}

/// The installed packages' names, e.g. `cuda-compiler-13-0 cuda-nvcc-13-0`.
fn installed_names(found: &InstalledToolkit) -> String {
    found
        .packages
        .iter()
        .filter(|package| package.installed)
        .map(|package| package.name.as_str())
        .collect::<Vec<_>>()
        .join(" ")
}

/// The exact update `found` was identified as, when it is of `wanted`'s release line:
/// then `toolkit.version` may name it (the rest of the manifest was written for that line).
fn adoptable_update<'a>(
    found: &'a InstalledToolkit,
    wanted: &CudaVersion,
) -> Option<&'a CudaVersion> {
    match (&found.version, found.version_source) {
        (Some(version), Some(source))
            if source.is_exact() && version.release() == wanted.release() =>
        {
            Some(version)
        }
        _ => None,
    }
}

/// Why `installer: apt` cannot run on this node: it has no apt-get (an rpm system), or
/// NVIDIA's rpm packages own the prefix.
fn apt_unavailable(
    toolkit: &Toolkit,
    found: Option<&InstalledToolkit>,
    toolkits: &ToolkitFacts,
    apt: &AptNaming,
) -> Option<String> {
    let prefix = toolkit.prefix.display().to_string();
    let rpm_owned = found.filter(|found| found.package_managed() && found.manager().is_rpm());
    let no_apt_get = toolkits.has_package_tool("apt-get") == Some(false);
    if !no_apt_get && rpm_owned.is_none() {
        return None;
    }
    let adopt = rpm_owned
        .and_then(|found| {
            adoptable_update(found, &toolkit.version).map(|version| {
                format!(
                    "; `{prefix}` holds {}: to adopt it, set `toolkit.version: \"{version}\"`",
                    found.describe(apt)
                )
            })
        })
        .unwrap_or_default();
    if no_apt_get {
        let (manager, rpm_packages) = if toolkits.has_package_tool("rpm") == Some(true) {
            let with = toolkits
                .rpm_front_end()
                .map(|tool| format!(", with {tool}"))
                .unwrap_or_default();
            (
                format!(" (rpm manages its packages{with})"),
                ", or install NVIDIA's rpm packages with the package manager",
            )
        } else {
            (String::new(), "")
        };
        return Some(format!(
            "`installer: apt` needs apt-get, which this node does not have{manager}: use `installer: runfile` with a `toolkit.prefix` no package owns{rpm_packages}{adopt}"
        ));
    }
    rpm_owned.map(|found| {
        format!(
            "`{prefix}` holds {}, installed from NVIDIA's rpm packages; apt would unpack over files rpm owns: remove them first (`{} {}`){adopt}",
            found.describe(apt),
            rpm_remove(toolkits),
            installed_names(found)
        )
    })
}

/// Why `toolkit` cannot be applied over what `found` is, in words that say what to do.
fn blocked_reason(
    toolkit: &Toolkit,
    found: Option<&InstalledToolkit>,
    toolkits: &ToolkitFacts,
    apt: &AptNaming,
) -> Option<String> {
    let prefix = toolkit.prefix.display().to_string();
    let wanted = &toolkit.version;
    if toolkit.installer == InstallerKind::Apt {
        let package = toolkit.package.as_deref().unwrap_or_default();
        let metas = apt.meta_packages_for(wanted);
        if !metas.iter().any(|meta| meta == package) {
            return Some(format!(
                "`toolkit.package` `{package}` is not NVIDIA's meta package of CUDA {} (one of {}); its version would not name the update {wanted}",
                wanted.release(),
                metas.join(", ")
            ));
        }
        let apt_prefix = apt.prefix_for(wanted);
        if Path::new(&apt_prefix) != toolkit.prefix {
            return Some(format!(
                "NVIDIA's apt packages of CUDA {} install into `{apt_prefix}`, not `{prefix}`: set `toolkit.prefix: {apt_prefix}`",
                wanted.release()
            ));
        }
        if let Some(reason) = apt_unavailable(toolkit, found, toolkits, apt) {
            return Some(reason);
        }
    }
    let found = found?;
    if is_exactly(found, wanted) {
        return None;
    }
    let identity = found.describe(apt);
    let manager = found.manager();
    match toolkit.installer {
        InstallerKind::Runfile
            if found.version_source == Some(ToolkitVersionSource::VersionJson) =>
        {
            None
        }
        InstallerKind::Runfile if found.package_managed() && manager.is_rpm() => {
            // No `installer: apt` on an rpm node: adopt it as it is, or keep out of its way.
            let adopt = adoptable_update(found, wanted)
                .map(|version| {
                    format!(
                        "To adopt it, set `toolkit.version: \"{version}\"` (nothing is then installed); or "
                    )
                })
                .unwrap_or_default();
            Some(format!(
                "`{prefix}` holds {identity}, installed from NVIDIA's rpm packages ({}); the runfile is not run over a package-managed toolkit (rpm would no longer know its files). {adopt}install the runfile into another `toolkit.prefix`, e.g. `{prefix}.{}`; or remove the packages with the package manager first (`{} {}`)",
                package_list(found, apt),
                wanted.patch().unwrap_or_default(),
                rpm_remove(toolkits),
                installed_names(found)
            ))
        }
        InstallerKind::Runfile if found.package_managed() => {
            let adopt = match (&found.version, found.version_source) {
                (Some(version), Some(source)) if source.is_exact() => format!(
                    "To adopt it, set `toolkit.installer: apt`, `toolkit.package: {}` and `toolkit.version: \"{version}\"`",
                    adopting_package(found, apt, version)
                ),
                _ => format!(
                    "To move it to {wanted} with apt, set `toolkit.installer: apt` and `toolkit.package: {}`",
                    adopting_package(found, apt, wanted)
                ),
            };
            Some(format!(
                "`{prefix}` holds {identity}, installed from NVIDIA's apt packages ({}); the runfile is not run over a package-managed toolkit (dpkg would no longer know its files). {adopt}; or install the runfile into another `toolkit.prefix`, e.g. `{prefix}.{}`; or remove the packages first",
                package_list(found, apt),
                wanted.patch().unwrap_or_default(),
            ))
        }
        InstallerKind::Runfile => Some(format!(
            "`{prefix}` holds {identity}, installed by other means (no version.json, no {} package owns it); the runfile is not run over it: remove it or choose another `toolkit.prefix`, e.g. `{prefix}.{}`",
            manager.name(),
            wanted.patch().unwrap_or_default()
        )),
        InstallerKind::Apt if !found.package_managed() => Some(format!(
            "`{prefix}` holds {identity}, not installed from apt packages (no {} package owns it); apt would unpack over it: uninstall it first (a runfile toolkit has `{prefix}/bin/cuda-uninstaller`) or choose `installer: runfile`",
            manager.name()
        )),
        InstallerKind::Apt => match (&found.version, found.version_source) {
            (Some(version), Some(source)) if source.is_exact() && version > wanted => {
                Some(format!(
                    "`{prefix}` holds {identity}, newer than the manifest's CUDA {wanted}; apt is not asked to downgrade: set `toolkit.version: \"{version}\"` to adopt it, or remove the packages first"
                ))
            }
            _ => None,
        },
    }
}

/// Plan the step from the node's facts.
pub fn plan(toolkit: &Toolkit, facts: &NodeFacts) -> Step {
    let prefix = toolkit.prefix.display().to_string();
    let wanted = &toolkit.version;
    let verification = Some(Verification::ToolkitVersion {
        prefix: toolkit.prefix.clone(),
        version: wanted.clone(),
    });
    let rules = match UpdateTable::embedded() {
        Ok(rules) => rules,
        Err(error) => {
            return Step {
                kind: StepKind::Toolkit,
                subject: prefix,
                action: Action::Change,
                reason: "the toolkit identification rules did not load".to_string(),
                operations: Vec::new(),
                blocked: Some(format!("{error}")),
                verification,
            };
        }
    };
    let apt = rules.apt();
    let installed = facts.toolkits.find(&toolkit.prefix);
    let how = match toolkit.installer {
        InstallerKind::Runfile => "NVIDIA's runfile".to_string(),
        InstallerKind::Apt => format!(
            "apt (`{}={}`)",
            toolkit.package.as_deref().unwrap_or_default(),
            apt.pinned_version(wanted)
        ),
    };
    let (action, reason) = match installed {
        None => (
            Action::Create,
            format!("no toolkit in `{prefix}`; CUDA {wanted} will be installed with {how}"),
        ),
        Some(found) if is_exactly(found, wanted) => (
            Action::NoOp,
            format!("`{prefix}` holds {}", found.describe(apt)),
        ),
        Some(found) => (
            Action::Change,
            format!(
                "`{prefix}` holds {}; the manifest wants CUDA {wanted}, by {how}",
                found.describe(apt)
            ),
        ),
    };
    let operations = if action == Action::NoOp {
        Vec::new()
    } else {
        operations(toolkit, apt)
    };
    let blocked = if action == Action::NoOp {
        None
    } else {
        blocked_reason(toolkit, installed, &facts.toolkits, apt)
    };
    Step {
        kind: StepKind::Toolkit,
        subject: prefix,
        action,
        reason,
        operations,
        blocked,
        verification,
    }
}

/// Whether the node's facts show exactly CUDA `version` at `prefix`, identified as the
/// plan identifies it (`version.json`, the apt meta package, or a unique nvcc build);
/// `Err` says what is there instead. The verification of the toolkit step: probe the
/// node (e.g. with an empty [`crate::facts::ProbeRequest`]) and pass the facts here.
pub fn verify(facts: &NodeFacts, prefix: &Path, version: &CudaVersion) -> Result<(), String> {
    let rules = UpdateTable::embedded().map_err(|error| format!("{error}"))?;
    match facts.toolkits.find(prefix) {
        Some(found) if is_exactly(found, version) => Ok(()),
        Some(found) => Err(format!(
            "`{}` holds {}, not CUDA {version}",
            prefix.display(),
            found.describe(rules.apt())
        )),
        None => Err(format!("no toolkit in `{}`", prefix.display())),
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
            // Removing files dpkg or rpm owns would leave its database lying.
            let blocked = found.package_managed().then(|| {
                if found.manager().is_rpm() {
                    format!(
                        "`{prefix}` is installed from rpm packages; remove them with the package manager (`{} {}`), not by deleting the directory",
                        rpm_remove(&facts.toolkits),
                        installed_names(found)
                    )
                } else {
                    format!(
                        "`{prefix}` is installed from apt packages; remove them with apt (`apt-get remove --purge {}`), not by deleting the directory",
                        installed_names(found)
                    )
                }
            });
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
                blocked,
                verification: None,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A synthetic facts fixture, e.g. `h200.probe.txt` (the real H200 capture's probe).
    fn fixture(name: &str) -> String {
        fs_err::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("tests/fixtures/facts")
                .join(name),
        )
        .unwrap()
    }

    /// [`verify`] of CUDA `version` at `/usr/local/cuda-13.0`.
    fn verify_cuda_13_0(facts: &NodeFacts, version: &str) -> Result<(), String> {
        verify(
            facts,
            Path::new("/usr/local/cuda-13.0"),
            &version.parse().unwrap(),
        )
    }

    fn h200() -> NodeFacts {
        NodeFacts::read(
            &Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/facts/h200.facts.json"),
        )
        .unwrap()
    }

    /// The real H200 probe with `toolkit-dpkg` answered as NVIDIA's apt packages of
    /// `update` would answer it (the capture predates the dpkg section).
    fn h200_apt(update: &str, cudart: &str) -> NodeFacts {
        let dpkg = format!(
            "owner\tcuda-nvcc-13-0\nowner\tcuda-cudart-13-0\n\
             package\tcuda-cudart-13-0\t{cudart}-1\tii \n\
             package\tcuda-nvcc-13-0\t13.0.88-1\tii \n\
             package\tcuda-toolkit-13-0\t{update}-1\tii \n"
        );
        let probe = fixture("h200.probe.txt").replace(
            "@@begin python ",
            &format!(
                "@@begin toolkit-dpkg /usr/local/cuda-13.0@@\n{dpkg}@@end status=0@@\n@@begin python "
            ),
        );
        NodeFacts::parse(&probe).unwrap()
    }

    /// The real H200 probe as a Rocky Linux 9 node would answer it: NVIDIA's rpm packages
    /// of `update` own `/usr/local/cuda-13.0` (`toolkit_packages` output as rpm prints it:
    /// owners sorted, packages in rpm's database order, `-devel` names, `installed`), and
    /// the node's package tools are `tools`, e.g. `rpm\ndnf\n`.
    fn h200_rpm(update: &str, tools: &str) -> NodeFacts {
        let packages = format!(
            "manager\trpm\n\
             owner\tcuda-cudart-13-0\n\
             owner\tcuda-cudart-devel-13-0\n\
             owner\tcuda-nvcc-13-0\n\
             package\tcuda-cudart-13-0\t13.0.96-1\tinstalled\n\
             package\tcuda-nvcc-13-0\t13.0.88-1\tinstalled\n\
             package\tcuda-cudart-devel-13-0\t13.0.96-1\tinstalled\n\
             package\tcuda-compiler-13-0\t{update}-1\tinstalled\n"
        );
        let probe = fixture("h200.probe.txt").replace(
            "@@begin python ",
            &format!(
                "@@begin toolkit-packages /usr/local/cuda-13.0@@\n{packages}@@end status=0@@\n\
                 @@begin toolkit-package-tools@@\n{tools}@@end status=0@@\n@@begin python "
            ),
        );
        NodeFacts::parse(&probe).unwrap()
    }

    fn runfile(version: &str, prefix: &str, keep_existing: bool) -> Toolkit {
        Toolkit {
            version: version.parse().unwrap(),
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

    fn apt(version: &str) -> Toolkit {
        Toolkit {
            version: version.parse().unwrap(),
            prefix: PathBuf::from("/usr/local/cuda-13.0"),
            installer: InstallerKind::Apt,
            source: None,
            package: Some("cuda-toolkit-13-0".into()),
            keep_existing: true,
            provenance: None,
        }
    }

    #[test]
    fn the_real_h200_toolkit_is_ambiguous_and_the_runfile_is_refused_with_what_to_do() {
        let step = plan(&runfile("13.0.1", "/usr/local/cuda-13.0", true), &h200());
        assert_eq!(step.action, Action::Change);
        assert_eq!(
            step.reason,
            "`/usr/local/cuda-13.0` holds a CUDA 13.0 toolkit (identified by its nvcc release: nvcc V13.0.88); nvcc V13.0.88 ships with CUDA 13.0.1 and 13.0.2 alike (rules/cuda-updates.yaml), so it cannot tell which; the manifest wants CUDA 13.0.1, by NVIDIA's runfile"
        );
        let blocked = step.blocked.unwrap();
        assert!(
            blocked.contains("installed by other means (no version.json, no dpkg package owns it)")
                && blocked.contains("`/usr/local/cuda-13.0.1`"),
            "{blocked}"
        );
    }

    #[test]
    fn an_apt_toolkit_that_is_the_manifests_update_is_adopted_whatever_the_installer() {
        let facts = h200_apt("13.0.2", "13.0.96");
        for toolkit in [
            runfile("13.0.2", "/usr/local/cuda-13.0", true),
            apt("13.0.2"),
        ] {
            let step = plan(&toolkit, &facts);
            assert_eq!(step.action, Action::NoOp, "{step:?}");
            assert!(step.operations.is_empty() && step.blocked.is_none());
            assert_eq!(
                step.reason,
                "`/usr/local/cuda-13.0` holds CUDA 13.0.2 (identified by its apt meta package (dpkg): cuda-toolkit-13-0 13.0.2-1)"
            );
        }
        assert_eq!(verify_cuda_13_0(&facts, "13.0.2"), Ok(()));
        assert!(
            verify_cuda_13_0(&facts, "13.0.1")
                .unwrap_err()
                .contains("holds CUDA 13.0.2 (identified by its apt meta package (dpkg)")
        );
        // The ambiguous nvcc build never verifies an update.
        assert!(verify_cuda_13_0(&h200(), "13.0.2").is_err());
    }

    #[test]
    fn the_runfile_is_not_run_over_an_apt_toolkit_and_says_how_to_adopt_it() {
        let step = plan(
            &runfile("13.0.1", "/usr/local/cuda-13.0", true),
            &h200_apt("13.0.2", "13.0.96"),
        );
        assert_eq!(step.action, Action::Change);
        let blocked = step.blocked.unwrap();
        assert!(
            blocked.starts_with("`/usr/local/cuda-13.0` holds CUDA 13.0.2 (identified by its apt meta package (dpkg): cuda-toolkit-13-0 13.0.2-1), installed from NVIDIA's apt packages (cuda-toolkit-13-0 13.0.2-1 and 2 other packages of CUDA 13.0); the runfile is not run over a package-managed toolkit")
                && blocked.contains("To adopt it, set `toolkit.installer: apt`, `toolkit.package: cuda-toolkit-13-0` and `toolkit.version: \"13.0.2\"`"),
            "{blocked}"
        );
    }

    /// The real H200 node's own probe output (`tests/fixtures/real-h200-device/`): NVIDIA's
    /// packages without `cuda-toolkit-13-0`; `cuda-compiler-13-0` `13.0.2-1` names the update.
    #[test]
    fn the_real_h200_apt_toolkit_is_13_0_2_adopted_or_explained() {
        let probe = fs_err::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("tests/fixtures/real-h200-device/h200-after.probe.txt"),
        )
        .unwrap();
        let facts = NodeFacts::parse(&probe).unwrap();
        let found = facts.toolkits.default_toolkit().unwrap();
        assert!(found.package_managed());
        assert_eq!(found.version_source, Some(ToolkitVersionSource::Dpkg));
        assert_eq!(found.version.as_ref().unwrap().to_string(), "13.0.2");
        let seed = plan(&runfile("13.0.1", "/usr/local/cuda-13.0", true), &facts);
        let blocked = seed.blocked.unwrap();
        assert!(
            blocked.starts_with("`/usr/local/cuda-13.0` holds CUDA 13.0.2 (identified by its apt meta package (dpkg): cuda-compiler-13-0 13.0.2-1), installed from NVIDIA's apt packages (cuda-compiler-13-0 13.0.2-1 and ")
                && blocked.contains("`toolkit.package: cuda-compiler-13-0` and `toolkit.version: \"13.0.2\"`"),
            "{blocked}"
        );
        let mut adopt = apt("13.0.2");
        adopt.package = Some("cuda-compiler-13-0".into());
        assert_eq!(plan(&adopt, &facts).action, Action::NoOp);
        assert_eq!(
            plan(&runfile("13.0.2", "/usr/local/cuda-13.0", true), &facts).action,
            Action::NoOp
        );
    }

    #[test]
    fn apt_upgrades_an_older_update_pinned_and_refuses_to_downgrade() {
        let step = plan(&apt("13.0.2"), &h200_apt("13.0.1", "13.0.88"));
        assert_eq!(step.action, Action::Change);
        assert!(step.blocked.is_none(), "{step:?}");
        let commands: Vec<String> = step.operations.iter().map(Operation::describe).collect();
        assert_eq!(
            commands,
            [
                "env DEBIAN_FRONTEND=noninteractive apt-get update -q",
                "env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends -- cuda-toolkit-13-0=13.0.2-1"
            ]
        );
        let step = plan(&apt("13.0.1"), &h200_apt("13.0.2", "13.0.96"));
        let blocked = step.blocked.unwrap();
        assert!(
            blocked
                .contains("newer than the manifest's CUDA 13.0.1; apt is not asked to downgrade"),
            "{blocked}"
        );
        // A fresh node: created with apt.
        let mut fresh = h200();
        fresh.toolkits = Default::default();
        let step = plan(&apt("13.0.1"), &fresh);
        assert_eq!(step.action, Action::Create);
        assert!(step.blocked.is_none());
        assert_eq!(
            step.reason,
            "no toolkit in `/usr/local/cuda-13.0`; CUDA 13.0.1 will be installed with apt (`cuda-toolkit-13-0=13.0.1-1`)"
        );
    }

    #[test]
    fn apt_needs_the_meta_package_of_the_line_and_its_prefix() {
        let mut fresh = h200();
        fresh.toolkits = Default::default();
        let mut wrong_package = apt("13.0.1");
        wrong_package.package = Some("cuda-nvcc-13-0".into());
        assert!(
            plan(&wrong_package, &fresh)
                .blocked
                .unwrap()
                .contains("not NVIDIA's meta package of CUDA 13.0")
        );
        let mut wrong_prefix = apt("13.0.1");
        wrong_prefix.prefix = PathBuf::from("/opt/cuda");
        assert!(
            plan(&wrong_prefix, &fresh)
                .blocked
                .unwrap()
                .contains("install into `/usr/local/cuda-13.0`, not `/opt/cuda`")
        );
        // apt over the (ambiguous, unowned) real H200 toolkit would mix installations.
        assert!(
            plan(&apt("13.0.2"), &h200())
                .blocked
                .unwrap()
                .contains("not installed from apt packages")
        );
    }

    #[test]
    fn an_rpm_toolkit_is_identified_adopted_or_explained_without_apt() {
        let facts = h200_rpm("13.0.2", "rpm\ndnf\n");
        // The manifest's update: adopted as it is, whatever the installer.
        for toolkit in [
            runfile("13.0.2", "/usr/local/cuda-13.0", true),
            apt("13.0.2"),
        ] {
            let step = plan(&toolkit, &facts);
            assert_eq!(step.action, Action::NoOp, "{step:?}");
            assert_eq!(
                step.reason,
                "`/usr/local/cuda-13.0` holds CUDA 13.0.2 (identified by its rpm meta package: cuda-compiler-13-0 13.0.2-1)"
            );
        }
        assert_eq!(verify_cuda_13_0(&facts, "13.0.2"), Ok(()));
        // Another update with the runfile: refused, rpm named, adopting by version offered.
        let step = plan(&runfile("13.0.1", "/usr/local/cuda-13.0", true), &facts);
        assert_eq!(step.action, Action::Change);
        assert_eq!(
            step.blocked.as_deref(),
            Some(
                "`/usr/local/cuda-13.0` holds CUDA 13.0.2 (identified by its rpm meta package: cuda-compiler-13-0 13.0.2-1), installed from NVIDIA's rpm packages (cuda-compiler-13-0 13.0.2-1 and 3 other packages of CUDA 13.0); the runfile is not run over a package-managed toolkit (rpm would no longer know its files). To adopt it, set `toolkit.version: \"13.0.2\"` (nothing is then installed); or install the runfile into another `toolkit.prefix`, e.g. `/usr/local/cuda-13.0.1`; or remove the packages with the package manager first (`dnf remove cuda-compiler-13-0 cuda-cudart-13-0 cuda-cudart-devel-13-0 cuda-nvcc-13-0`)"
            )
        );
        // A toolkit of another line is not offered for adoption by version.
        let blocked = plan(&runfile("12.8.1", "/usr/local/cuda-13.0", true), &facts)
            .blocked
            .unwrap();
        assert!(
            !blocked.contains("To adopt it")
                && blocked.contains("(rpm would no longer know its files)"),
            "{blocked}"
        );
        // zypper on SLES; rpm itself where no front end is known.
        let blocked_with = |managers: &str| {
            plan(
                &runfile("13.0.1", "/usr/local/cuda-13.0", true),
                &h200_rpm("13.0.2", managers),
            )
            .blocked
            .unwrap()
        };
        let blocked = blocked_with("rpm\nzypper\n");
        assert!(
            blocked.contains("(`zypper remove cuda-compiler-13-0 "),
            "{blocked}"
        );
        let blocked = blocked_with("rpm\n");
        assert!(
            blocked.contains("(`rpm -e cuda-compiler-13-0 "),
            "{blocked}"
        );
        for text in ["installer: apt", "dpkg", "apt packages"] {
            assert!(!blocked.contains(text), "{text}: {blocked}");
        }
    }

    #[test]
    fn apt_is_refused_on_a_node_without_apt_get() {
        // An older rpm toolkit of the line: apt cannot upgrade it; adopting it is offered.
        let step = plan(&apt("13.0.2"), &h200_rpm("13.0.1", "rpm\ndnf\n"));
        assert_eq!(step.action, Action::Change);
        assert_eq!(
            step.blocked.as_deref(),
            Some(
                "`installer: apt` needs apt-get, which this node does not have (rpm manages its packages, with dnf): use `installer: runfile` with a `toolkit.prefix` no package owns, or install NVIDIA's rpm packages with the package manager; `/usr/local/cuda-13.0` holds CUDA 13.0.1 (identified by its rpm meta package: cuda-compiler-13-0 13.0.1-1): to adopt it, set `toolkit.version: \"13.0.1\"`"
            )
        );
        // A fresh rpm node: nothing to adopt, still refused.
        let mut fresh = h200_rpm("13.0.2", "rpm\nzypper\n");
        fresh.toolkits.installed.clear();
        fresh.toolkits.default_prefix = None;
        let step = plan(&apt("13.0.2"), &fresh);
        assert_eq!(step.action, Action::Create);
        assert!(
            step.blocked
                .as_deref()
                .unwrap()
                .starts_with("`installer: apt` needs apt-get, which this node does not have (rpm manages its packages, with zypper): use `installer: runfile`"),
            "{step:?}"
        );
        // Both tools (apt-get on an rpm system, or the reverse): apt is not run over rpm's files.
        let step = plan(&apt("13.0.2"), &h200_rpm("13.0.1", "apt-get\nrpm\ndnf\n"));
        let blocked = step.blocked.unwrap();
        assert!(
            blocked.starts_with("`/usr/local/cuda-13.0` holds CUDA 13.0.1 (identified by its rpm meta package: cuda-compiler-13-0 13.0.1-1), installed from NVIDIA's rpm packages; apt would unpack over files rpm owns: remove them first (`dnf remove cuda-compiler-13-0 "),
            "{blocked}"
        );
        // Neither apt-get nor rpm: only the runfile is offered.
        let mut bare = h200_rpm("13.0.2", "");
        bare.toolkits.installed.clear();
        assert_eq!(
            plan(&apt("13.0.2"), &bare).blocked.as_deref(),
            Some(
                "`installer: apt` needs apt-get, which this node does not have: use `installer: runfile` with a `toolkit.prefix` no package owns"
            )
        );
        // Facts without the tools section (older captures) refuse nothing new.
        let mut unknown = h200_apt("13.0.1", "13.0.88");
        unknown.toolkits.package_tools = None;
        assert!(plan(&apt("13.0.2"), &unknown).blocked.is_none());
    }

    #[test]
    fn rpm_toolkits_are_removed_with_the_package_manager_and_unowned_ones_say_rpm() {
        let removed = removals(
            &runfile("13.0.1", "/usr/local/cuda-13.0.1", false),
            &h200_rpm("13.0.2", "rpm\ndnf\n"),
        );
        assert_eq!(
            removed[0].blocked.as_deref(),
            Some(
                "`/usr/local/cuda-13.0` is installed from rpm packages; remove them with the package manager (`dnf remove cuda-compiler-13-0 cuda-cudart-13-0 cuda-cudart-devel-13-0 cuda-nvcc-13-0`), not by deleting the directory"
            )
        );
        // A runfile toolkit on an rpm node: rpm answered and owns nothing.
        let mut unowned = h200_rpm("13.0.2", "rpm\ndnf\n");
        for toolkit in &mut unowned.toolkits.installed {
            toolkit.packages.clear();
            toolkit.version = Some("13.0".parse().unwrap());
            toolkit.version_source = Some(ToolkitVersionSource::Nvcc);
        }
        let blocked = plan(&runfile("13.0.1", "/usr/local/cuda-13.0", true), &unowned)
            .blocked
            .unwrap();
        assert!(
            blocked.contains("installed by other means (no version.json, no rpm package owns it)"),
            "{blocked}"
        );
        assert!(
            plan(&apt("13.0.2"), &unowned)
                .blocked
                .unwrap()
                .starts_with("`installer: apt` needs apt-get")
        );
    }

    #[test]
    fn a_new_prefix_is_created_and_others_are_kept_or_removed() {
        let step = plan(&runfile("13.0.1", "/usr/local/cuda-13.0.1", true), &h200());
        assert_eq!(step.action, Action::Create);
        assert!(step.blocked.is_none());
        assert!(removals(&runfile("13.0.1", "/usr/local/cuda-13.0.1", true), &h200()).is_empty());
        let removed = removals(&runfile("13.0.1", "/usr/local/cuda-13.0.1", false), &h200());
        assert_eq!(removed.len(), 1);
        assert_eq!(removed[0].action, Action::Remove);
        assert!(removed[0].blocked.is_none());
        assert_eq!(
            removed[0].operations[0].describe(),
            "rm -rf -- /usr/local/cuda-13.0"
        );
        // Files dpkg owns are not deleted behind its back.
        let removed = removals(
            &runfile("13.0.1", "/usr/local/cuda-13.0.1", false),
            &h200_apt("13.0.2", "13.0.96"),
        );
        assert!(
            removed[0]
                .blocked
                .as_ref()
                .unwrap()
                .contains("apt-get remove --purge")
        );
    }
}
