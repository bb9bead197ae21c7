//! Applying one planned step on a node: run its operations in order, stop at the
//! first failure with the command, its exit status and its output tail, then run the
//! step's verification.

use std::path::PathBuf;

use crate::facts::{NodeFacts, ProbeRequest, ProbeScope};
use crate::managed_block;
use crate::manifest::redact_text;
use crate::resolve::same_version;
use crate::steps::{Operation, Placement, Step, Verification};
use crate::transport::{
    CommandOutput, Expected, FileContent, NodeCommand, Stdin, Transport, WriteSpec, Written,
    download, mask,
};

use super::send::{held, index_file_url, local_copy};
use super::{ExecError, gather_facts};

/// How many lines of a failing command's output a report shows.
const TAIL_LINES: usize = 40;

/// What applying needs besides the step: the controller's download cache, where the
/// node keeps before-images, and the secret values to mask in every report.
#[derive(Debug, Clone, Default)]
pub struct ApplyContext {
    /// Where fetched files are kept on the controller, e.g. `~/.cache/cuda-upgrade/downloads`.
    pub cache_dir: PathBuf,
    /// Where the node keeps the previous content of rewritten files, e.g.
    /// [`crate::transport::BEFORE_IMAGES_DIR`]; `None` keeps none.
    pub before_images: Option<PathBuf>,
    /// Values shown as `***` wherever output is reported.
    pub secrets: Vec<String>,
}

impl ApplyContext {
    fn spec(&self, placement: Placement, path: &std::path::Path) -> WriteSpec {
        WriteSpec {
            before_images: self.before_images.clone(),
            ..placement.spec(path)
        }
    }
}

/// Why a step failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StepFailure {
    /// What was being done, e.g. `ldconfig` (secrets masked).
    pub operation: String,
    /// The exit status, when a command ran.
    pub status: Option<i32>,
    /// The end of its output, or what the verification found (secrets masked).
    pub detail: String,
}

/// The result of applying one step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StepOutcome {
    /// Nothing had to be done.
    Unchanged,
    /// Applied and verified.
    Applied,
    /// Failed at an operation or at verification.
    Failed(StepFailure),
}

/// Apply `step` (when it has operations) and verify it. The context's secrets are
/// masked in every text that leaves this function.
pub async fn apply_step(
    transport: &Transport,
    step: &Step,
    context: &ApplyContext,
) -> Result<StepOutcome, ExecError> {
    apply_step_writing(transport, step, context, None)
        .await
        .map(|applied| applied.outcome)
}

/// What applying a step did.
#[derive(Debug)]
pub struct Applied {
    /// Unchanged, applied and verified, or failed.
    pub outcome: StepOutcome,
    /// What its writes replaced (for the journal).
    pub written: Vec<Written>,
    /// The node's facts as its verification probed them after the change, asked as the
    /// `recheck` request of [`apply_step_writing`] says: what the next step's re-check
    /// would read. `None` when the verification probed nothing.
    pub facts: Option<NodeFacts>,
    /// What its operations settled on the controller, for the report and the journal,
    /// e.g. ``build requirements resolved on the controller: `setuptools==80.9.0` ``.
    pub notes: Vec<String>,
}

/// [`apply_step`], also returning what its writes replaced (for the journal). A
/// verification that probes the node asks for `recheck`'s facts too, and returns them.
pub async fn apply_step_writing(
    transport: &Transport,
    step: &Step,
    context: &ApplyContext,
    recheck: Option<&ProbeRequest>,
) -> Result<Applied, ExecError> {
    apply_and_verify(transport, step, context, recheck).await
}

async fn apply_and_verify(
    transport: &Transport,
    step: &Step,
    context: &ApplyContext,
    recheck: Option<&ProbeRequest>,
) -> Result<Applied, ExecError> {
    let secrets: Vec<&str> = context.secrets.iter().map(String::as_str).collect();
    let secrets = secrets.as_slice();
    let mut written = Vec::new();
    let mut notes = Vec::new();
    let done = |outcome, written, notes, facts| Applied {
        outcome,
        written,
        facts,
        notes,
    };
    // The files to send that the node holds already: one question for the whole step.
    let sent: Vec<(&std::path::Path, &crate::manifest::Sha256)> = step
        .operations
        .iter()
        .filter_map(|operation| match operation {
            Operation::FetchIndexFile { path, sha256, .. }
            | Operation::Transfer { path, sha256, .. } => Some((path.as_path(), sha256)),
            _ => None,
        })
        .collect();
    let mut held = held(transport, &sent).await?;
    // Then everything the node lacks in one write, before the step's commands run, with
    // the uploads and git bundles that come before its first command or block edit.
    let leading = step
        .operations
        .iter()
        .position(|operation| {
            matches!(
                operation,
                Operation::Run(_) | Operation::ReplaceBlock { .. } | Operation::RemoveBlock { .. }
            )
        })
        .unwrap_or(step.operations.len());
    let mut outgoing = Vec::new();
    let mut early = std::collections::HashSet::new();
    for (index, operation) in step.operations.iter().enumerate() {
        if let Some(file) = outgoing_file(operation, context, &held, index < leading).await? {
            outgoing.push(file);
            early.insert(index);
        }
    }
    let batch: Vec<(Stdin<'_>, &WriteSpec)> = outgoing
        .iter()
        .map(|(content, spec)| {
            let content = match content {
                Outgoing::File(local) => Stdin::File(local),
                Outgoing::Bytes(bytes) => Stdin::Bytes(bytes),
            };
            (content, spec)
        })
        .collect();
    let (sent, result) = transport.write_files(&batch).await;
    written.extend(sent);
    result?;
    held.extend(outgoing.into_iter().map(|(_, spec)| spec.path));
    for (index, operation) in step.operations.iter().enumerate() {
        if early.contains(&index) {
            continue;
        }
        if let Some(failure) = run_operation(
            transport,
            operation,
            context,
            secrets,
            &mut written,
            &mut notes,
        )
        .await?
        {
            return Ok(done(StepOutcome::Failed(failure), written, notes, None));
        }
    }
    if step.operations.is_empty() {
        return Ok(done(StepOutcome::Unchanged, written, notes, None));
    }
    let Some(verification) = &step.verification else {
        return Ok(done(StepOutcome::Applied, written, notes, None));
    };
    let (failure, facts) = verify_probing(transport, verification, secrets, recheck).await?;
    match failure {
        Some(failure) => Ok(done(StepOutcome::Failed(failure), written, notes, None)),
        None => Ok(done(StepOutcome::Applied, written, notes, facts)),
    }
}

/// A failed command as reported: the run's secrets and any credentials in URLs the
/// node printed (e.g. an index echoing `?token=…`) masked.
fn failure(operation: String, output: &CommandOutput, secrets: &[&str]) -> StepFailure {
    StepFailure {
        operation: redact_text(&mask(&operation, secrets)),
        status: output.status,
        detail: redact_text(&mask(&output.tail(TAIL_LINES), secrets)),
    }
}

async fn run_operation(
    transport: &Transport,
    operation: &Operation,
    context: &ApplyContext,
    secrets: &[&str],
    written: &mut Vec<Written>,
    notes: &mut Vec<String>,
) -> Result<Option<StepFailure>, ExecError> {
    match operation {
        Operation::Run(command) => {
            let output = transport.run(command, None).await?;
            Ok((!output.success()).then(|| {
                let mut failed = failure(command.display(), &output, secrets);
                // coreutils' `timeout` exits 124 when the bound ran out.
                if output.status == Some(124) {
                    failed.detail = format!(
                        "ran past its bound of {} s and was stopped with its process group\n{}",
                        transport.bound_of(command).as_secs(),
                        failed.detail
                    );
                }
                failed
            }))
        }
        Operation::Upload {
            path,
            placement,
            content,
        } => {
            written.push(
                transport
                    .write_file(Stdin::Bytes(content), &context.spec(*placement, path))
                    .await?,
            );
            Ok(None)
        }
        // Sent before the step's commands ([`outgoing_file`]).
        Operation::Transfer { .. } | Operation::FetchIndexFile { .. } => Ok(None),
        Operation::GitBundle {
            url,
            rev,
            path,
            build,
        } => {
            let bundle = download::git_bundle(url, rev, &context.cache_dir).await?;
            let placement = Placement::Staged { mode: 0o600 };
            written.push(
                transport
                    .write_file(Stdin::File(&bundle.path), &context.spec(placement, path))
                    .await?,
            );
            if let Some(build) = build {
                let spec =
                    |path: &std::path::Path| context.spec(Placement::Staged { mode: 0o644 }, path);
                let (sent, pins) = super::build_requirements::send(
                    transport,
                    &context.cache_dir,
                    &spec,
                    &bundle,
                    build,
                )
                .await?;
                written.extend(sent);
                if !pins.is_empty() {
                    let pins: Vec<String> = pins.iter().map(|pin| format!("`{pin}`")).collect();
                    notes.push(format!(
                        "build requirements resolved on the controller: {}",
                        pins.join(", ")
                    ));
                }
            }
            Ok(None)
        }
        Operation::ReplaceBlock {
            path,
            marker,
            block,
        } => {
            let (current, expected) = match transport.read_file(path).await? {
                FileContent::Absent => (Vec::new(), Expected::Absent),
                FileContent::Present(bytes) => {
                    let digest = hex::encode(<sha2::Sha256 as sha2::Digest>::digest(&bytes));
                    (bytes, Expected::Sha256(digest))
                }
            };
            let updated = managed_block::splice(&current, marker, block).map_err(|source| {
                ExecError::MalformedBlock {
                    host: transport.name().to_string(),
                    path: path.clone(),
                    source,
                }
            })?;
            let spec = WriteSpec {
                expected,
                ..context.spec(Placement::Public { mode: 0o644 }, path)
            };
            written.push(transport.write_file(Stdin::Bytes(&updated), &spec).await?);
            Ok(None)
        }
        Operation::RemoveBlock { path, marker } => {
            let FileContent::Present(current) = transport.read_file(path).await? else {
                return Ok(None);
            };
            let updated = managed_block::remove(&current, marker).map_err(|source| {
                ExecError::MalformedBlock {
                    host: transport.name().to_string(),
                    path: path.clone(),
                    source,
                }
            })?;
            if updated == current {
                return Ok(None);
            }
            let digest = hex::encode(<sha2::Sha256 as sha2::Digest>::digest(&current));
            let spec = WriteSpec {
                expected: Expected::Sha256(digest),
                ..context.spec(Placement::Public { mode: 0o644 }, path)
            };
            written.push(transport.write_file(Stdin::Bytes(&updated), &spec).await?);
            Ok(None)
        }
    }
}

/// What a step writes before its commands: a file of the controller (a download, a git
/// bundle) or bytes of the plan (an upload).
enum Outgoing<'a> {
    File(PathBuf),
    Bytes(&'a [u8]),
}

/// The controller's verified copy of a file `operation` sends and its place on the node,
/// unless the node holds it already (or the operation sends none); with `leading` (no
/// command or block edit comes before it), an upload's bytes and a git bundle without
/// build requirements too.
async fn outgoing_file<'a>(
    operation: &'a Operation,
    context: &ApplyContext,
    held: &std::collections::HashSet<PathBuf>,
    leading: bool,
) -> Result<Option<(Outgoing<'a>, WriteSpec)>, ExecError> {
    match operation {
        Operation::Upload {
            path,
            placement,
            content,
        } if leading => Ok(Some((
            Outgoing::Bytes(content),
            context.spec(*placement, path),
        ))),
        Operation::GitBundle {
            url,
            rev,
            path,
            build: None,
        } if leading => {
            let bundle = download::git_bundle(url, rev, &context.cache_dir).await?;
            let placement = Placement::Staged { mode: 0o600 };
            Ok(Some((
                Outgoing::File(bundle.path),
                context.spec(placement, path),
            )))
        }
        Operation::Transfer {
            url,
            sha256,
            path,
            mode,
        } if !held.contains(path) => {
            let local = download::fetch(url, sha256, &context.cache_dir).await?;
            Ok(Some((
                Outgoing::File(local),
                context.spec(Placement::Staged { mode: *mode }, path),
            )))
        }
        Operation::FetchIndexFile {
            index,
            index_url,
            project,
            file,
            sha256,
            path,
        } if !held.contains(path) => {
            let local = local_copy(file, sha256, &context.cache_dir, || {
                index_file_url(index, index_url, project, file)
            })
            .await?;
            Ok(Some((
                Outgoing::File(local),
                context.spec(Placement::Staged { mode: 0o644 }, path),
            )))
        }
        _ => Ok(None),
    }
}

/// The value the env check starts the interpreter with, to see that it wins.
const ENV_CHECK_PRESET: &str = "cuda-upgrade-preset-value";

/// Starts the interpreter twice, without the variables and with each set to
/// [`ENV_CHECK_PRESET`], and prints what each start saw.
const ENV_CHECK_PROGRAM: &str = r#"import json, os, subprocess, sys
names = sys.argv[1:]
show = "import json, os, sys\nprint(json.dumps({n: os.environ.get(n) for n in sys.argv[1:]}))"
def seen(extra):
    env = {k: v for k, v in os.environ.items() if k not in names}
    env.update(extra)
    out = subprocess.run([sys.executable, "-c", show] + names, env=env, stdout=subprocess.PIPE, check=True, universal_newlines=True).stdout
    return json.loads(out)
print(json.dumps({"clean": seen({}), "preset": seen({n: "cuda-upgrade-preset-value" for n in names})}))
"#;

/// [`verify`]; a verification that probes asks for `recheck`'s facts too (when given)
/// and returns them with its judgement.
async fn verify_probing(
    transport: &Transport,
    verification: &Verification,
    secrets: &[&str],
    recheck: Option<&ProbeRequest>,
) -> Result<(Option<StepFailure>, Option<NodeFacts>), ExecError> {
    match (verification, recheck) {
        (
            Verification::LibrariesResolve {
                sonames,
                directories,
            },
            Some(recheck),
        ) => {
            let request = widened(recheck, sonames, directories);
            let facts = gather_facts(transport, &request).await?;
            Ok((
                unresolved_libraries(&facts, sonames, directories),
                Some(facts),
            ))
        }
        (Verification::ToolkitVersion { prefix, version }, Some(recheck)) => {
            let facts = gather_facts(transport, &widened(recheck, &[], &[])).await?;
            Ok((toolkit_mismatch(&facts, prefix, version), Some(facts)))
        }
        // The environment's packages and source records, as the plan reads them: from the
        // probe of the same interpreter (where it could read it; else the installer's list).
        (
            Verification::PackagesMatch {
                python,
                installer,
                pip_check,
                ..
            }
            | Verification::SourceInstalled {
                python,
                installer,
                pip_check,
                ..
            },
            Some(recheck),
        ) if recheck.python.as_deref() == Some(python.as_path()) => {
            let facts = gather_facts(transport, &widened(recheck, &[], &[])).await?;
            let problem = match verification {
                Verification::PackagesMatch {
                    expected, absent, ..
                } => {
                    if facts.python.is_none() {
                        return Ok((verify(transport, verification, secrets).await?, None));
                    }
                    packages_differ(&facts, python, expected, absent)
                }
                Verification::SourceInstalled { package, .. } => unrecorded(&facts, package),
                _ => None,
            };
            if problem.is_some() {
                return Ok((problem, Some(facts)));
            }
            let checked = match pip_check {
                true => {
                    check_on(transport, installer, &python.display().to_string(), secrets).await?
                }
                false => None,
            };
            Ok((checked, Some(facts)))
        }
        _ => Ok((verify(transport, verification, secrets).await?, None)),
    }
}

/// What differs between the packages the probe of `python` read and the lock's.
fn packages_differ(
    facts: &NodeFacts,
    python: &std::path::Path,
    expected: &[(String, String)],
    absent: &[String],
) -> Option<StepFailure> {
    let found = facts
        .packages
        .iter()
        .filter_map(|package| {
            Some((
                normalize(package.name.as_ref()),
                package.version.as_ref()?.to_string(),
            ))
        })
        .collect();
    let problems = package_problems(&found, expected, absent);
    (!problems.is_empty()).then(|| StepFailure {
        operation: format!("the packages of `{}`", python.display()),
        status: None,
        detail: problems.join("\n"),
    })
}

/// What is wrong when no install record the probe read names the commit `package` was
/// installed from.
fn unrecorded(facts: &NodeFacts, package: &str) -> Option<StepFailure> {
    let recorded = facts
        .install_records
        .iter()
        .any(|record| record.package == package && !record.commit.is_empty());
    (!recorded).then(|| StepFailure {
        operation: format!(
            "the install record {}/{package}.json",
            crate::steps::source::RECORD_DIR
        ),
        status: None,
        detail: format!("no record names the commit `{package}` was installed from"),
    })
}

/// `recheck` with `libraries` and `paths` added (each once), between steps.
fn widened(recheck: &ProbeRequest, libraries: &[String], paths: &[PathBuf]) -> ProbeRequest {
    let mut request = ProbeRequest {
        scope: ProbeScope::Step,
        ..recheck.clone()
    };
    for library in libraries {
        if !request.libraries.contains(library) {
            request.libraries.push(library.clone());
        }
    }
    for path in paths {
        if !request.paths.contains(path) {
            request.paths.push(path.clone());
        }
    }
    request
}

/// What is wrong when `sonames` do not resolve into `directories` in `facts`.
fn unresolved_libraries(
    facts: &NodeFacts,
    sonames: &[String],
    directories: &[PathBuf],
) -> Option<StepFailure> {
    let unresolved = facts.ldconfig.unresolved(sonames, directories);
    (!unresolved.is_empty()).then(|| StepFailure {
        operation: "ldconfig -p".to_string(),
        status: None,
        detail: unresolved
            .iter()
            .map(|soname| {
                let found = facts.ldconfig.loaded_from(soname).map_or_else(
                    || "the loader does not find it".to_string(),
                    |found| format!("the loader loads it from `{}`", found.display()),
                );
                format!(
                    "`{soname}` does not resolve into {}: {found}",
                    directories
                        .iter()
                        .map(|d| format!("`{}`", d.display()))
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            })
            .collect::<Vec<_>>()
            .join("\n"),
    })
}

/// What is wrong when the toolkit in `prefix` is not `version` in `facts`, identified as
/// the plan identifies it (version.json, the apt meta package, a unique nvcc build).
fn toolkit_mismatch(
    facts: &NodeFacts,
    prefix: &std::path::Path,
    version: &crate::cuda::CudaVersion,
) -> Option<StepFailure> {
    crate::steps::toolkit::verify(facts, prefix, version)
        .err()
        .map(|detail| StepFailure {
            operation: format!("probe of the toolkit in {}", prefix.display()),
            status: None,
            detail,
        })
}

/// Run a step's verification; `Some` describes what is wrong.
pub async fn verify(
    transport: &Transport,
    verification: &Verification,
    secrets: &[&str],
) -> Result<Option<StepFailure>, ExecError> {
    match verification {
        Verification::LibrariesResolve {
            sonames,
            directories,
        } => {
            // The same facts and the same judgement as the plan's.
            let request = ProbeRequest {
                python: None,
                libraries: sonames.clone(),
                paths: directories.clone(),
                scope: ProbeScope::Step,
                ..ProbeRequest::default()
            };
            let facts = gather_facts(transport, &request).await?;
            Ok(unresolved_libraries(&facts, sonames, directories))
        }
        Verification::PythonRuns { python } => {
            let command = NodeCommand::new(python.display().to_string())
                .arg("-c")
                .arg("import sys; print(sys.prefix)");
            let output = transport.run(&command, None).await?;
            Ok((!output.success()).then(|| failure(command.display(), &output, secrets)))
        }
        Verification::PackagesMatch {
            python,
            installer,
            expected,
            absent,
            pip_check,
        } => {
            let python = python.display().to_string();
            let list = installer.list(&python);
            let output = transport.run(&list, None).await?;
            if !output.success() {
                return Ok(Some(failure(list.display(), &output, secrets)));
            }
            let listed: Vec<serde_json::Value> =
                serde_json::from_str(output.stdout_text().trim()).unwrap_or_default();
            let found: std::collections::BTreeMap<String, String> = listed
                .iter()
                .filter_map(|item| {
                    Some((
                        normalize(item.get("name")?.as_str()?),
                        item.get("version")?.as_str()?.to_string(),
                    ))
                })
                .collect();
            let problems = package_problems(&found, expected, absent);
            if !problems.is_empty() {
                return Ok(Some(StepFailure {
                    operation: list.display(),
                    status: output.status,
                    detail: problems.join("\n"),
                }));
            }
            if !pip_check {
                return Ok(None);
            }
            check_on(transport, installer, &python, secrets).await
        }
        Verification::SourceInstalled {
            python,
            package,
            installer,
            pip_check,
        } => {
            let record = format!("{}/{package}.json", crate::steps::source::RECORD_DIR);
            let command = NodeCommand::new(python.display().to_string())
                .arg("-c")
                .arg("import json, sys; print(json.load(open(sys.argv[1]))['commit'])")
                .arg(record);
            let output = transport.run(&command, None).await?;
            if !output.success() {
                return Ok(Some(failure(command.display(), &output, secrets)));
            }
            if !pip_check {
                return Ok(None);
            }
            check_on(transport, installer, &python.display().to_string(), secrets).await
        }
        Verification::ToolkitVersion { prefix, version } => {
            // The probe, without an interpreter.
            let request = ProbeRequest {
                scope: ProbeScope::Step,
                ..ProbeRequest::default()
            };
            let facts = gather_facts(transport, &request).await?;
            Ok(toolkit_mismatch(&facts, prefix, version))
        }
        Verification::EnvironmentVisible {
            python,
            variables,
            overrides,
        } => {
            let command = NodeCommand::new(python.display().to_string())
                .arg("-c")
                .arg(ENV_CHECK_PROGRAM)
                .args(variables.iter().map(|(name, _)| name.clone()));
            let output = transport.run(&command, None).await?;
            if !output.success() {
                return Ok(Some(failure(command.display(), &output, secrets)));
            }
            let seen: serde_json::Value =
                serde_json::from_str(output.stdout_text().trim()).unwrap_or_default();
            let value = |run: &str, name: &str| {
                seen.get(run)
                    .and_then(|values| values.get(name))
                    .and_then(|v| v.as_str())
                    .map(str::to_string)
            };
            let mut wrong: Vec<String> = Vec::new();
            for (name, wanted) in variables {
                if value("clean", name).as_deref() != Some(wanted.as_str()) {
                    wrong.push(format!("`{name}` is not the manifest's value"));
                }
                let preset = value("preset", name);
                if overrides.contains(name) {
                    if preset.as_deref() != Some(wanted.as_str()) {
                        wrong.push(format!(
                            "`{name}` (override) does not replace a value the process has"
                        ));
                    }
                } else if preset.as_deref() != Some(ENV_CHECK_PRESET) {
                    wrong.push(format!(
                        "`{name}` replaces a value the process was started with"
                    ));
                }
            }
            Ok((!wrong.is_empty()).then(|| StepFailure {
                operation: format!("a fresh `{}`", python.display()),
                status: output.status,
                detail: wrong.join("; "),
            }))
        }
    }
}

/// A package name as the installers compare them, e.g. `nvidia-cudnn-cu13` for
/// `nvidia_cudnn_cu13`.
fn normalize(name: &str) -> String {
    name.to_ascii_lowercase().replace(['_', '.'], "-")
}

/// What differs between the installed packages `found` (normalized name to version) and
/// the lock: each `expected` name and version, and none of the `absent` names.
fn package_problems(
    found: &std::collections::BTreeMap<String, String>,
    expected: &[(String, String)],
    absent: &[String],
) -> Vec<String> {
    let mut problems: Vec<String> = expected
        .iter()
        .filter(|(name, version)| {
            !found
                .get(&normalize(name))
                .is_some_and(|found| same_version(found, version))
        })
        .map(|(name, version)| match found.get(&normalize(name)) {
            Some(other) => format!("`{name}` is {other}, the lock says {version}"),
            None => format!("`{name}` is not installed (the lock says {version})"),
        })
        .collect();
    problems.extend(
        absent
            .iter()
            .filter(|name| found.contains_key(&normalize(name)))
            .map(|name| format!("`{name}` is still installed")),
    );
    problems
}

/// `pip check` (or uv's): every installed package's requirements are met.
async fn check_on(
    transport: &Transport,
    installer: &crate::steps::Installer,
    python: &str,
    secrets: &[&str],
) -> Result<Option<StepFailure>, ExecError> {
    let check = installer.check(python);
    let output = transport.run(&check, None).await?;
    Ok((!output.success()).then(|| failure(check.display(), &output, secrets)))
}

/// The file a step writes, for journals and the no-mutation checks.
pub fn written_paths(step: &Step) -> Vec<PathBuf> {
    step.operations
        .iter()
        .filter_map(|operation| match operation {
            Operation::Upload { path, .. }
            | Operation::ReplaceBlock { path, .. }
            | Operation::RemoveBlock { path, .. } => Some(path.clone()),
            Operation::Run(_)
            | Operation::Transfer { .. }
            | Operation::FetchIndexFile { .. }
            | Operation::GitBundle { .. } => None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The check after an install reads `pip list`'s versions: a release spelled
    /// otherwise than the lock spells it is the locked one; another release, or a build
    /// without the locked local label, is a problem.
    #[test]
    fn installed_versions_match_the_lock_by_pep_440() {
        let found: std::collections::BTreeMap<String, String> = [
            ("cffi", "2.0.0"),
            ("eggs", "1.0.0a1"),
            ("ham", "1.0-post0"),
            ("local", "1.0+UBUNTU-1"),
            ("torch", "2.9.1"),
        ]
        .into_iter()
        .map(|(name, version)| (name.to_string(), version.to_string()))
        .collect();
        let expected: Vec<(String, String)> = [
            ("cffi", "2"),
            ("eggs", "1.0alpha1"),
            ("ham", "1.0.post0"),
            ("local", "1.0+ubuntu.1"),
            ("torch", "2.9.1+cu130"),
        ]
        .into_iter()
        .map(|(name, version)| (name.to_string(), version.to_string()))
        .collect();
        assert_eq!(
            package_problems(&found, &expected, &[]),
            ["`torch` is 2.9.1, the lock says 2.9.1+cu130"]
        );
    }
}
