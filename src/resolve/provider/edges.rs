//! The dependencies a release, the root or a virtual package adds: requirements with
//! overrides and constraints applied, `Requires-Python`, the glibc of manylinux wheels,
//! and the rules (CUDA runtimes and the driver, toolkit minimums and GPU architectures,
//! ABI pins and version locks), each with its cause.

use std::str::FromStr;

use pep440_rs::Version;
use pep508_rs::{ExtraName, PackageName, Requirement, VersionOrUrl};
use pubgrub::Ranges;

use super::super::cause::{Cause, Edge, RuleCause, Unavailable};
use super::super::package::{ResolverPackage, VirtualPackage};
use super::super::ranges::{python_ranges, specifiers_to_ranges};
use super::Provider;
use crate::cuda::{CudaVersion, CudaWheelPolicy};
use crate::index::Release;
use crate::index::requires_python::lower_bounds as python_lower_bounds;
use crate::rules::{DriverMinimum, RuntimeKind};

impl Provider<'_> {
    /// The dependencies a requirement turns into, overrides and constraints applied.
    pub(super) fn requirement_edges(
        &self,
        requirement: &Requirement,
        cause: Cause,
        edges: &mut Vec<Edge>,
    ) {
        if let Some(overrides) = self.overrides.get(&requirement.name) {
            for pin in overrides {
                if pin.requirement.evaluate_markers(&self.markers, &[]) {
                    self.plain_requirement_edges(
                        &pin.requirement,
                        Cause::Override((*pin).clone()),
                        edges,
                    );
                }
            }
            return;
        }
        self.plain_requirement_edges(requirement, cause, edges);
    }

    pub(super) fn plain_requirement_edges(
        &self,
        requirement: &Requirement,
        cause: Cause,
        edges: &mut Vec<Edge>,
    ) {
        let range = match &requirement.version_or_url {
            Some(VersionOrUrl::VersionSpecifier(specifiers)) => specifiers_to_ranges(specifiers),
            Some(VersionOrUrl::Url(_)) | None => Ranges::full(),
        };
        let name = &requirement.name;
        // The last edge of the requirement takes the cause and range; the others copy them.
        let dependencies = std::iter::once(ResolverPackage::Package(name.clone())).chain(
            requirement
                .extras
                .iter()
                .map(|extra| ResolverPackage::Extra(name.clone(), extra.clone())),
        );
        let mut last: Option<ResolverPackage> = None;
        for dependency in dependencies {
            if let Some(previous) = last.replace(dependency) {
                edges.push(Edge {
                    dependency: previous,
                    range: range.clone(),
                    cause: cause.clone(),
                });
            }
        }
        if let Some(dependency) = last {
            edges.push(Edge {
                dependency,
                range,
                cause,
            });
        }
        if let Some(constraints) = self.constraints.get(name) {
            for pin in constraints {
                if !pin.requirement.evaluate_markers(&self.markers, &[]) {
                    continue;
                }
                if let Some(VersionOrUrl::VersionSpecifier(specifiers)) =
                    &pin.requirement.version_or_url
                {
                    edges.push(Edge {
                        dependency: ResolverPackage::Package(name.clone()),
                        range: specifiers_to_ranges(specifiers),
                        cause: Cause::Constraint((*pin).clone()),
                    });
                }
            }
        }
    }

    pub(super) fn root_edges(&self) -> Vec<Edge> {
        let mut edges = Vec::new();
        for requirement in &self.request.requirements {
            if !requirement.requirement.evaluate_markers(&self.markers, &[]) {
                continue;
            }
            self.requirement_edges(
                &requirement.requirement,
                Cause::Manifest(requirement.clone()),
                &mut edges,
            );
        }
        if let Some(requires_python) = &self.request.requires_python {
            edges.push(Edge {
                dependency: ResolverPackage::Virtual(VirtualPackage::Python),
                range: python_ranges(requires_python),
                cause: Cause::RootRequiresPython(requires_python.to_string()),
            });
        }
        if self.environment.toolkit.is_some() {
            edges.push(Edge {
                dependency: ResolverPackage::Virtual(VirtualPackage::CudaToolkit),
                range: Ranges::full(),
                cause: Cause::Toolkit,
            });
        }
        // Only a policy that ties the wheels to the toolkit makes the toolkit's runtime a
        // fact of the stack; otherwise the toolkit decides nothing about the wheels.
        if self.request.options.cuda_wheels == CudaWheelPolicy::Toolkit {
            edges.push(Edge {
                dependency: ResolverPackage::Virtual(VirtualPackage::CudaRuntime),
                range: Ranges::full(),
                cause: Cause::Runtime,
            });
        }
        edges
    }

    /// The driver floor of CUDA `major` under minor version compatibility, e.g. 13 → ≥ 580.65.06.
    pub(super) fn minor_version_edge(&self, major: u32) -> Option<Edge> {
        let rule = self.rules.runtimes.major(major)?;
        let driver = Version::from_str(&rule.driver.to_string()).ok()?;
        Some(Edge {
            dependency: ResolverPackage::Virtual(VirtualPackage::CudaDriver),
            range: Ranges::higher_than(driver),
            cause: Cause::Rule(RuleCause::MinorVersion(rule.clone())),
        })
    }

    pub(super) fn virtual_edges(&self, package: &VirtualPackage, version: &Version) -> Vec<Edge> {
        let mut edges = Vec::new();
        let Ok(cuda) = CudaVersion::from_str(&version.to_string()) else {
            return edges;
        };
        let driver_edge = |minimum: DriverMinimum, cause: fn(DriverMinimum) -> RuleCause| {
            Version::from_str(&minimum.driver.to_string())
                .ok()
                .map(|driver| Edge {
                    dependency: ResolverPackage::Virtual(VirtualPackage::CudaDriver),
                    range: Ranges::higher_than(driver),
                    cause: Cause::Rule(cause(minimum)),
                })
        };
        match package {
            VirtualPackage::CudaToolkit => {
                if let Some(requirement) = self.rules.drivers.minimum_for(&cuda) {
                    edges.extend(driver_edge(requirement.rule, RuleCause::Driver));
                }
                if let Some(support) = self.rules.arches.support_for(&cuda) {
                    for arch in &self.environment.gpu_archs {
                        let range = if support.supports(arch) {
                            Ranges::full()
                        } else {
                            // Every value but the node's: the toolkit cannot serve this GPU.
                            Version::from_str(&arch.compute_capability())
                                .map(|value| Ranges::singleton(value).complement())
                                .unwrap_or_else(|_| Ranges::full())
                        };
                        edges.push(Edge {
                            dependency: ResolverPackage::Virtual(VirtualPackage::GpuArch(*arch)),
                            range,
                            cause: Cause::Rule(RuleCause::Arch(support.clone())),
                        });
                    }
                }
            }
            VirtualPackage::CudaRuntime => {
                edges.extend(self.minor_version_edge(cuda.major()));
            }
            VirtualPackage::Python
            | VirtualPackage::Glibc
            | VirtualPackage::CudaDriver
            | VirtualPackage::GpuArch(_) => {}
        }
        edges
    }

    pub(super) fn release_edges(
        &self,
        name: &PackageName,
        extra: Option<&ExtraName>,
        release: &Release,
    ) -> Result<Vec<Edge>, Unavailable> {
        let mut edges = Vec::new();
        let version = &release.version;
        if let Some(extra) = extra {
            edges.push(Edge {
                dependency: ResolverPackage::Package(name.clone()),
                range: Ranges::singleton(version.clone()),
                cause: Cause::ExtraBase,
            });
            let extras = [extra.clone()];
            for requirement in &release.requires_dist {
                if requirement.evaluate_markers(&self.markers, &extras)
                    && !requirement.evaluate_markers(&self.markers, &[])
                {
                    self.requirement_edges(
                        requirement,
                        Cause::Metadata(requirement.clone()),
                        &mut edges,
                    );
                }
            }
            pin_self_references(name, version, &mut edges);
            return Ok(edges);
        }
        match self.best_file(name, release) {
            Ok(_) => {}
            Err((_, Some(glibc))) => {
                if let Ok(needed) = Version::from_str(&glibc.to_string()) {
                    edges.push(Edge {
                        dependency: ResolverPackage::Virtual(VirtualPackage::Glibc),
                        range: Ranges::higher_than(needed),
                        cause: Cause::WheelGlibc(glibc),
                    });
                }
            }
            Err((unavailable, None)) => return Err(unavailable),
        }
        if let Some(requires_python) = &release.requires_python {
            edges.push(Edge {
                dependency: ResolverPackage::Virtual(VirtualPackage::Python),
                range: python_lower_bounds(requires_python),
                cause: Cause::RequiresPython(requires_python.to_string()),
            });
        }
        for requirement in &release.requires_dist {
            if requirement.evaluate_markers(&self.markers, &[]) {
                self.requirement_edges(
                    requirement,
                    Cause::Metadata(requirement.clone()),
                    &mut edges,
                );
            }
        }
        let runtime_rules = self
            .rules
            .runtimes
            .rules_for(name, version)
            .map_err(Unavailable::NoRuntimeRule)?;
        for rule in runtime_rules {
            let cause = match &rule.kind {
                RuntimeKind::LocalLabel(label) => RuleCause::LocalLabel {
                    label: label.clone(),
                    runtime: rule.runtime.to_string(),
                    source: rule.source.clone(),
                    jit_source: rule.jit_source.clone(),
                },
                RuntimeKind::Family(pattern) => RuleCause::Family {
                    pattern: pattern.clone(),
                    runtime: rule.runtime.to_string(),
                    source: rule.source.clone(),
                },
            };
            // The driver is the hard limit of every wheel's runtime; the stack's runtime
            // binds the wheels only under a policy that asks for one major.
            if self.request.options.cuda_wheels != CudaWheelPolicy::Any {
                edges.push(Edge {
                    dependency: ResolverPackage::Virtual(VirtualPackage::CudaRuntime),
                    range: specifiers_to_ranges(&rule.runtime),
                    cause: Cause::Rule(cause),
                });
            }
            edges.extend(self.minor_version_edge(rule.major));
        }
        for pin in self.rules.abi.pins_for(name, version) {
            let range = match &pin.requires.version_or_url {
                Some(VersionOrUrl::VersionSpecifier(specifiers)) => {
                    specifiers_to_ranges(specifiers)
                }
                Some(VersionOrUrl::Url(_)) | None => Ranges::full(),
            };
            edges.push(Edge {
                dependency: ResolverPackage::Package(pin.requires.name.clone()),
                range,
                cause: Cause::Rule(RuleCause::AbiPin(Box::new(pin.clone()))),
            });
        }
        if let Some(lock) = self.rules.abi.lock_for(name) {
            let public = version.clone().without_local();
            edges.push(Edge {
                dependency: ResolverPackage::Package(lock.follows.clone()),
                range: Ranges::from_range_bounds(public.clone()..after_public(&public)),
                cause: Cause::Rule(RuleCause::VersionLock(lock.clone())),
            });
        }
        pin_self_references(name, version, &mut edges);
        Ok(edges)
    }
}

/// A release that requires its own project with extras, e.g. `dask 2026.8.0`'s
/// `dask[array,distributed]; extra == "complete"`, means itself: the edge holds only
/// `version`, as uv and pip read it (uv flattens such extras into the release's own
/// requirements). Left open, each of the project's older releases would be tried for
/// the extra, one conflict at a time, down to releases whose metadata needs a build.
fn pin_self_references(name: &PackageName, version: &Version, edges: &mut [Edge]) {
    for edge in edges {
        let same = match &edge.dependency {
            ResolverPackage::Package(dependency) | ResolverPackage::Extra(dependency, _) => {
                dependency == name
            }
            ResolverPackage::Root(_) | ResolverPackage::Virtual(_) => false,
        };
        if same {
            edge.range = edge.range.intersection(&Ranges::singleton(version.clone()));
        }
    }
}

/// The range `[version, next public)`, holding every local build of `version`.
fn after_public(version: &Version) -> Version {
    let specifier = pep440_rs::VersionSpecifier::equals_version(version.clone());
    let range = super::super::ranges::specifier_to_range(&specifier);
    range
        .bounding_range()
        .and_then(|(_, upper)| match upper {
            std::ops::Bound::Excluded(upper) | std::ops::Bound::Included(upper) => {
                Some(upper.clone())
            }
            std::ops::Bound::Unbounded => None,
        })
        .unwrap_or_else(|| version.clone())
}
