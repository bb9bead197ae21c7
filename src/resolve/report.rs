//! Conflict reports in domain words: why no set of releases satisfies a manifest.
//!
//! A formatter over pubgrub's derivation tree: each leaf incompatibility becomes one
//! sentence naming the manifest line, the package metadata or the rule (with its
//! `source:`) behind it, and the kinds of causes present select `hint:` lines with a
//! fix. This module renders plain data ([`ConflictReport`]); printing is the caller's.

use std::collections::BTreeSet;
use std::fmt;

use pep440_rs::Version;
use pubgrub::{DerivationTree, External, Ranges};

use super::package::{ResolverPackage, VirtualPackage};
use super::provider::{Cause, Edge, Provider, RuleCause, Unavailable, VersionRange};
use crate::rules::{ABI_PINS_FILE, CUDA_ARCH_FILE, CUDA_DRIVER_FILE, CUDA_RUNTIME_FILE};

/// Why a manifest cannot be resolved: facts in derivation order, then hints; then every
/// further independent conflict, most actionable first.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ConflictReport {
    /// The manifest's name, e.g. `sglang-0.5.9-cuda13`.
    pub manifest: String,
    /// One sentence per fact, e.g. ``the manifest asks for `torch==2.10.0+cu130` (x.yaml:30:3)``.
    pub facts: Vec<String>,
    /// Fixes to try, e.g. ``pin `torch==2.9.1+cu130` …``.
    pub hints: Vec<String>,
    /// The conflicts found by resolving again with the ones before set aside.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub more: Vec<Conflict>,
}

/// One further conflict: its facts and hints.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Conflict {
    /// As [`ConflictReport::facts`].
    pub facts: Vec<String>,
    /// As [`ConflictReport::hints`].
    pub hints: Vec<String>,
}

impl fmt::Display for ConflictReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let total = self.more.len() + 1;
        if total > 1 {
            writeln!(
                f,
                "{total} independent conflicts, the one to change first first; conflict 1:"
            )?;
        }
        write_conflict(f, &self.facts, &self.hints)?;
        for (position, conflict) in self.more.iter().enumerate() {
            writeln!(
                f,
                "conflict {} (still there once the ones above are fixed):",
                position + 2
            )?;
            write_conflict(f, &conflict.facts, &conflict.hints)?;
        }
        Ok(())
    }
}

fn write_conflict(f: &mut fmt::Formatter<'_>, facts: &[String], hints: &[String]) -> fmt::Result {
    writeln!(f, "because:")?;
    for fact in facts {
        writeln!(f, "  - {fact}")?;
    }
    for hint in hints {
        writeln!(f, "hint: {hint}")?;
    }
    Ok(())
}

type Tree = DerivationTree<ResolverPackage, VersionRange, Unavailable>;

/// Build the report for a failed resolution.
pub fn conflict_report(provider: &Provider<'_>, tree: &Tree, manifest: &str) -> ConflictReport {
    let mut builder = Builder {
        provider,
        facts: Vec::new(),
        hints: BTreeSet::new(),
        ordered_hints: Vec::new(),
        manifest_packages: BTreeSet::new(),
        metadata_pins: Vec::new(),
    };
    builder.visit(tree);
    for (name, range) in std::mem::take(&mut builder.metadata_pins) {
        if builder.manifest_packages.contains(&name) {
            builder.hint(format!(
                "the manifest and a package's metadata disagree on `{name}`: if a release outside `{range}` is known to work, add an override under `overrides:` (e.g. `{name}==VERSION` with a `reason:`); overrides replace every requirement on `{name}`"
            ));
        }
    }
    ConflictReport {
        manifest: manifest.to_string(),
        facts: builder.facts,
        hints: builder.ordered_hints,
        more: Vec::new(),
    }
}

struct Builder<'p, 'a> {
    provider: &'p Provider<'a>,
    facts: Vec<String>,
    hints: BTreeSet<String>,
    ordered_hints: Vec<String>,
    /// Packages a manifest line asks for.
    manifest_packages: BTreeSet<pep508_rs::PackageName>,
    /// Packages a release's metadata pins, with the pinned range.
    metadata_pins: Vec<(pep508_rs::PackageName, String)>,
}

impl Builder<'_, '_> {
    fn visit(&mut self, tree: &Tree) {
        match tree {
            DerivationTree::Derived(derived) => {
                self.visit(&derived.cause1);
                self.visit(&derived.cause2);
            }
            DerivationTree::External(external) => self.external(external),
        }
    }

    fn fact(&mut self, fact: String) {
        if !self.facts.contains(&fact) {
            self.facts.push(fact);
        }
    }

    fn hint(&mut self, hint: String) {
        if self.hints.insert(hint.clone()) {
            self.ordered_hints.push(hint);
        }
    }

    fn external(&mut self, external: &External<ResolverPackage, VersionRange, Unavailable>) {
        match external {
            External::NotRoot(..) => {}
            External::NoVersions(package, range) => self.no_versions(package, range),
            External::Custom(package, range, unavailable) => {
                let subject = subject(package, range);
                self.fact(format!("{subject} cannot be used: {unavailable}"));
                if let Unavailable::Yanked { .. } = unavailable {
                    self.hint(format!(
                        "a yanked release is used only when the manifest pins it exactly (`{}==VERSION`)",
                        package
                    ));
                }
            }
            External::FromDependencyOf(package, package_range, dependency, dependency_range) => {
                self.dependency(package, package_range, dependency, dependency_range);
            }
        }
    }

    fn no_versions(&mut self, package: &ResolverPackage, range: &VersionRange) {
        let environment = self.provider.environment();
        // pubgrub also records "no other version exists" next to every decision; those
        // facts (`the toolkit is 13.0.1, outside <13.0.1 or >13.0.1`, `no other local
        // build of sglang 0.5.9`) restate a pin and explain nothing.
        if let ResolverPackage::Virtual(virtual_package) = package
            && let Some(value) = self.provider.virtual_value(virtual_package)
            && !range.contains(&value)
            && range.union(&Ranges::singleton(value)) == Ranges::full()
        {
            return;
        }
        if is_local_tail(range) || range.complement().as_singleton().is_some() {
            return;
        }
        match package {
            ResolverPackage::Root(_) => {}
            ResolverPackage::Virtual(virtual_package) => {
                let fact = match virtual_package {
                    VirtualPackage::Python => format!(
                        "the node's Python is {}, outside `{}`",
                        environment.python,
                        show_range(range)
                    ),
                    VirtualPackage::Glibc => format!(
                        "the node's glibc is {}, outside `{}`",
                        environment.glibc,
                        show_range(range)
                    ),
                    VirtualPackage::CudaDriver => match &environment.driver {
                        Some(driver) => {
                            format!(
                                "the node's driver is {driver} (`target.driver` or the node's facts)"
                            )
                        }
                        None => "the node has no NVIDIA driver".to_string(),
                    },
                    VirtualPackage::GpuArch(arch) => format!(
                        "the node has GPU architecture {arch} (compute capability {}), outside `{}`",
                        arch.compute_capability(),
                        show_range(range)
                    ),
                    VirtualPackage::CudaToolkit => match &environment.toolkit {
                        Some(toolkit) => format!(
                            "the CUDA toolkit is {toolkit}, outside `{}`",
                            show_range(range)
                        ),
                        None => "no CUDA toolkit is installed".to_string(),
                    },
                    VirtualPackage::CudaRuntime => match &environment.cuda_runtime {
                        Some(runtime) => format!(
                            "the stack's CUDA runtime is {runtime} (the toolkit's release line), outside `{}`",
                            show_range(range)
                        ),
                        None => "the stack has no CUDA runtime".to_string(),
                    },
                };
                self.fact(fact);
            }
            ResolverPackage::Package(name) | ResolverPackage::Extra(name, _) => {
                if let Some(git) = self.provider.git_source(name) {
                    match &git.version {
                        Some(version) => {
                            self.fact(format!(
                                "the manifest builds `{name}` from git `{}` at `{}`, and no open index records `{name} {version}`, whose requirements stand in for the checkout's",
                                crate::manifest::redact_url(&git.url), git.rev
                            ));
                            self.hint(format!(
                                "record `{name} {version}` in the snapshot (`--snapshot FILE`), or set `version:` to a release an index has"
                            ));
                        }
                        None => {
                            self.fact(format!(
                                "the manifest builds `{name}` from git `{}` at `{}` without `version:`, so its requirements are unknown",
                                crate::manifest::redact_url(&git.url), git.rev
                            ));
                            self.hint(format!(
                                "add `version:` (the version the checkout builds) to `{name}` under `packages:`"
                            ));
                        }
                    }
                    return;
                }
                let holders = self.provider.explicit_holders(name);
                if let Some(index) = self.provider.index_pin(name)
                    && self.provider.index_name_of(name).is_none()
                {
                    self.fact(format!("index `{index}` has no package `{name}`"));
                    return;
                }
                if self.provider.index_name_of(name).is_none()
                    && self.provider.git_source(name).is_none()
                {
                    if holders.is_empty() {
                        let universe = self.provider.universe();
                        match &universe.snapshot {
                            Some(snapshot) => {
                                self.fact(format!(
                                    "the snapshot `{snapshot}` has no package `{name}`: a snapshot miss, which says nothing about the live indexes (a snapshot records only what resolving its manifest needed)"
                                ));
                                self.hint(format!(
                                    "record a snapshot that has it with `upgrade index snapshot {} -o FILE` and pass `--snapshot FILE`",
                                    self.provider.manifest_file()
                                ));
                            }
                            None => self.fact(format!("no index has a package `{name}`")),
                        }
                        let suggestions = super::names::closest(name, universe.project_names());
                        if !suggestions.is_empty() {
                            let names: Vec<String> = suggestions
                                .iter()
                                .map(|suggestion| format!("`{suggestion}`"))
                                .collect();
                            self.hint(format!(
                                "did you mean {}? (`{name}` is not a project the indexes list)",
                                names.join(" or ")
                            ));
                        }
                    } else {
                        self.fact(format!(
                            "`{name}` is only on the explicit index `{}`, which serves only packages that name it",
                            holders.join("`, `")
                        ));
                        self.hint(format!(
                            "add `index: {}` to `{name}` under `packages:` if that index is the right source",
                            holders[0]
                        ));
                    }
                    return;
                }
                let from = self
                    .provider
                    .index_name_of(name)
                    .map(|index| format!(" on index `{index}`"))
                    .unwrap_or_default();
                self.fact(format!(
                    "no release of `{name}` matches `{}`{from}",
                    show_range(range)
                ));
                for index in &holders {
                    if let Some(version) = self.provider.versions_on(index, name, range).first() {
                        self.hint(format!(
                            "the explicit index `{index}` has `{name} {version}`: add `index: {index}` to `{name}` under `packages:` (an explicit index serves only the packages that name it)"
                        ));
                    }
                }
                let hidden = self.provider.hidden_prereleases(name, range);
                if let Some(newest) = hidden.first() {
                    self.hint(format!(
                        "`{name}` has pre-releases in that range (e.g. `{newest}`); pre-releases are chosen only when the manifest asks for one, e.g. `{name}>={newest}`"
                    ));
                }
            }
        }
    }

    fn dependency(
        &mut self,
        package: &ResolverPackage,
        package_range: &VersionRange,
        dependency: &ResolverPackage,
        dependency_range: &VersionRange,
    ) {
        let recorded: Vec<(Version, Edge)> = self
            .provider
            .edges_between(package, dependency)
            .into_iter()
            .filter(|(version, _)| package_range.contains(version))
            .collect();
        let versions: BTreeSet<&Version> = recorded.iter().map(|(version, _)| version).collect();
        let subject = match (package, versions.len()) {
            (ResolverPackage::Root(_), _) => "the manifest".to_string(),
            (_, 1) => format!(
                "`{package} {}`",
                versions
                    .iter()
                    .next()
                    .map(ToString::to_string)
                    .unwrap_or_default()
            ),
            _ => subject(package, package_range),
        };
        let mut seen = BTreeSet::new();
        let mut any = false;
        for (_, edge) in &recorded {
            let sentence =
                self.edge_sentence(&subject, package, dependency, dependency_range, edge);
            if let Some(sentence) = sentence
                && seen.insert(sentence.clone())
            {
                any = true;
                self.fact(sentence);
            }
        }
        if !any {
            self.fact(format!(
                "{subject} depends on `{dependency}` `{}`",
                show_range(dependency_range)
            ));
        }
    }

    fn edge_sentence(
        &mut self,
        subject: &str,
        package: &ResolverPackage,
        dependency: &ResolverPackage,
        dependency_range: &VersionRange,
        edge: &Edge,
    ) -> Option<String> {
        let environment = self.provider.environment();
        Some(match &edge.cause {
            Cause::Manifest(requirement) => {
                self.manifest_packages
                    .insert(requirement.requirement.name.clone());
                let index = requirement
                    .index
                    .as_ref()
                    .map(|index| format!(" from `{index}`"))
                    .unwrap_or_default();
                match &requirement.git {
                    Some(git) => format!(
                        "the manifest builds `{}` from git `{}` at `{}` ({})",
                        requirement.requirement,
                        crate::manifest::redact_url(&git.url),
                        git.rev,
                        requirement.origin
                    ),
                    None => format!(
                        "the manifest asks for `{}`{index} ({})",
                        requirement.requirement, requirement.origin
                    ),
                }
            }
            Cause::Override(pin) => format!(
                "the override `{}` ({}) replaces every requirement on `{}`",
                pin.requirement, pin.origin, pin.requirement.name
            ),
            Cause::Constraint(pin) => format!(
                "the constraint `{}` ({}) narrows `{}`",
                pin.requirement, pin.origin, pin.requirement.name
            ),
            Cause::Metadata(requirement) => {
                if let (ResolverPackage::Package(_), ResolverPackage::Package(name)) =
                    (package, dependency)
                    && !self.provider.has_override(name)
                {
                    self.metadata_pins
                        .push((name.clone(), show_range(dependency_range)));
                }
                format!("{subject} requires `{requirement}` (its package metadata)")
            }
            Cause::RequiresPython(specifiers) => {
                format!("{subject} requires Python `{specifiers}` (its `Requires-Python`)")
            }
            Cause::RootRequiresPython(specifiers) => {
                format!("the project requires Python `{specifiers}`")
            }
            Cause::ExtraBase => return None,
            Cause::WheelGlibc(glibc) => {
                format!("{subject} has only manylinux wheels that need glibc {glibc} or newer")
            }
            Cause::Toolkit => match &environment.toolkit {
                Some(toolkit) => format!("the manifest installs CUDA toolkit {toolkit}"),
                None => "the manifest installs a CUDA toolkit".to_string(),
            },
            Cause::Runtime => match &environment.cuda_runtime {
                Some(runtime) => format!("the stack links CUDA runtime {runtime}"),
                None => "the stack links a CUDA runtime".to_string(),
            },
            Cause::Rule(rule) => self.rule_sentence(subject, package, rule),
        })
    }

    fn rule_sentence(
        &mut self,
        subject: &str,
        package: &ResolverPackage,
        rule: &RuleCause,
    ) -> String {
        let environment = self.provider.environment();
        match rule {
            RuleCause::Driver(minimum) => {
                if let Some(driver) = &environment.driver {
                    self.hint(format!(
                        "upgrade the node's driver to {} or newer (it has {driver}), or choose a toolkit whose minimum driver it meets (see `{CUDA_DRIVER_FILE}`)",
                        minimum.driver
                    ));
                }
                format!(
                    "CUDA toolkit {} needs driver {} or newer (rule `{CUDA_DRIVER_FILE}`; source: {})",
                    minimum.toolkit, minimum.driver, minimum.source
                )
            }
            RuleCause::MinorVersion(major) => {
                if let Some(driver) = &environment.driver {
                    self.hint(format!(
                        "upgrade the node's driver to {} or newer (it has {driver}): nothing built with CUDA {} runs on an older branch (see `{CUDA_RUNTIME_FILE}`)",
                        major.driver, major.major
                    ));
                }
                let who = match package {
                    ResolverPackage::Virtual(VirtualPackage::CudaRuntime) => {
                        format!("the stack's CUDA {} runtime", major.major)
                    }
                    _ => format!("{subject}, a CUDA {} build,", major.major),
                };
                format!(
                    "{who} needs driver {} or newer under minor version compatibility ({}) (rule `{CUDA_RUNTIME_FILE}`; source: {})",
                    major.driver, major.limits, major.source
                )
            }
            RuleCause::Arch(support) => {
                let rules = self.provider.rules();
                let unsupported: Vec<String> = environment
                    .gpu_archs
                    .iter()
                    .filter(|arch| !support.supports(arch))
                    .map(
                        |arch| match rules.arches.renamed_on(arch, &support.toolkit) {
                            Some(renamed) => format!(
                                "{arch} (named {} from CUDA {}; source: {})",
                                renamed.now, renamed.from, renamed.source
                            ),
                            None => arch.to_string(),
                        },
                    )
                    .collect();
                if !unsupported.is_empty() {
                    self.hint(format!(
                        "CUDA {} does not support {}: keep these nodes on a toolkit that does, or remove the architecture from `target.gpu_arch`",
                        support.toolkit,
                        unsupported.join(", ")
                    ));
                }
                format!(
                    "CUDA {} supports GPU architectures {} (rule `{CUDA_ARCH_FILE}`; source: {})",
                    support.toolkit,
                    support.device_names(),
                    support.source
                )
            }
            RuleCause::LocalLabel {
                label,
                runtime,
                source,
                jit_source,
            } => format!(
                "{subject} is a `+{label}` build: it carries its own CUDA runtime, and JIT paths (nvcc, ptxas) need a toolkit of the same major, `{runtime}` (rule `{CUDA_RUNTIME_FILE}`; sources: {source}; {jit_source})"
            ),
            RuleCause::Family {
                pattern,
                runtime,
                source,
            } => {
                if let (ResolverPackage::Package(name), Some(runtime_now)) =
                    (package, &environment.cuda_runtime)
                {
                    let label = runtime_now.local_label();
                    let pullers: Vec<String> = self
                        .provider
                        .dependents_of(package)
                        .into_iter()
                        .filter_map(|(dependent, version)| match dependent {
                            ResolverPackage::Package(dependent) => Some((dependent, version)),
                            _ => None,
                        })
                        .map(|(dependent, version)| {
                            let from = self
                                .provider
                                .index_name_of(&dependent)
                                .map(|index| format!(" from `{index}`"))
                                .unwrap_or_default();
                            let to = self
                                .provider
                                .explicit_holders(&dependent)
                                .first()
                                .map(|index| format!(" with `index: {index}`"))
                                .unwrap_or_default();
                            format!(
                                "`{dependent} {version}`{from} pulls it in: pin `{dependent}` to its `+{label}` build{to}"
                            )
                        })
                        .collect();
                    if pullers.is_empty() {
                        self.hint(format!(
                            "`{name}` is a `{pattern}` wheel, for another CUDA runtime than the stack's {runtime_now}: drop it, or use its CUDA {} counterpart",
                            runtime_now.major()
                        ));
                    } else {
                        self.hint(format!(
                            "`{name}` is a `{pattern}` wheel, for another CUDA runtime than the stack's {runtime_now}; {}",
                            pullers.join("; ")
                        ));
                    }
                }
                format!(
                    "{subject} belongs to the `{pattern}` wheels: it needs CUDA runtime `{runtime}` (rule `{CUDA_RUNTIME_FILE}`; source: {source})"
                )
            }
            RuleCause::AbiPin(pin) => {
                self.hint(format!(
                    "keep `{}` with `{}` (e.g. `{}+{}` from the cu index), or move `{}` to a build made against the `{}` you want",
                    pin.package,
                    pin.requires,
                    pin.requires,
                    environment
                        .cuda_runtime
                        .as_ref()
                        .map(|runtime| runtime.local_label())
                        .unwrap_or_else(|| "LABEL".to_string()),
                    pin.package,
                    pin.requires.name
                ));
                format!(
                    "{subject} was built against `{}` (ABI: {}) (rule `{ABI_PINS_FILE}`; source: {})",
                    pin.requires, pin.reason, pin.source
                )
            }
            RuleCause::VersionLock(lock) => {
                self.hint(format!(
                    "pin `{}` to the same version as `{}`, e.g. an override `{}==VERSION` next to the one for `{}`",
                    lock.package, lock.follows, lock.package, lock.follows
                ));
                format!(
                    "{subject} must have the same version as `{}`: {} (rule `{ABI_PINS_FILE}`; source: {})",
                    lock.follows, lock.reason, lock.source
                )
            }
        }
    }
}

/// `name version` for a single version, else `name` with its range.
fn subject(package: &ResolverPackage, range: &VersionRange) -> String {
    match range.as_singleton() {
        Some(version) => format!("`{package} {version}`"),
        None if *range == Ranges::full() => format!("every release of `{package}`"),
        None => format!("`{package}` `{}`", show_range(range)),
    }
}

/// A range in PEP 440 words, e.g. `>=2.9.1, <2.9.1.post0.dev0` → `==2.9.1`.
pub fn show_range(range: &VersionRange) -> String {
    if let Some(version) = range.as_singleton() {
        return format!("=={version}");
    }
    let mut parts = Vec::new();
    for (lower, upper) in range.iter() {
        use std::ops::Bound;
        match (lower, upper) {
            (Bound::Included(low), Bound::Excluded(high)) if is_local_run_end(low, high) => {
                parts.push(format!("=={low}"));
            }
            _ => {
                let low = match lower {
                    Bound::Included(low) => Some(format!(">={low}")),
                    Bound::Excluded(low) => Some(format!(">{low}")),
                    Bound::Unbounded => None,
                };
                let high = match upper {
                    Bound::Included(high) => Some(format!("<={high}")),
                    Bound::Excluded(high) => Some(format!("<{high}")),
                    Bound::Unbounded => None,
                };
                let text = [low, high]
                    .into_iter()
                    .flatten()
                    .collect::<Vec<_>>()
                    .join(", ");
                parts.push(if text.is_empty() {
                    "*".to_string()
                } else {
                    text
                });
            }
        }
    }
    if parts.is_empty() {
        return "no version".to_string();
    }
    parts.join(" or ")
}

/// Whether a range holds only other local builds (or post-local tails) of one
/// release, e.g. `>0.5.9, <0.5.9.post0.dev0`.
fn is_local_tail(range: &VersionRange) -> bool {
    use std::ops::Bound;
    let Some((lower, upper)) = range.bounding_range() else {
        return false;
    };
    let (Bound::Excluded(low) | Bound::Included(low)) = lower else {
        return false;
    };
    let Bound::Excluded(high) = upper else {
        return false;
    };
    let public = low.clone().without_local();
    let specifier = pep440_rs::VersionSpecifier::equals_version(public.clone());
    let run = super::ranges::specifier_to_range(&specifier);
    let tail = !range.contains(&public) || matches!(lower, Bound::Excluded(_));
    tail && run
        .bounding_range()
        .is_some_and(|(_, end)| end == Bound::Excluded(high))
}

/// Whether `[low, high)` is exactly the run of local builds of `low`.
fn is_local_run_end(low: &Version, high: &Version) -> bool {
    let specifier = pep440_rs::VersionSpecifier::equals_version(low.clone());
    super::ranges::specifier_to_range(&specifier)
        .bounding_range()
        .is_some_and(|(_, upper)| matches!(upper, std::ops::Bound::Excluded(end) if end == high))
        && !low.is_local()
}
