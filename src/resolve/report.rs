//! Conflict reports in domain words: why no set of releases satisfies a manifest.
//!
//! A formatter over pubgrub's derivation tree: each leaf incompatibility becomes one
//! sentence naming the manifest line, the package metadata or the rule (with its
//! `source:`) behind it, and the kinds of causes present select `hint:` lines with a
//! fix. It reads only the [`Evidence`] the resolver gathered (never the provider), and
//! writes each range against the versions that exist. This module renders plain data
//! ([`ConflictReport`]); printing is the caller's.

use std::collections::BTreeSet;

use pep440_rs::Version;
use pubgrub::{DerivationTree, External, Ranges};

use super::cause::{Cause, Edge, RuleCause, Tree, Unavailable, VersionRange};
use super::conflict::{ConflictReport, Fact};
use super::evidence::Evidence;
use super::package::{ResolverPackage, VirtualPackage};
use super::ranges::{SHORT_INTERVALS, every_release_from, show_existing, show_range_limited};
use crate::rules::{ABI_PINS_FILE, CUDA_ARCH_FILE, CUDA_DRIVER_FILE, CUDA_RUNTIME_FILE};

/// Build the report for a failed resolution.
pub fn conflict_report(evidence: &Evidence<'_>, tree: &Tree, manifest: &str) -> ConflictReport {
    let mut builder = Builder {
        evidence,
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

struct Builder<'e, 'p> {
    evidence: &'e Evidence<'p>,
    facts: Vec<Fact>,
    hints: BTreeSet<String>,
    ordered_hints: Vec<String>,
    /// Packages a manifest line asks for.
    manifest_packages: BTreeSet<pep508_rs::PackageName>,
    /// Packages a release's metadata pins, with the pinned range.
    metadata_pins: Vec<(pep508_rs::PackageName, String)>,
}

impl Builder<'_, '_> {
    /// A range of `package` in its short and full wordings, written against the
    /// versions of it that exist.
    fn range(&self, package: &ResolverPackage, range: &VersionRange) -> (String, String) {
        let existing = self.evidence.versions_of(package);
        (
            show_existing(range, existing, Some(SHORT_INTERVALS)),
            show_existing(range, existing, None),
        )
    }

    /// A fact that names `range` of `package`: `sentence` is given each wording.
    fn fact_with_range(
        &mut self,
        package: &ResolverPackage,
        range: &VersionRange,
        sentence: impl Fn(&str) -> String,
    ) {
        let (short, full) = self.range(package, range);
        self.fact(Fact {
            short: sentence(&short),
            full: sentence(&full),
        });
    }

    /// `name version` for a single version, `every release of name (from version)`, else
    /// `name` with its range; in both wordings.
    fn subject(&self, package: &ResolverPackage, range: &VersionRange) -> (String, String) {
        if let Some(version) = range.as_singleton() {
            let text = format!("`{package} {version}`");
            return (text.clone(), text);
        }
        let text = match every_release_from(range, self.evidence.versions_of(package)) {
            Some(None) => Some(format!("every release of `{package}`")),
            Some(Some(first)) => Some(format!("every release of `{package}` from {first}")),
            None => None,
        };
        if let Some(text) = text {
            return (text.clone(), text);
        }
        let (short, full) = self.range(package, range);
        (
            format!("`{package}` `{short}`"),
            format!("`{package}` `{full}`"),
        )
    }

    fn visit(&mut self, tree: &Tree) {
        match tree {
            DerivationTree::Derived(derived) => {
                self.visit(&derived.cause1);
                self.visit(&derived.cause2);
            }
            DerivationTree::External(external) => self.external(external),
        }
    }

    fn fact(&mut self, fact: Fact) {
        if !self.facts.iter().any(|known| known.full == fact.full) {
            self.facts.push(fact);
        }
    }

    fn fact_text(&mut self, text: String) {
        self.fact(Fact::plain(text));
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
                let (short, full) = self.subject(package, range);
                self.fact(Fact {
                    short: format!("{short} cannot be used: {unavailable}"),
                    full: format!("{full} cannot be used: {unavailable}"),
                });
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
        let environment = self.evidence.environment;
        // pubgrub also records "no other version exists" next to every decision; those
        // facts (`the toolkit is 13.0.1, outside <13.0.1 or >13.0.1`, `no other local
        // build of sglang 0.5.9`) restate a pin and explain nothing.
        if let ResolverPackage::Virtual(virtual_package) = package
            && let Some(value) = self.evidence.virtual_values.get(virtual_package)
            && !range.contains(value)
            && range.union(&Ranges::singleton(value.clone())) == Ranges::full()
        {
            return;
        }
        if is_local_tail(range) || range.complement().as_singleton().is_some() {
            return;
        }
        match package {
            ResolverPackage::Root(_) => {}
            ResolverPackage::Virtual(virtual_package) => {
                let outside = |value: &dyn std::fmt::Display, what: &str| {
                    let short = show_range_limited(range, Some(SHORT_INTERVALS));
                    let full = show_range_limited(range, None);
                    Fact {
                        short: format!("{what} {value}, outside `{short}`"),
                        full: format!("{what} {value}, outside `{full}`"),
                    }
                };
                let fact = match virtual_package {
                    VirtualPackage::Python => outside(&environment.python, "the node's Python is"),
                    VirtualPackage::Glibc => outside(&environment.glibc, "the node's glibc is"),
                    VirtualPackage::CudaDriver => Fact::plain(match &environment.driver {
                        Some(driver) => format!(
                            "the node's driver is {driver} (`target.driver` or the node's facts)"
                        ),
                        None => "the node has no NVIDIA driver".to_string(),
                    }),
                    VirtualPackage::GpuArch(arch) => outside(
                        &format!("{arch} (compute capability {})", arch.compute_capability()),
                        "the node has GPU architecture",
                    ),
                    VirtualPackage::CudaToolkit => match &environment.toolkit {
                        Some(toolkit) => outside(toolkit, "the CUDA toolkit is"),
                        None => Fact::plain("no CUDA toolkit is installed".to_string()),
                    },
                    VirtualPackage::CudaRuntime => match &environment.cuda_runtime {
                        Some(runtime) => outside(
                            &format!("{runtime} (the toolkit's release line)"),
                            "the stack's CUDA runtime is",
                        ),
                        None => Fact::plain("the stack has no CUDA runtime".to_string()),
                    },
                };
                self.fact(fact);
            }
            ResolverPackage::Package(name) | ResolverPackage::Extra(name, _) => {
                let known = self.evidence.package(name);
                if let Some(git) = &known.git {
                    match &git.version {
                        Some(version) => {
                            self.fact_text(format!(
                                "the manifest builds `{name}` from git `{}` at `{}`, and no open index records `{name} {version}`, whose requirements stand in for the checkout's",
                                crate::manifest::redact_url(&git.url), git.rev
                            ));
                            self.hint(format!(
                                "record `{name} {version}` in the snapshot (`--snapshot FILE`), or set `version:` to a release an index has"
                            ));
                        }
                        None => {
                            self.fact_text(format!(
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
                let holders = known.holder_names();
                if let Some(index) = &known.index_pin
                    && known.index.is_none()
                {
                    self.fact_text(format!("index `{index}` has no package `{name}`"));
                    self.did_you_mean(
                        &known.suggestions,
                        &format!("index `{index}` does not list `{name}`"),
                    );
                    return;
                }
                if known.index.is_none() {
                    if holders.is_empty() {
                        match &self.evidence.snapshot {
                            Some(snapshot) => {
                                self.fact_text(format!(
                                    "the snapshot `{snapshot}` has no package `{name}`: a snapshot miss, which says nothing about the live indexes (a snapshot records only what resolving its manifest needed)"
                                ));
                                self.hint(format!(
                                    "record a snapshot that has it with `upgrade index snapshot {} -o FILE` and pass `--snapshot FILE`",
                                    self.evidence.manifest_file
                                ));
                            }
                            None => self.fact_text(format!("no index has a package `{name}`")),
                        }
                        self.did_you_mean(
                            &known.suggestions,
                            &format!("`{name}` is not a project the indexes list"),
                        );
                    } else {
                        self.fact_text(format!(
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
                let from = known
                    .index
                    .as_ref()
                    .map(|index| format!(" on index `{index}`"))
                    .unwrap_or_default();
                let existing = &known.versions;
                let unusable: Vec<_> = known
                    .unusable
                    .iter()
                    .filter(|(version, _)| range.contains(version))
                    .collect();
                let explained = match &known.index {
                    Some(index) if !existing.iter().any(|version| range.contains(version)) => {
                        super::unusable::explain(
                            name.as_ref(),
                            index,
                            &unusable,
                            existing,
                            self.evidence.environment,
                        )
                    }
                    Some(_) | None => None,
                };
                if let Some((fact, hint)) = explained {
                    self.fact_text(fact);
                    self.hint(hint);
                } else if range.iter().nth(1).is_some()
                    && !existing.iter().any(|version| range.contains(version))
                {
                    // A union of the gaps between releases ruled out one by one: its hull
                    // says the same over the releases that exist.
                    let hull = match range.bounding_range() {
                        Some((lower, upper)) => {
                            Ranges::from_range_bounds((lower.cloned(), upper.cloned()))
                        }
                        None => Ranges::empty(),
                    };
                    let text = show_range_limited(&hull, None);
                    self.fact_text(format!(
                        "no other release of `{name}` matches `{text}`{from}"
                    ));
                } else {
                    self.fact_with_range(package, range, |shown| {
                        format!("no release of `{name}` matches `{shown}`{from}")
                    });
                }
                for (index, versions) in &known.explicit_holders {
                    if let Some(version) = versions.iter().find(|version| range.contains(version)) {
                        self.hint(format!(
                            "the explicit index `{index}` has `{name} {version}`: add `index: {index}` to `{name}` under `packages:` (an explicit index serves only the packages that name it)"
                        ));
                    }
                }
            }
        }
    }

    /// A "did you mean" hint naming close project names, when there are any.
    fn did_you_mean(&mut self, suggestions: &[pep508_rs::PackageName], why: &str) {
        if suggestions.is_empty() {
            return;
        }
        let names: Vec<String> = suggestions
            .iter()
            .map(|suggestion| format!("`{suggestion}`"))
            .collect();
        self.hint(format!("did you mean {}? ({why})", names.join(" or ")));
    }

    fn dependency(
        &mut self,
        package: &ResolverPackage,
        package_range: &VersionRange,
        dependency: &ResolverPackage,
        dependency_range: &VersionRange,
    ) {
        let recorded: Vec<(Version, Edge)> = self
            .evidence
            .edges_between(package, dependency)
            .into_iter()
            .filter(|(version, _)| package_range.contains(version))
            .collect();
        let versions: BTreeSet<&Version> = recorded.iter().map(|(version, _)| version).collect();
        let subject = match (package, versions.len()) {
            (ResolverPackage::Root(_), _) => {
                ("the manifest".to_string(), "the manifest".to_string())
            }
            (_, 1) => {
                let text = format!(
                    "`{package} {}`",
                    versions
                        .iter()
                        .next()
                        .map(ToString::to_string)
                        .unwrap_or_default()
                );
                (text.clone(), text)
            }
            _ => self.subject(package, package_range),
        };
        let mut seen = BTreeSet::new();
        let mut any = false;
        for (_, edge) in &recorded {
            let short = self.edge_sentence(&subject.0, package, dependency, dependency_range, edge);
            let full = if subject.0 == subject.1 {
                short.clone()
            } else {
                self.edge_sentence(&subject.1, package, dependency, dependency_range, edge)
            };
            if let (Some(short), Some(full)) = (short, full)
                && seen.insert(full.clone())
            {
                any = true;
                self.fact(Fact { short, full });
            }
        }
        if !any {
            let (short, full) = self.range(dependency, dependency_range);
            self.fact(Fact {
                short: format!("{} depends on `{dependency}` `{short}`", subject.0),
                full: format!("{} depends on `{dependency}` `{full}`", subject.1),
            });
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
        let environment = self.evidence.environment;
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
                    && !self.evidence.package(name).has_override
                {
                    let (short, _) = self.range(dependency, dependency_range);
                    self.metadata_pins.push((name.clone(), short));
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
        let environment = self.evidence.environment;
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
                let rules = self.evidence.rules;
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
                        .evidence
                        .dependents_of(package)
                        .iter()
                        .filter_map(|(dependent, version)| match dependent {
                            ResolverPackage::Package(dependent) => Some((dependent, version)),
                            _ => None,
                        })
                        .map(|(dependent, version)| {
                            let known = self.evidence.package(dependent);
                            let from = known
                                .index
                                .as_ref()
                                .map(|index| format!(" from `{index}`"))
                                .unwrap_or_default();
                            let to = known
                                .explicit_holders
                                .first()
                                .map(|(index, _)| format!(" with `index: {index}`"))
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
