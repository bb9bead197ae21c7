//! The first manifest's text: a pure function of a node's facts and survey.
//!
//! Every value is written as the node has it (so a plan of the manifest on that node is
//! all no-op), strings as YAML double-quoted scalars (JSON string syntax, which YAML
//! reads unchanged), and each choice a person must make is a `# decide:` comment.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use super::{DirectUrl, Survey, SurveyDistribution};
use crate::cuda::GpuArch;
use crate::facts::{NodeFacts, PackageManager, PackageOrigin, Toolkit};
use crate::manifest::redact_url;
use crate::text::{is_unsafe_in_line, text_value};

/// Where the facts came from, for the header: `--local`, `--host node0` or `--facts F`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InitSource {
    /// This machine.
    Local,
    /// A host over SSH, e.g. `node0`.
    Host(String),
    /// Saved facts, e.g. `h200.facts.json`: no survey, so no dependency data.
    Facts(PathBuf),
}

impl std::fmt::Display for InitSource {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str(&self.short_name())
    }
}

impl InitSource {
    fn label(&self) -> String {
        match self {
            Self::Local => "this machine".to_string(),
            Self::Host(host) => format!("host `{}`", text_value(host)),
            Self::Facts(path) => {
                format!("the facts in `{}`", text_value(&path.display().to_string()))
            }
        }
    }

    fn short_name(&self) -> String {
        match self {
            Self::Local => "local".to_string(),
            Self::Host(host) => host.clone(),
            Self::Facts(path) => path
                .file_name()
                .and_then(|name| name.to_str())
                .and_then(|name| name.split('.').next())
                .unwrap_or("node")
                .to_string(),
        }
    }
}

/// The environment's own tools: never top-level packages of a stack.
const TOOLING: &[&str] = &["pip", "setuptools", "wheel"];

/// A YAML double-quoted scalar, e.g. `"/opt/ml-env/bin/python3"`: JSON string syntax,
/// with every character a YAML reader takes as a line break (U+0085, U+2028, U+2029) or
/// would refuse (other controls), and the bidirectional controls, escaped as `\uXXXX`.
fn quoted(text: &str) -> String {
    let json = serde_json::Value::String(text.to_string()).to_string();
    let mut out = String::with_capacity(json.len());
    for c in json.chars() {
        if is_unsafe_in_line(c) {
            let _ = write!(out, "\\u{:04x}", u32::from(c));
        } else {
            out.push(c);
        }
    }
    out
}

/// A value from the node inside a `#` comment: escaped so that it stays on its line.
fn comment(text: &str) -> String {
    text_value(text)
}

/// One package of the stack as the manifest lists it.
struct Listed {
    name: String,
    version: String,
    direct_url: Option<DirectUrl>,
}

/// The text of a first manifest for the node.
pub fn render(source: &InitSource, facts: &NodeFacts, survey: Option<&Survey>) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "# A first manifest, written by `upgrade init` from {} as it is.",
        source.label()
    );
    out.push_str(
        "# `upgrade plan` of it on the same node changes nothing. Lines marked `decide:` need a\n\
         # person; `upgrade validate` checks every edit.\n",
    );
    let mut skipped: Vec<String> = survey
        .map(|survey| survey.skipped.clone())
        .unwrap_or_default();
    let facts_listed = facts_packages(facts, survey, &mut skipped);
    if !skipped.is_empty() {
        out.push_str(
            "# decide: the node reported what does not parse as a name, version, URL or line of text; left out:\n",
        );
        for note in &skipped {
            let _ = writeln!(out, "#   - {}", comment(note));
        }
    }
    out.push_str("schema: 1\n");
    let block = survey.and_then(|survey| survey.managed_block.as_ref());
    match block.and_then(|block| block.manifest.as_deref()) {
        Some(name) => {
            let _ = writeln!(
                out,
                "name: {}  # the manifest that wrote the node's env block",
                quoted(name)
            );
        }
        None => {
            let _ = writeln!(
                out,
                "name: {}  # decide: a name for this stack",
                quoted(&format!("{}-as-is", source.short_name()))
            );
        }
    }
    if let Some(os) = facts.os.as_ref().and_then(|os| os.pretty_name.as_deref()) {
        let _ = writeln!(
            out,
            "description: {}",
            quoted(&format!("As found on {}.", text_value(os)))
        );
    }
    target(&mut out, facts);
    toolkit(&mut out, facts);
    let listed = packages_and_indexes(&mut out, facts, survey, facts_listed);
    constraints(&mut out, survey, &listed);
    ldconfig(&mut out, facts);
    env(&mut out, facts, survey);
    out.push_str(
        "# decide: a verification launch proves the stack (see manifests/README.md, `verify`):\n\
         # verify:\n\
         #   launch: /opt/ml-env/bin/python3 -m sglang.launch_server --model-path … --port 30000\n\
         #   log: /var/log/verify.log\n\
         #   ready: The server is fired up\n\
         #   fail: [Traceback]\n\
         #   timeout: 10m\n",
    );
    out
}

fn target(out: &mut String, facts: &NodeFacts) {
    out.push_str("target:\n");
    let python = facts
        .python
        .as_ref()
        .map(|python| python.executable.clone())
        .or_else(|| facts.probe.python.clone().filter(|path| path.is_absolute()));
    match python {
        Some(python) => {
            let _ = writeln!(out, "  python: {}", quoted(&python.display().to_string()));
            if facts.python.is_none() {
                out.push_str(
                    "  # decide: the node has no interpreter here yet; add `base_python` (e.g. \"/usr/bin/python3\") to create the environment\n",
                );
            }
        }
        None => out.push_str(
            "  python: \"/opt/ml-env/bin/python3\"  # decide: the node has no interpreter at the probed path\n",
        ),
    }
    if let Some(python) = &facts.python {
        if python.is_virtual_environment() {
            let _ = writeln!(
                out,
                "  # The environment's base: {} (give it as `base_python` to create the environment where it is missing).",
                comment(&python.base_prefix.display().to_string())
            );
        }
        let release = python.version.release();
        if let [major, minor, ..] = release {
            let _ = writeln!(out, "  python_version: \"{major}.{minor}\"");
        }
        if let Some(glibc) = python.glibc {
            let _ = writeln!(out, "  glibc: \"{glibc}\"");
        }
    }
    if let Some(driver) = &facts.driver {
        let _ = writeln!(out, "  driver: \"{}\"", driver.version);
    }
    let mut arches: Vec<GpuArch> = facts
        .gpus
        .iter()
        .filter_map(|gpu| gpu.compute_capability.as_ref())
        .filter_map(|capability| GpuArch::from_compute_capability(&capability.to_string()).ok())
        .collect();
    arches.sort_by_key(|arch| (arch.major(), arch.minor()));
    arches.dedup();
    if !arches.is_empty() {
        let names: Vec<String> = arches.iter().map(ToString::to_string).collect();
        let _ = writeln!(
            out,
            "  gpu_arch: [{}]  # decide: add the architectures of the other nodes this stack runs on",
            names.join(", ")
        );
    }
}

/// The meta package an apt toolkit is installed through, e.g. `cuda-toolkit-13-0`.
fn apt_package(toolkit: &Toolkit) -> Option<&str> {
    if toolkit.package_manager != Some(PackageManager::Dpkg) {
        return None;
    }
    let version = toolkit.version.as_ref()?;
    let line = format!("{}-{}", version.major(), version.minor());
    ["cuda-toolkit", "cuda", "cuda-compiler", "cuda-libraries"]
        .iter()
        .map(|stem| format!("{stem}-{line}"))
        .find_map(|wanted| {
            toolkit
                .packages
                .iter()
                .find(|package| package.installed && package.name == wanted)
                .map(|package| package.name.as_str())
        })
}

fn toolkit(out: &mut String, facts: &NodeFacts) {
    let toolkits = &facts.toolkits;
    let chosen = toolkits
        .default_toolkit()
        .or(match toolkits.installed.as_slice() {
            [only] => Some(only),
            _ => None,
        });
    for other in toolkits
        .installed
        .iter()
        .filter(|toolkit| Some(toolkit.prefix.as_path()) != chosen.map(|t| t.prefix.as_path()))
    {
        let _ = writeln!(
            out,
            "# Also installed: a CUDA toolkit in {} ({}); `keep_existing` keeps it.",
            comment(&other.prefix.display().to_string()),
            other
                .version
                .as_ref()
                .map_or("version unknown".to_string(), |v| format!("version {v}"))
        );
    }
    let Some(toolkit) = chosen else {
        if toolkits.installed.is_empty() {
            out.push_str(
                "# No CUDA toolkit is installed. decide: add a `toolkit` section to install one.\n",
            );
        }
        return;
    };
    let prefix = toolkit.prefix.display().to_string();
    let shown = comment(&prefix);
    let Some(version) = &toolkit.version else {
        let _ = writeln!(
            out,
            "# A CUDA toolkit is in {shown}, of a version the probe could not tell apart \
             (nvcc builds {}). decide: write its `toolkit` section by hand.",
            toolkit
                .nvcc_updates
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        );
        return;
    };
    let expected_prefix = format!("/usr/local/cuda-{}.{}", version.major(), version.minor());
    match apt_package(toolkit) {
        Some(package) if prefix == expected_prefix => {
            let _ = writeln!(
                out,
                "toolkit:  # installed from NVIDIA's apt packages ({})\n  version: \"{version}\"\n  prefix: {}\n  installer: apt\n  package: {}\n  keep_existing: true",
                comment(package),
                quoted(&prefix),
                quoted(package)
            );
        }
        _ => {
            let how = match toolkit.package_manager {
                Some(PackageManager::Rpm) => {
                    "from rpm packages (this tool does not install rpm packages)"
                }
                _ => "by NVIDIA's runfile (no package owns it)",
            };
            let _ = writeln!(
                out,
                "# The CUDA toolkit {version} is in {shown}, installed {how}.\n\
                 # decide: to pin it, uncomment and give the runfile's URL and sha256 (a runfile needs both):\n\
                 # toolkit:\n\
                 #   version: \"{version}\"\n\
                 #   prefix: {}\n\
                 #   installer: runfile\n\
                 #   source: {{url: \"https://…/cuda_{version}_…_linux.run\", sha256: \"<64 hex digits>\"}}\n\
                 #   keep_existing: true",
                quoted(&prefix)
            );
        }
    }
}

/// Without a survey (saved facts), every installed distribution the facts list, each
/// with where it came from; a URL that does not parse is left out, noted in `skipped`.
fn facts_packages(
    facts: &NodeFacts,
    survey: Option<&Survey>,
    skipped: &mut Vec<String>,
) -> Vec<Listed> {
    if survey.is_some() {
        return Vec::new();
    }
    facts
        .packages
        .iter()
        .filter(|package| !TOOLING.contains(&package.name.to_string().as_str()))
        .filter_map(|package| {
            let version = package.version.as_ref()?.to_string();
            let name = package.name.to_string();
            let direct_url = match &package.origin {
                PackageOrigin::Index => None,
                PackageOrigin::DirectUrl { url } | PackageOrigin::Editable { location: url } => {
                    let checked = super::parse::direct_url_text(url);
                    if let Err(reason) = &checked {
                        skipped.push(format!(
                            "the URL `{}` that `{name}` {version} was installed from: {reason}",
                            text_value(&redact_url(url))
                        ));
                    }
                    Some(DirectUrl {
                        url: checked.ok(),
                        commit: None,
                    })
                }
            };
            Some(Listed {
                name,
                version,
                direct_url,
            })
        })
        .collect()
}

/// Writes `indexes` and `packages` (the survey's top-level distributions, else
/// `facts_listed`); returns the names listed as packages.
fn packages_and_indexes(
    out: &mut String,
    facts: &NodeFacts,
    survey: Option<&Survey>,
    facts_listed: Vec<Listed>,
) -> Vec<String> {
    let mut listed: Vec<Listed> = Vec::new();
    let mut tooling: Vec<String> = Vec::new();
    let mut note = None;
    match survey {
        Some(survey) => {
            for dist in survey.top_level() {
                let name = dist.name.to_string();
                if TOOLING.contains(&name.as_str()) {
                    tooling.push(format!("{name} {}", dist.version));
                    continue;
                }
                listed.push(Listed {
                    name,
                    version: dist.version.to_string(),
                    direct_url: dist.direct_url.clone(),
                });
            }
        }
        None if !facts.packages.is_empty() => {
            note = Some(
                "  # decide: saved facts carry no dependency data, so every installed distribution is\n\
                   # listed; keep the ones you ask for and move the rest to `constraints`.\n",
            );
        }
        None => {}
    }
    listed.extend(facts_listed);
    indexes(out, survey);
    if listed.is_empty() && tooling.is_empty() {
        out.push_str(
            "# The environment has no packages yet. decide: list the stack under `packages`.\n",
        );
        return Vec::new();
    }
    let start = out.len();
    out.push_str("packages:\n");
    if let Some(note) = note {
        out.push_str(note);
    }
    if !tooling.is_empty() {
        let _ = writeln!(
            out,
            "  # Not listed: the environment's own tools ({}).",
            tooling.join(", ")
        );
    }
    let mut names = Vec::new();
    let mut any = false;
    for package in &listed {
        if let Some(direct_url) = &package.direct_url {
            direct_package(out, package, direct_url);
            continue;
        }
        let any_listed_before = any;
        any = true;
        let label = package
            .version
            .split_once('+')
            .map(|(_, label)| label)
            .filter(|label| label.starts_with("cu") || label.starts_with("rocm"));
        match label {
            Some(label) => {
                // No index the node names is known to serve a `+cu130` build (pip
                // records none; they often come from `--find-links` or a one-off
                // `--index-url`): a person says which, and until then nothing moves it.
                any = any_listed_before;
                let _ = writeln!(
                    out,
                    "  # decide: a `+{label}` build; add the index that serves it (`explicit: true`) and\n  # {}: {{version: {}, index: NAME}}",
                    package.name,
                    quoted(&format!("=={}", package.version))
                );
            }
            None => {
                names.push(package.name.clone());
                let _ = writeln!(
                    out,
                    "  {}: {}",
                    package.name,
                    quoted(&format!("=={}", package.version))
                );
            }
        }
    }
    if !any {
        // A mapping with only comments is `null`: keep `packages` a mapping, and the
        // comments below it.
        out.replace_range(start..start + "packages:\n".len(), "packages: {}\n");
    }
    names
}

fn direct_package(out: &mut String, package: &Listed, direct_url: &DirectUrl) {
    let url = direct_url.url.as_deref().map(redact_url);
    let _ = writeln!(
        out,
        "  # {} {} was installed from {} (direct_url.json).",
        package.name,
        package.version,
        url.as_deref()
            .map_or_else(|| "a URL that does not parse".to_string(), quoted)
    );
    match (&url, &direct_url.commit) {
        (Some(url), Some(commit)) => {
            let _ = writeln!(
                out,
                "  # decide: build it from source on the node (after checking the URL):\n  # {}: {{git: {}, rev: {}, version: {}}}",
                package.name,
                quoted(url.strip_prefix("git+").unwrap_or(url)),
                quoted(commit),
                quoted(&package.version)
            );
        }
        _ => {
            let _ = writeln!(
                out,
                "  # decide: a local build or file: publish it to an index, or list it as a git source."
            );
        }
    }
}

fn indexes(out: &mut String, survey: Option<&Survey>) {
    out.push_str("indexes:\n");
    let pip = survey.map(|survey| &survey.pip);
    match pip.and_then(|pip| pip.index_url.as_deref()) {
        Some(url) => {
            let redacted = redact_url(url);
            let _ = writeln!(
                out,
                "  - name: node-default  # the node's pip `index-url`{}\n    url: {}",
                if redacted == url {
                    ""
                } else {
                    "; decide: its credentials are masked here, give them through pip's configuration"
                },
                quoted(&redacted)
            );
        }
        None => out.push_str(
            "  - name: default  # no url: the index pip is configured with on the controller\n",
        ),
    }
    for (number, url) in pip
        .map(|pip| pip.extra_index_urls.as_slice())
        .unwrap_or_default()
        .iter()
        .enumerate()
    {
        let _ = writeln!(
            out,
            "  - name: extra-{}  # the node's pip `extra-index-url`; decide: which packages come from it (`index: extra-{}`)\n    url: {}",
            number + 1,
            number + 1,
            quoted(&redact_url(url))
        );
    }
}

fn constraints(out: &mut String, survey: Option<&Survey>, listed: &[String]) {
    let pinned: Vec<(String, String)> = match survey {
        Some(survey) => survey
            .distributions
            .iter()
            .filter(|dist| dist.direct_url.is_none())
            .map(|dist: &SurveyDistribution| (dist.name.to_string(), dist.version.to_string()))
            .filter(|(name, _)| !listed.contains(name) && !TOOLING.contains(&name.as_str()))
            .collect(),
        None => Vec::new(),
    };
    if pinned.is_empty() {
        return;
    }
    out.push_str(
        "# Every other installed distribution, at its installed version: the resolution keeps\n\
         # them. decide: drop the ones you let move.\n\
         constraints:\n",
    );
    for (name, version) in pinned {
        let _ = writeln!(
            out,
            "  - {{requirement: {}, reason: \"installed when upgrade init ran\"}}",
            quoted(&format!("{name}=={version}"))
        );
    }
}

fn ldconfig(out: &mut String, facts: &NodeFacts) {
    let files: Vec<&Path> = facts
        .ldconfig
        .conf_files
        .iter()
        .filter(|file| file.lines.iter().any(|line| line.contains("cuda")))
        .map(|file| file.path.as_path())
        .collect();
    if files.is_empty() {
        return;
    }
    let names: Vec<String> = files
        .iter()
        .map(|path| comment(&path.display().to_string()))
        .collect();
    let _ = writeln!(
        out,
        "# The dynamic linker finds CUDA libraries through {}.\n\
         # decide: to own one of these files, add `ldconfig: {{file, paths, expect}}`.",
        names.join(", ")
    );
}

fn env(out: &mut String, facts: &NodeFacts, survey: Option<&Survey>) {
    match survey.and_then(|survey| survey.managed_block.as_ref()) {
        Some(block) if !block.variables.is_empty() || !block.secrets.is_empty() => {
            out.push_str("env:  # the node's managed env block\n");
            for (name, value) in &block.variables {
                let _ = writeln!(out, "  {name}: {}", quoted(value));
            }
            for name in &block.secrets {
                let _ = writeln!(
                    out,
                    "  {name}: {{from_env: {name}}}  # decide: a secret: the controller must have `{name}` set at apply time"
                );
            }
        }
        _ => {
            let has_block = facts
                .sitecustomize
                .as_ref()
                .is_some_and(|site| site.managed_block.is_some());
            if has_block && survey.is_none() {
                out.push_str(
                    "# decide: the node has a managed env block, which saved facts do not carry;\n\
                     # run `upgrade init --local` or `--host` on the node to read its variables.\n",
                );
            }
        }
    }
}
