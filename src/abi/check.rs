//! Matching: for each shared object, the undefined symbols that another distribution
//! of the environment is meant to provide, looked up in what that distribution exports,
//! honouring symbol versions; the ones not found, each with its nearest exported
//! overloads.
//!
//! A symbol is meant to come from another distribution when its required version names
//! a library of that distribution (`foo@LIBX_1` from `libx.so.1`), when its C++
//! namespace belongs to a known provider (`c10::`, `at::`, `torch::`, `caffe2::` →
//! torch), or when a library the object loads (`NEEDED`, through `RUNPATH`/`$ORIGIN`)
//! exports the same function with other parameters. Weak symbols, the interpreter's
//! (`Py*`, `_Py*`), and those versioned by the C and C++ runtimes (`GLIBC_*`,
//! `GLIBCXX_*`, `CXXABI_*`, `GCC_*`) or by any library outside the environment are
//! never reported.

use std::collections::{HashMap, HashSet, VecDeque};

use super::demangle::{self, Signature};
use super::elf::Import;
use super::ownership::{canonical_name, file_name, normalize, parent};
use super::{Environment, Object};

/// Namespaces whose symbols a known distribution provides.
const PROVIDERS: &[(&str, &str)] = &[
    ("c10", "torch"),
    ("at", "torch"),
    ("torch", "torch"),
    ("caffe2", "torch"),
];

/// Version prefixes of the C and C++ runtimes, always the system's.
const SYSTEM_VERSIONS: &[&str] = &["GLIBC_", "GLIBCXX_", "CXXABI_", "GCC_"];

/// How many exported overloads a finding shows.
const NEAREST: usize = 3;

/// An exported symbol close to a missing one, e.g. the `unsigned int` overload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Nearest {
    /// The exporting object.
    pub object: usize,
    /// Its mangled name.
    pub symbol: String,
    /// Its demangled name.
    pub demangled: String,
    /// The version it is defined at, if any.
    pub version: Option<String>,
    /// How many parameters differ (0 for the same name at another version).
    pub distance: usize,
    /// e.g. `parameter 4: \`int\` wanted, \`unsigned int\` exported`.
    pub differences: Vec<String>,
}

/// An undefined symbol its provider does not export.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Missing {
    /// The object that needs it.
    pub object: usize,
    /// What it needs.
    pub import: Import,
    /// Its demangled name (the mangled one for C).
    pub demangled: String,
    /// The distribution meant to provide it.
    pub provider: usize,
    /// The provider's objects that were searched.
    pub searched: Vec<usize>,
    /// The nearest exports, nearest first.
    pub nearest: Vec<Nearest>,
}

/// What the check found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Outcome {
    /// Objects with something to check: they load another distribution's libraries or
    /// need symbols of a known provider's namespace.
    pub objects_checked: usize,
    /// Undefined symbols looked up in another distribution.
    pub imports_checked: usize,
    /// The missing ones.
    pub missing: Vec<Missing>,
}

/// Exports of one object by name: the versions each name is defined at.
struct Exports<'a> {
    by_name: HashMap<&'a str, Vec<Option<&'a str>>>,
    versioned: bool,
}

impl<'a> Exports<'a> {
    fn new(object: &'a Object) -> Self {
        let mut by_name: HashMap<&str, Vec<Option<&str>>> =
            HashMap::with_capacity(object.info.exports.len());
        let mut versioned = false;
        for export in &object.info.exports {
            versioned |= export.version.is_some();
            by_name
                .entry(export.name.as_str())
                .or_default()
                .push(export.version.as_deref());
        }
        Self { by_name, versioned }
    }

    /// Whether this object satisfies `import`: the same name at the required version,
    /// or unversioned where this object defines no versions.
    fn satisfies(&self, import: &Import) -> bool {
        let Some(versions) = self.by_name.get(import.name.as_str()) else {
            return false;
        };
        match &import.version {
            None => true,
            Some(wanted) => !self.versioned || versions.contains(&Some(wanted.as_str())),
        }
    }
}

struct Index<'a> {
    environment: &'a Environment,
    by_path: HashMap<&'a str, usize>,
    by_name: HashMap<&'a str, Vec<usize>>,
}

impl<'a> Index<'a> {
    fn new(environment: &'a Environment) -> Self {
        let mut by_path = HashMap::new();
        let mut by_name: HashMap<&str, Vec<usize>> = HashMap::new();
        for (index, object) in environment.objects.iter().enumerate() {
            by_path.insert(object.path.as_str(), index);
            by_name
                .entry(file_name(&object.path))
                .or_default()
                .push(index);
            if let Some(soname) = &object.info.soname
                && soname != file_name(&object.path)
            {
                by_name.entry(soname.as_str()).or_default().push(index);
            }
        }
        Self {
            environment,
            by_path,
            by_name,
        }
    }

    /// The environment's object a `NEEDED` entry of `from` loads: through its
    /// `RUNPATH` (with `$ORIGIN`), else any object of that name or SONAME, its own
    /// distribution's first.
    fn resolve(&self, from: usize, needed: &str) -> Option<usize> {
        let object = &self.environment.objects[from];
        let origin = parent(&object.path);
        for entry in &object.info.runpath {
            let directory = entry
                .replace("${ORIGIN}", origin)
                .replace("$ORIGIN", origin);
            if let Some(found) = self
                .by_path
                .get(normalize(&format!("{directory}/{needed}")).as_str())
            {
                return Some(*found);
            }
        }
        let candidates = self.by_name.get(file_name(needed))?;
        candidates
            .iter()
            .find(|candidate| self.environment.objects[**candidate].dist == object.dist)
            .or_else(|| candidates.first())
            .copied()
    }

    /// Everything `from` loads from the environment, breadth first, without itself.
    fn closure(&self, from: usize) -> Vec<usize> {
        let mut seen = HashSet::from([from]);
        let mut queue = VecDeque::from([from]);
        let mut order = Vec::new();
        while let Some(next) = queue.pop_front() {
            for needed in &self.environment.objects[next].info.needed {
                if let Some(found) = self.resolve(next, needed)
                    && seen.insert(found)
                {
                    order.push(found);
                    queue.push_back(found);
                }
            }
        }
        order
    }
}

fn interpreter(name: &str) -> bool {
    name.starts_with("Py") || name.starts_with("_Py")
}

fn system_version(version: &str) -> bool {
    SYSTEM_VERSIONS
        .iter()
        .any(|prefix| version.starts_with(prefix))
}

fn standard_library(stem: &str) -> bool {
    ["_ZSt", "_ZNSt", "_ZNKSt", "_ZN9__gnu_cxx", "_ZNK9__gnu_cxx"]
        .iter()
        .any(|prefix| stem.starts_with(prefix))
}

/// The exports of each object by stem, built when first needed.
#[derive(Default)]
struct Stems<'a> {
    built: HashMap<usize, HashMap<&'a str, Vec<usize>>>,
}

impl<'a> Stems<'a> {
    fn of(&mut self, environment: &'a Environment, object: usize) -> &HashMap<&'a str, Vec<usize>> {
        self.built.entry(object).or_insert_with(|| {
            let mut stems: HashMap<&str, Vec<usize>> = HashMap::new();
            for (index, export) in environment.objects[object].info.exports.iter().enumerate() {
                if let Some(stem) = demangle::stem(&export.name) {
                    stems.entry(stem).or_default().push(index);
                }
            }
            stems
        })
    }
}

fn differences(wanted: &Signature, exported: &Signature) -> Vec<String> {
    let mut out = Vec::new();
    if wanted.name != exported.name {
        out.push(format!(
            "name: `{}` wanted, `{}` exported",
            wanted.name, exported.name
        ));
    }
    if wanted.params.len() == exported.params.len() {
        for (index, (left, right)) in wanted.params.iter().zip(&exported.params).enumerate() {
            if left != right {
                out.push(format!(
                    "parameter {}: `{left}` wanted, `{right}` exported",
                    index + 1
                ));
            }
        }
    } else {
        out.push(format!(
            "{} parameters wanted, {} exported",
            wanted.params.len(),
            exported.params.len()
        ));
    }
    if wanted.suffix != exported.suffix {
        out.push(format!(
            "qualifiers: `{}` wanted, `{}` exported",
            wanted.suffix.trim(),
            exported.suffix.trim()
        ));
    }
    out
}

/// The exports of `objects` nearest to `import`: the same name at other versions, then
/// the overloads of the same function, fewest differing parameters first.
fn nearest<'a>(
    environment: &'a Environment,
    stems: &mut Stems<'a>,
    objects: &[usize],
    import: &Import,
    demangled: &str,
) -> Vec<Nearest> {
    let mut found = Vec::new();
    let wanted = demangle::signature(demangled);
    let stem = demangle::stem(&import.name);
    for &object in objects {
        let exports = &environment.objects[object].info.exports;
        for export in exports.iter().filter(|export| export.name == import.name) {
            found.push(Nearest {
                object,
                symbol: export.name.clone(),
                demangled: demangled.to_string(),
                version: export.version.clone(),
                distance: 0,
                differences: vec![format!(
                    "version: `{}` wanted, `{}` exported",
                    import.version.as_deref().unwrap_or("none"),
                    export.version.as_deref().unwrap_or("none")
                )],
            });
        }
        let Some(stem) = stem else { continue };
        let Some(indexes) = stems.of(environment, object).get(stem) else {
            continue;
        };
        for &index in indexes {
            let export = &exports[index];
            if export.name == import.name {
                continue;
            }
            let shown = demangle::display(&export.name);
            let (distance, differences) = match (&wanted, demangle::signature(&shown)) {
                (Some(wanted), Some(exported)) => (
                    demangle::distance(&wanted.params, &exported.params)
                        + usize::from(wanted.name != exported.name) * 100
                        + usize::from(wanted.suffix != exported.suffix),
                    differences(wanted, &exported),
                ),
                _ => (1000, Vec::new()),
            };
            found.push(Nearest {
                object,
                symbol: export.name.clone(),
                demangled: shown,
                version: export.version.clone(),
                distance,
                differences,
            });
        }
    }
    found.sort_by(|a, b| {
        (a.distance, &a.demangled, a.object).cmp(&(b.distance, &b.demangled, b.object))
    });
    found.dedup_by(|a, b| a.symbol == b.symbol && a.version == b.version);
    found.truncate(NEAREST);
    found
}

/// Check every object of the environment; see the module's documentation.
pub fn check(environment: &Environment) -> Outcome {
    let index = Index::new(environment);
    let objects = &environment.objects;
    let dist_named = |name: &str| {
        environment
            .dists
            .iter()
            .position(|dist| canonical_name(&dist.name) == name)
    };
    let providers: Vec<(&str, usize)> = PROVIDERS
        .iter()
        .filter_map(|(namespace, dist)| Some((*namespace, dist_named(dist)?)))
        .collect();
    let mut by_dist: Vec<Vec<usize>> = vec![Vec::new(); environment.dists.len()];
    for (index, object) in objects.iter().enumerate() {
        if let Some(list) = by_dist.get_mut(object.dist) {
            list.push(index);
        }
    }
    let objects_of = |dist: usize| -> &[usize] { by_dist.get(dist).map_or(&[], Vec::as_slice) };
    // Which objects to check, and what each loads.
    let plans: Vec<(usize, Vec<usize>)> = (0..objects.len())
        .filter_map(|object| {
            let closure = index.closure(object);
            let dist = objects[object].dist;
            let loads_other = closure.iter().any(|other| objects[*other].dist != dist);
            let provided = || {
                objects[object].info.imports.iter().any(|import| {
                    demangle::namespace(&import.name).is_some_and(|namespace| {
                        providers
                            .iter()
                            .any(|(known, provider)| *known == namespace && *provider != dist)
                    })
                })
            };
            (loads_other || provided()).then_some((object, closure))
        })
        .collect();
    // The exports of every object some checked object may bind to.
    let mut wanted: HashSet<usize> = plans
        .iter()
        .flat_map(|(_, closure)| closure.iter().copied())
        .collect();
    for (_, provider) in &providers {
        wanted.extend(objects_of(*provider).iter().copied());
    }
    let mut wanted: Vec<usize> = wanted.into_iter().collect();
    wanted.sort_unstable();
    let built =
        super::tree::parallel_map(wanted, |object| (object, Exports::new(&objects[object])));
    let exports: HashMap<usize, Exports<'_>> = built.into_iter().collect();
    let mut stems = Stems::default();
    let mut outcome = Outcome {
        objects_checked: plans.len(),
        ..Outcome::default()
    };
    for (object, closure) in &plans {
        let dist = objects[*object].dist;
        for import in &objects[*object].info.imports {
            if interpreter(&import.name) || import.version.as_deref().is_some_and(system_version) {
                continue;
            }
            // A version required from a library: the library must be the environment's.
            let version_provider = match &import.version_file {
                Some(file) => {
                    let found = closure.iter().copied().find(|candidate| {
                        let candidate = &objects[*candidate];
                        candidate.info.soname.as_deref() == Some(file.as_str())
                            || file_name(&candidate.path) == file
                    });
                    if found.is_none() {
                        continue;
                    }
                    found
                }
                None => None,
            };
            let namespace_provider = demangle::namespace(&import.name).and_then(|namespace| {
                providers
                    .iter()
                    .find(|(known, provider)| *known == namespace && *provider != dist)
                    .map(|(_, provider)| *provider)
            });
            let mut searched: Vec<usize> = closure.clone();
            if let Some(provider) = namespace_provider {
                for other in objects_of(provider) {
                    if !searched.contains(other) {
                        searched.push(*other);
                    }
                }
            }
            let satisfied = searched.iter().any(|candidate| {
                exports
                    .get(candidate)
                    .is_some_and(|exports| exports.satisfies(import))
            });
            let expected = match (version_provider, namespace_provider) {
                (Some(provider), _) => {
                    let provider_dist = objects[provider].dist;
                    (provider_dist != dist).then(|| (provider_dist, vec![provider]))
                }
                (None, Some(provider)) => Some((
                    provider,
                    searched
                        .iter()
                        .copied()
                        .filter(|candidate| objects[*candidate].dist == provider)
                        .collect(),
                )),
                (None, None) => None,
            };
            if satisfied {
                if expected.is_some() || closure.iter().any(|other| objects[*other].dist != dist) {
                    outcome.imports_checked += 1;
                }
                continue;
            }
            let expected = match expected {
                Some(expected) => Some(expected),
                None => {
                    // An overload of the same function in a library of another distribution.
                    let Some(stem) =
                        demangle::stem(&import.name).filter(|stem| !standard_library(stem))
                    else {
                        continue;
                    };
                    let wanted_name = demangle::demangle(&import.name)
                        .and_then(|shown| demangle::signature(&shown))
                        .map(|signature| signature.name);
                    closure
                        .iter()
                        .copied()
                        .filter(|candidate| objects[*candidate].dist != dist)
                        .find(|candidate| {
                            stems
                                .of(environment, *candidate)
                                .get(stem)
                                .is_some_and(|found| {
                                    found.iter().any(|export| {
                                        let shown = demangle::display(
                                            &objects[*candidate].info.exports[*export].name,
                                        );
                                        demangle::signature(&shown).map(|signature| signature.name)
                                            == wanted_name
                                    })
                                })
                        })
                        .map(|candidate| (objects[candidate].dist, vec![candidate]))
                }
            };
            let Some((provider, searched)) = expected else {
                continue;
            };
            outcome.imports_checked += 1;
            let demangled = demangle::display(&import.name);
            let nearest = nearest(environment, &mut stems, &searched, import, &demangled);
            outcome.missing.push(Missing {
                object: *object,
                import: import.clone(),
                demangled,
                provider,
                searched,
                nearest,
            });
        }
    }
    outcome
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::elf::{ElfInfo, Export};
    use crate::abi::{Dist, Object};

    fn import(name: &str, version: Option<(&str, &str)>) -> Import {
        Import {
            name: name.to_string(),
            version: version.map(|(v, _)| v.to_string()),
            version_file: version.map(|(_, f)| f.to_string()),
        }
    }

    fn export(name: &str, version: Option<&str>) -> Export {
        Export {
            name: name.to_string(),
            version: version.map(String::from),
        }
    }

    /// torch's `libc10.so` and `libx.so.1` of `libx`, and `ext.so` of `ext` loading both.
    fn environment(imports: Vec<Import>, torch: Vec<Export>, libx: Vec<Export>) -> Environment {
        let object = |path: &str, dist: usize, info: ElfInfo| Object {
            path: format!("/site/{path}"),
            shown: path.to_string(),
            dist,
            info,
        };
        Environment {
            roots: vec!["/site".into()],
            dists: ["torch", "libx", "ext"]
                .iter()
                .map(|name| Dist {
                    name: (*name).to_string(),
                    version: "1.0".into(),
                })
                .collect(),
            objects: vec![
                object(
                    "torch/lib/libc10.so",
                    0,
                    ElfInfo {
                        soname: Some("libc10.so".into()),
                        exports: torch,
                        ..ElfInfo::default()
                    },
                ),
                object(
                    "libx/libx.so.1",
                    1,
                    ElfInfo {
                        soname: Some("libx.so.1".into()),
                        exports: libx,
                        ..ElfInfo::default()
                    },
                ),
                object(
                    "ext/ext.so",
                    2,
                    ElfInfo {
                        needed: vec!["libc10.so".into(), "libx.so.1".into(), "libc.so.6".into()],
                        imports,
                        ..ElfInfo::default()
                    },
                ),
            ],
            skipped: Vec::new(),
        }
    }

    #[test]
    fn runtime_interpreter_and_outside_versions_are_not_reported() {
        let outcome = check(&environment(
            vec![
                import("memcpy", Some(("GLIBC_2.14", "libc.so.6"))),
                import(
                    "_ZNSt6thread6_StateD2Ev",
                    Some(("GLIBCXX_3.4.22", "libstdc++.so.6")),
                ),
                import("__cxa_begin_catch", Some(("CXXABI_1.3", "libstdc++.so.6"))),
                import("_Unwind_Resume", Some(("GCC_3.0", "libgcc_s.so.1"))),
                import("PyLong_FromLong", None),
                import("_Py_Dealloc", None),
                // A version from a library outside the environment: the system's.
                import("cudaMalloc", Some(("libcudart.so.13", "libcudart.so.13"))),
                // An unversioned C symbol nobody in the environment defines: the system's.
                import("dlopen", None),
            ],
            Vec::new(),
            Vec::new(),
        ));
        assert_eq!(outcome.missing, Vec::new());
        assert_eq!(outcome.objects_checked, 1);
    }

    #[test]
    fn versions_are_honoured() {
        let libx = vec![export("x_func", Some("LIBX_2"))];
        let wanted = |version| vec![import("x_func", Some((version, "libx.so.1")))];
        assert!(
            check(&environment(wanted("LIBX_2"), Vec::new(), libx.clone()))
                .missing
                .is_empty()
        );
        let outcome = check(&environment(wanted("LIBX_1"), Vec::new(), libx.clone()));
        assert_eq!(outcome.missing.len(), 1);
        assert_eq!(outcome.missing[0].provider, 1);
        assert_eq!(
            outcome.missing[0].nearest[0].version.as_deref(),
            Some("LIBX_2")
        );
        // Unversioned needs are met by any version; a provider without versions meets any.
        assert!(
            check(&environment(vec![import("x_func", None)], Vec::new(), libx))
                .missing
                .is_empty()
        );
        let plain = vec![export("x_func", None)];
        assert!(
            check(&environment(wanted("LIBX_1"), Vec::new(), plain))
                .missing
                .is_empty()
        );
    }

    #[test]
    fn a_torch_namespace_symbol_is_torchs_to_provide_and_shows_its_overloads() {
        let wanted = "_ZN3c104cuda29c10_cuda_check_implementationEiPKcS2_ib";
        let torch = vec![
            export(
                "_ZN3c104cuda29c10_cuda_check_implementationEiPKcS2_jb",
                None,
            ),
            export("_ZN3c104cuda29c10_cuda_check_implementationEv", None),
            export("_ZN3c104cuda9other_oneEi", None),
        ];
        let outcome = check(&environment(
            vec![import(wanted, None)],
            torch.clone(),
            Vec::new(),
        ));
        assert_eq!(outcome.missing.len(), 1);
        let nearest: Vec<&str> = outcome.missing[0]
            .nearest
            .iter()
            .map(|nearest| nearest.demangled.as_str())
            .collect();
        assert_eq!(
            nearest,
            vec![
                "c10::cuda::c10_cuda_check_implementation(int, char const*, char const*, unsigned int, bool)",
                "c10::cuda::c10_cuda_check_implementation()",
            ]
        );
        // Provided: nothing to report.
        let mut provided = torch;
        provided.push(export(wanted, None));
        assert!(
            check(&environment(
                vec![import(wanted, None)],
                provided,
                Vec::new()
            ))
            .missing
            .is_empty()
        );
    }

    #[test]
    fn an_overload_in_a_loaded_library_of_another_package_reveals_a_break_without_a_rule() {
        let libx = vec![export("_ZN3lib4workEj", None)];
        let outcome = check(&environment(
            vec![import("_ZN3lib4workEi", None)],
            Vec::new(),
            libx,
        ));
        assert_eq!(outcome.missing.len(), 1);
        assert_eq!(outcome.missing[0].provider, 1);
        assert_eq!(
            outcome.missing[0].nearest[0].demangled,
            "lib::work(unsigned int)"
        );
        // std:: is the C++ runtime's, never another package's.
        let libx = vec![export("_ZNSt6vectorIiSaIiEE9push_backERKi", None)];
        let outcome = check(&environment(
            vec![import("_ZNSt6vectorIiSaIiEE9push_backEOi", None)],
            Vec::new(),
            libx,
        ));
        assert!(outcome.missing.is_empty());
    }
}
