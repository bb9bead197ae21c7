//! What a reviewer should know about a resolution that succeeded: the CUDA majors its
//! wheels carry (several in one environment, one that differs from the system
//! toolkit's, an update newer than the driver's), `nvidia-*` projects assumed
//! CUDA-independent, sdists the node will build, extras a chosen release lacks, and
//! why a top-level package is not at its newest release.
//!
//! It reads the provider the resolution used and the chosen versions; it never
//! resolves again. A missing extra the manifest itself asks for is the one finding
//! that fails the resolution (pip and uv only warn, and the environment then lacks
//! what the extra was meant to bring).

use std::collections::{BTreeMap, BTreeSet};
use std::str::FromStr;

use pep440_rs::Version;
use pep508_rs::{ExtraName, PackageName};

use super::cause::Cause;
use super::conflict::{ConflictReport, Fact};
use super::environment::TargetEnvironment;
use super::lock::{FindingKind, LockFinding};
use super::package::{ResolverPackage, VirtualPackage};
use super::provider::Provider;
use super::request::Request;
use crate::cuda::{CudaVersion, CudaWheelPolicy};
use crate::rules::CUDA_RUNTIME_FILE;

/// At most this many packages are named in one finding; the rest are counted.
const NAMED: usize = 4;

/// The chosen releases: name → version, and the extras the closure uses.
pub(super) struct Chosen<'c> {
    /// e.g. `torch` → `2.9.1+cu130`.
    pub versions: &'c BTreeMap<String, (PackageName, Version)>,
    /// e.g. `jax` → `[cuda12]`.
    pub extras: &'c BTreeMap<String, Vec<String>>,
}

/// The findings of a resolution, or the report of an extra the manifest asks for that
/// the chosen release lacks.
pub(super) fn examine(
    provider: &Provider<'_>,
    chosen: &Chosen<'_>,
    request: &Request,
    environment: &TargetEnvironment,
) -> Result<Vec<LockFinding>, Box<ConflictReport>> {
    let mut findings = missing_extras(provider, chosen, request)?;
    findings.extend(cuda_findings(provider, chosen, request, environment));
    findings.extend(sdist_builds(provider, chosen));
    findings.extend(python_caps(provider, chosen, environment));
    findings.extend(below_newest(provider, chosen, request, environment));
    findings.sort_by_key(|finding| finding.kind);
    Ok(findings)
}

fn finding(kind: FindingKind, package: Option<&str>, message: String) -> LockFinding {
    LockFinding {
        kind,
        package: package.and_then(|name| pep508_rs::PackageName::from_str(name).ok()),
        message: crate::text::Line::escaping(&message),
    }
}

/// `a 1.0, b 2.0, c 3.0, d 4.0 and 3 more`.
fn named(items: &[String]) -> String {
    let shown: Vec<&str> = items.iter().take(NAMED).map(String::as_str).collect();
    match items.len().saturating_sub(NAMED) {
        0 => shown.join(", "),
        rest => format!("{} and {rest} more", shown.join(", ")),
    }
}

/// An extra of a chosen release that the release does not declare: an error when the
/// manifest asks for it, a warning when a dependency's metadata does (as uv warns).
fn missing_extras(
    provider: &Provider<'_>,
    chosen: &Chosen<'_>,
    request: &Request,
) -> Result<Vec<LockFinding>, Box<ConflictReport>> {
    let mut findings = Vec::new();
    let mut facts = Vec::new();
    let mut hints = Vec::new();
    for (key, extras) in chosen.extras {
        let Some((name, version)) = chosen.versions.get(key) else {
            continue;
        };
        let Some(release) = provider.release(name, version) else {
            continue;
        };
        for extra in extras {
            let Ok(extra_name) = ExtraName::from_str(extra) else {
                continue;
            };
            if release.provides(&extra_name) {
                continue;
            }
            let asked = request.requirements.iter().find(|requirement| {
                requirement.requirement.name == *name
                    && requirement.requirement.extras.contains(&extra_name)
            });
            match asked {
                Some(requirement) => {
                    facts.push(Fact::plain(format!(
                        "`{name} {version}` has no extra `{extra}`, and the manifest asks for `{name}[{extra}]` ({})",
                        requirement.origin
                    )));
                    let having: Vec<String> = provider
                        .release_versions(name)
                        .into_iter()
                        .filter(|candidate| {
                            provider
                                .release(name, candidate)
                                .is_some_and(|release| release.provides(&extra_name))
                        })
                        .take(3)
                        .map(|candidate| candidate.to_string())
                        .collect();
                    hints.push(format!(
                        "uv and pip only warn here and install `{name}` without `{extra}`; the manifest asks for the extra, so the lock stops"
                    ));
                    hints.push(if having.is_empty() {
                        format!(
                            "no recorded release of `{name}` declares `{extra}`: check the extra's name in `{name}`'s documentation"
                        )
                    } else {
                        format!(
                            "releases of `{name}` that declare `{extra}`: {}; pin one, or drop the extra",
                            having.join(", ")
                        )
                    });
                }
                None => findings.push(finding(
                    FindingKind::Warning,
                    Some(key),
                    format!(
                        "`{name} {version}` has no extra `{extra}`, which a dependency asks for: what the extra would add is not installed"
                    ),
                )),
            }
        }
    }
    if facts.is_empty() {
        Ok(findings)
    } else {
        Err(Box::new(ConflictReport {
            manifest: request.name.clone(),
            facts,
            hints,
            more: Vec::new(),
        }))
    }
}

/// The CUDA majors the chosen wheels carry, and what they mean next to the system
/// toolkit and the driver.
fn cuda_findings(
    provider: &Provider<'_>,
    chosen: &Chosen<'_>,
    request: &Request,
    environment: &TargetEnvironment,
) -> Vec<LockFinding> {
    let rules = provider.rules();
    let mut findings = Vec::new();
    // major → the packages that carry it, those with their own name first (torch
    // before the nvidia-* libraries it pulls in).
    let mut majors: BTreeMap<u32, Vec<String>> = BTreeMap::new();
    // CUDA update → the packages built with it, e.g. 13.2 → `cuda-toolkit 13.2.2`.
    let mut updates: BTreeMap<CudaVersion, Vec<String>> = BTreeMap::new();
    for (key, (name, version)) in chosen.versions {
        if provider.git_source(name).is_some() {
            continue;
        }
        if rules.runtimes.assumed_independent(name, version) {
            findings.push(finding(
                FindingKind::Note,
                Some(key),
                format!(
                    "`{name} {version}`: no row of `{CUDA_RUNTIME_FILE}` says which CUDA runtime it carries; assumed CUDA-independent (if it carries one, {})",
                    crate::rules::add_row_hint(crate::rules::file_name(CUDA_RUNTIME_FILE))
                ),
            ));
            continue;
        }
        let Ok(carried) = rules.runtimes.rules_for(name, version) else {
            continue;
        };
        for rule in carried {
            majors
                .entry(rule.major)
                .or_default()
                .push(format!("{name} {version}"));
        }
        if let Some(update) = carried_update(name, version) {
            updates
                .entry(update)
                .or_default()
                .push(format!("{name} {version}"));
        }
    }
    for (update, carriers) in &updates {
        if let Some(hazard) = driver_hazard(provider, &named(carriers), update, environment) {
            let package = carriers
                .first()
                .and_then(|carrier| carrier.split(' ').next());
            findings.push(finding(FindingKind::Hazard, package, hazard));
        }
    }
    // Projects with their own name first: torch before the nvidia-* libraries.
    for carriers in majors.values_mut() {
        carriers.sort_by_key(|carrier| {
            (
                carrier.starts_with("nvidia-") || carrier.starts_with("cuda-"),
                carrier.clone(),
            )
        });
    }
    // major → the chosen packages that are not carriers but require one directly, e.g.
    // torch 2.9.1 for the nvidia-*-cu12 libraries it pins: they are what a person named.
    let mut linkers: BTreeMap<u32, Vec<String>> = BTreeMap::new();
    for (name, version) in chosen.versions.values() {
        let label = format!("{name} {version}");
        if majors.values().any(|carriers| carriers.contains(&label)) {
            continue;
        }
        let Some(release) = provider.release(name, version) else {
            continue;
        };
        let Ok(edges) = provider.release_dependencies(name, release) else {
            continue;
        };
        for (major, carriers) in &majors {
            let links = edges.iter().any(|edge| match &edge.dependency {
                ResolverPackage::Package(dependency) => chosen
                    .versions
                    .get(dependency.as_ref())
                    .is_some_and(|(_, held)| carriers.contains(&format!("{dependency} {held}"))),
                _ => false,
            });
            if links {
                linkers.entry(*major).or_default().push(label.clone());
            }
        }
    }
    let subject = |major: &u32, carriers: &[String]| match linkers.get(major) {
        Some(users) => format!("{} (through {})", named(users), named(carriers)),
        None => named(carriers),
    };
    if majors.len() > 1 {
        let parts: Vec<String> = majors
            .iter()
            .map(|(major, carriers)| format!("CUDA {major}: {}", subject(major, carriers)))
            .collect();
        findings.push(finding(
            FindingKind::Warning,
            None,
            format!(
                "wheels of several CUDA majors share this environment ({}); each loads its own runtime libraries, and what one builds or JIT-compiles may not load in the other (`target.cuda_wheels: one-major` requires one)",
                parts.join("; ")
            ),
        ));
    }
    if let Some(toolkit) = &environment.toolkit
        && request.options.cuda_wheels != CudaWheelPolicy::Toolkit
    {
        for (major, carriers) in &majors {
            if *major != toolkit.major() {
                findings.push(finding(
                    FindingKind::Warning,
                    None,
                    format!(
                        "the system toolkit is CUDA {toolkit} but {} carr{} CUDA {major}: what compiles or JIT-compiles against the toolkit at run time (torch.utils.cpp_extension, flashinfer's JIT, Triton with `TRITON_PTXAS_PATH`) builds for another runtime, and torch refuses a toolkit of another major (`target.cuda_wheels: toolkit` keeps the wheels on the toolkit's major)",
                        subject(major, carriers),
                        if linkers.get(major).map_or(carriers.len(), Vec::len) == 1 {
                            "ies"
                        } else {
                            "y"
                        }
                    ),
                ));
            }
        }
    }
    findings
}

/// The CUDA update a release was built with, where its version says it: a `+cu132`
/// label (13.2), or the runtime's own wheels (`cuda-toolkit 13.2.2`,
/// `nvidia-cuda-runtime-cu12 12.8.90`).
fn carried_update(name: &PackageName, version: &Version) -> Option<CudaVersion> {
    if let [pep440_rs::LocalSegment::String(label), ..] = version.local() {
        return CudaVersion::from_local_label(label);
    }
    let runtime_wheels = [
        "cuda-toolkit",
        "nvidia-cuda-runtime",
        "nvidia-cuda-runtime-cu11",
        "nvidia-cuda-runtime-cu12",
        "nvidia-cuda-runtime-cu13",
    ];
    if !runtime_wheels.contains(&name.as_ref()) {
        return None;
    }
    let release = version.release();
    let major = u32::try_from(*release.first()?).ok()?;
    let minor = u32::try_from(*release.get(1)?).ok()?;
    Some(CudaVersion::new(major, minor, None))
}

/// A wheel built with a newer CUDA update than the node's driver ships: it runs under
/// minor version compatibility, with the limits NVIDIA documents.
fn driver_hazard(
    provider: &Provider<'_>,
    carriers: &str,
    update: &CudaVersion,
    environment: &TargetEnvironment,
) -> Option<String> {
    let driver = environment.driver.as_ref()?;
    let rules = provider.rules();
    // The update's own row, else the newest row of the same major before it (a newer
    // update never needs less).
    let row = rules
        .drivers
        .rows()
        .iter()
        .filter(|row| {
            row.toolkit.major() == update.major() && row.toolkit.minor() <= update.minor()
        })
        .find(|row| row.toolkit.minor() == update.minor())
        .or_else(|| {
            rules
                .drivers
                .rows()
                .iter()
                .filter(|row| {
                    row.toolkit.major() == update.major() && row.toolkit.minor() < update.minor()
                })
                .max_by(|a, b| a.toolkit.cmp(&b.toolkit))
        })?;
    if row.driver <= *driver {
        return None;
    }
    let floor = rules.runtimes.major(update.major())?;
    Some(format!(
        "{carriers} {} built with CUDA {}.{}, whose toolkit driver is at least {} (CUDA {}); driver {driver} runs {} under minor version compatibility (CUDA {} needs {}): {}",
        if carriers.contains(", ") || carriers.contains(" and ") {
            "are"
        } else {
            "is"
        },
        update.major(),
        update.minor(),
        row.driver,
        row.toolkit,
        if carriers.contains(", ") || carriers.contains(" and ") {
            "them"
        } else {
            "it"
        },
        update.major(),
        floor.driver,
        floor.limits
    ))
}

/// Chosen releases with no wheel for the node: pip builds them there.
fn sdist_builds(provider: &Provider<'_>, chosen: &Chosen<'_>) -> Vec<LockFinding> {
    let mut findings = Vec::new();
    for (key, (name, version)) in chosen.versions {
        if provider.git_source(name).is_some() {
            continue;
        }
        let Some(release) = provider.release(name, version) else {
            continue;
        };
        if let Ok(file) = provider.choose_file(name, release)
            && file.rank.is_none()
        {
            findings.push(finding(
                FindingKind::Note,
                Some(key),
                format!(
                    "`{name} {version}` has no wheel for this node: pip builds `{}` on the node (its build requirements and, for native code, a compiler and the CUDA toolkit)",
                    file.file.filename
                ),
            ));
        }
    }
    findings
}

/// Chosen files whose `Requires-Python` leaves the node's Python out by an upper bound
/// alone, e.g. `scipy 1.10.1`'s `<3.12,>=3.8` on 3.12: chosen as uv chooses them (upper
/// bounds are not applied), which pip does only with `--ignore-requires-python`.
fn python_caps(
    provider: &Provider<'_>,
    chosen: &Chosen<'_>,
    environment: &TargetEnvironment,
) -> Vec<LockFinding> {
    let mut findings = Vec::new();
    for (key, (name, version)) in chosen.versions {
        let Some(release) = provider.release(name, version) else {
            continue;
        };
        let Ok(file) = provider.choose_file(name, release) else {
            continue;
        };
        let declared = file
            .file
            .requires_python
            .as_ref()
            .or(release.requires_python.as_ref());
        if let Some(declared) = declared
            && crate::index::requires_python::only_upper_bound_excludes(
                declared,
                &environment.python,
            )
        {
            findings.push(finding(
                FindingKind::Note,
                Some(key),
                format!(
                    "`{name} {version}` declares Requires-Python `{declared}`, whose upper bound leaves Python {} out: as uv does, only its lower bound is applied, and the node's pip installs it with `--ignore-requires-python`",
                    environment.python
                ),
            ));
        }
    }
    findings
}

/// For each package the manifest names that is not at the newest release its own
/// specifier allows, what kept the newer one out.
fn below_newest(
    provider: &Provider<'_>,
    chosen: &Chosen<'_>,
    request: &Request,
    environment: &TargetEnvironment,
) -> Vec<LockFinding> {
    let mut findings = Vec::new();
    let mut seen = BTreeSet::new();
    for requirement in &request.requirements {
        let name = &requirement.requirement.name;
        if requirement.git.is_some() || !seen.insert(name.clone()) {
            continue;
        }
        let Some((_, version)) = chosen.versions.get(name.as_ref()) else {
            continue;
        };
        let allowed = match &requirement.requirement.version_or_url {
            Some(pep508_rs::VersionOrUrl::VersionSpecifier(specifiers)) => specifiers.clone(),
            _ => pep440_rs::VersionSpecifiers::empty(),
        };
        let Some(newest) = provider
            .release_versions(name)
            .into_iter()
            .filter(|candidate| allowed.contains(candidate))
            .find(|candidate| provider.prerelease_allowed(name, candidate))
        else {
            continue;
        };
        if newest <= *version {
            continue;
        }
        let why = why_not(provider, chosen, name, &newest, environment);
        findings.push(finding(
            FindingKind::Note,
            Some(name.as_ref()),
            format!("`{name}` is locked at {version}, not its newest release {newest}: {why}"),
        ));
    }
    findings
}

/// Why `name newest` is not in the lock, from its files, its own requirements against
/// the chosen versions and the node, or another chosen package's requirement on it.
fn why_not(
    provider: &Provider<'_>,
    chosen: &Chosen<'_>,
    name: &PackageName,
    newest: &Version,
    environment: &TargetEnvironment,
) -> String {
    let Some(release) = provider.release(name, newest) else {
        return "its release is not recorded".to_string();
    };
    if let Err((unavailable, _)) = provider.choose_file(name, release) {
        return format!("`{name} {newest}` cannot be used: {unavailable}");
    }
    let edges = match provider.release_dependencies(name, release) {
        Ok(edges) => edges,
        Err(unavailable) => return format!("`{name} {newest}` cannot be used: {unavailable}"),
    };
    for edge in &edges {
        match &edge.dependency {
            ResolverPackage::Package(dependency) => {
                if let Some((_, held)) = chosen.versions.get(dependency.as_ref())
                    && !edge.range.contains(held)
                {
                    return format!(
                        "`{name} {newest}` {}, and the lock holds `{dependency} {held}`",
                        cause_text(&edge.cause, dependency)
                    );
                }
            }
            ResolverPackage::Virtual(virtual_package) => {
                if let Some(value) = provider.virtual_value(virtual_package)
                    && !edge.range.contains(&value)
                {
                    let node = match virtual_package {
                        VirtualPackage::CudaDriver => environment
                            .driver
                            .as_ref()
                            .map_or_else(|| value.to_string(), ToString::to_string),
                        _ => value.to_string(),
                    };
                    return format!(
                        "`{name} {newest}` needs `{virtual_package}` in `{}` and the node has {node}",
                        super::show_range(&edge.range)
                    );
                }
            }
            ResolverPackage::Root(_) | ResolverPackage::Extra(..) => {}
        }
    }
    // Another chosen package's requirement keeps the newest out.
    for (dependent_key, (dependent, held)) in chosen.versions {
        if dependent == name {
            continue;
        }
        let Some(dependent_release) = provider.release(dependent, held) else {
            continue;
        };
        let Ok(dependent_edges) = provider.release_dependencies(dependent, dependent_release)
        else {
            continue;
        };
        for edge in dependent_edges {
            if edge.dependency == ResolverPackage::Package(name.clone())
                && !edge.range.contains(newest)
            {
                return format!("`{dependent_key} {held}` {}", cause_text(&edge.cause, name));
            }
        }
    }
    format!(
        "a newer release conflicts with the rest of the stack (`upgrade lock` with `{name}=={newest}` in the manifest names the conflict)"
    )
}

/// `requires `torch<2.10``, `is held by the override `torch==2.9.1``.
fn cause_text(cause: &Cause, dependency: &PackageName) -> String {
    match cause {
        Cause::Metadata(requirement) => format!("requires `{requirement}` (its package metadata)"),
        Cause::Override(pin) => format!(
            "is overridden by the manifest's `{}` ({})",
            pin.requirement, pin.origin
        ),
        Cause::Constraint(pin) => format!(
            "is constrained by the manifest's `{}` ({})",
            pin.requirement, pin.origin
        ),
        Cause::Rule(_) => {
            format!("is held to another `{dependency}` by a rule of `manifests/rules/`")
        }
        _ => format!("requires another `{dependency}`"),
    }
}
