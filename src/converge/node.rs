//! One node, start to end, under the node's lock (a second apply is refused, naming the
//! holder): facts, lock (or a saved plan's, refused when the node changed), plan, each step re-checked against fresh facts right before it runs,
//! applied and verified, then the ABI check of the environment's native extensions
//! (a missing symbol stops the node with the report), then the verification launch. The result is a typed
//! [`NodeOutcome`]; a failing step is an outcome, not an error.

use std::path::{Path, PathBuf};
use std::time::Instant;

use serde::Serialize;

use crate::exec::benchmark::{self as bench, BenchmarkResult, Reading, Verdict};
use crate::exec::environment;
use crate::exec::journal::{
    self, BenchmarkPhase, JournalBenchmark, JournalEntry, JournalEvent, JournalStep, WrittenFile,
};
use crate::exec::launch::{LaunchOutcome, LaunchSpec, PID_FILE, launch};
use crate::exec::node_lock::{LockHolder, NodeLock};
use crate::exec::{ApplyContext, Reporter, StepFailure, StepOutcome, apply_step_writing};
use crate::facts::NodeFacts;
use crate::plan::NodePlan;
use crate::resolve::Lock;
use crate::steps::{Action, Step, StepKind};
use crate::transport::Transport;

use super::drain::{Drain, DrainRecord, RollbackRecord, Rollout};
use super::{ConvergeError, Prepared, Saved};

/// One step's result, e.g. `env` `applied`.
#[derive(Debug, Clone, Serialize)]
pub struct StepRecord {
    /// e.g. `ldconfig`.
    pub kind: String,
    /// What the plan said it would do.
    pub action: Action,
    /// `no-op`, `applied`, `checked` (the ABI check passed) or `failed`.
    pub outcome: &'static str,
    /// Why, as the plan said it.
    pub reason: String,
    /// The failing command (secrets masked).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// Its exit status.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<i32>,
    /// The end of its output, or what the verification found (secrets masked).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output: Option<String>,
}

/// How a node ended, e.g. `node0` converged in 8.2 s with 15 round trips.
#[derive(Debug, Clone, Serialize)]
pub struct NodeOutcome {
    /// e.g. `node0` or `local`.
    pub node: String,
    /// Every step converged and the verification (when run) was ready.
    pub ok: bool,
    /// The steps in plan order, up to the first failure.
    pub steps: Vec<StepRecord>,
    /// The verification launch, when it ran.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub verification: Option<LaunchOutcome>,
    /// The manifest's benchmark, when the node was changed: its baseline, its figure
    /// after the verification and the verdict.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub benchmark: Option<BenchmarkResult>,
    /// Where the installed lock came from where it tells something, e.g. `lock:
    /// manifests/x.lock.json (fresh)`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lock: Option<String>,
    /// Commands run on the node.
    pub round_trips: u64,
    /// From the first probe to the end.
    pub seconds: f64,
    /// Its drain, the rollback of a failure, its production service.
    #[serde(flatten)]
    pub rollout: Rollout,
}

/// What one node's apply is given besides the manifest and the transport.
#[derive(Clone)]
pub struct ApplyOptions<'a> {
    /// A saved plan to replay (its lock), refused when the node's facts changed.
    /// `None`: the run's lock ([`super::lock`]: the lock file or a resolution).
    pub saved: Option<Saved<'a>>,
    /// The file the saved plan was read from, for the refusal.
    pub plan_path: &'a Path,
    /// The command line that records digests the lock lacks (for blocked pip steps).
    pub hash_command: &'a str,
    /// Run the verification launch at the end.
    pub verify: bool,
    /// The download cache, the before-images directory and the secrets to mask.
    pub context: &'a ApplyContext,
    /// Who takes the node's lock for this apply.
    pub holder: LockHolder,
    /// Remove any lock on the node before taking it (`--break-lock`).
    pub break_lock: bool,
    /// Who downloads the locked files (`--fetch`) and what installs them
    /// (`--installer`).
    pub delivery: crate::steps::Delivery,
    /// Asked with the plan before anything changes (`apply` on a terminal); `false`
    /// stops the node unchanged. `None`: no question (`--yes`).
    pub confirm: Option<&'a (dyn Fn(&NodePlan) -> bool + Send + Sync)>,
    /// Takes the node out of service before its first change and puts it back once it
    /// is verified (`--drain`). With one, a node whose plan changes nothing is left
    /// alone: neither drained nor launched. `None`: the node stays in service.
    pub drain: Option<&'a dyn Drain>,
    /// Undo a failed node's run from its journal, as `upgrade rollback` does, before it
    /// is left out of service (`--rollback-on-failure`).
    pub rollback_on_failure: bool,
}

fn record(step: &Step, outcome: &'static str, failure: Option<StepFailure>) -> StepRecord {
    StepRecord {
        kind: step.kind.to_string(),
        action: step.action,
        outcome,
        reason: step.reason.clone(),
        command: failure.as_ref().map(|f| f.operation.clone()),
        status: failure.as_ref().and_then(|f| f.status),
        output: failure.map(|f| f.detail),
    }
}

/// `step` with `notes` added to its reason, e.g. `…; build requirements resolved on the
/// controller: \`setuptools==80.9.0\``.
fn with_notes(mut step: Step, notes: &[String]) -> Step {
    for note in notes {
        step.reason.push_str("; ");
        step.reason.push_str(note);
    }
    step
}

/// The ABI check of the target interpreter's environment as a step record: `checked`
/// with the counts, or `failed` with the report (or why the environment could not be
/// read) as its output.
pub async fn abi_check_step(transport: &Transport, python: &Path) -> StepRecord {
    let record = |outcome, reason: String, output| StepRecord {
        kind: "abi-check".to_string(),
        action: Action::NoOp,
        outcome,
        reason,
        command: None,
        status: None,
        output,
    };
    match crate::abi::node::report(transport, python).await {
        Ok((report, _)) => {
            let summary = format!(
                "{} shared objects of {} packages, {} symbols looked up across packages, {} missing",
                report.objects,
                report.packages,
                report.imports_checked,
                report.missing.len()
            );
            if report.ok {
                record("checked", summary, None)
            } else {
                record("failed", summary, Some(report.text(transport.name())))
            }
        }
        Err(error) => record(
            "failed",
            "the environment's shared objects could not be read".to_string(),
            Some(error.to_string()),
        ),
    }
}

/// Converge one node: see the module's documentation. The node's lock is taken only
/// when there is something to do (a step to apply or a verification to launch), so a
/// converged node costs one round trip; it is given back however the node ends, and a
/// lock left by a dropped connection stays.
pub async fn converge_node(
    transport: &Transport,
    prepared: &Prepared,
    options: &ApplyOptions<'_>,
    reporter: &dyn Reporter,
) -> Result<NodeOutcome, ConvergeError> {
    let started = Instant::now();
    let facts = super::facts(transport, prepared).await?;
    let probed = FirstProbe {
        facts,
        started,
        read: Instant::now(),
    };
    converge_probed(transport, prepared, probed, options, reporter).await
}

/// How long a probe's facts stand for the first step's re-check, when no other apply
/// changed the node meanwhile: past this (a fleet's node waiting for its batch or a
/// slot, a slow resolution), the node is probed again once it is locked.
const PROBE_FRESH: std::time::Duration = std::time::Duration::from_secs(5);

/// A node's first probe: its facts, when the node's run started (before it connected)
/// and when the facts were read.
pub struct FirstProbe {
    /// What the probe read.
    pub facts: crate::facts::NodeFacts,
    /// When the node's run started.
    pub started: Instant,
    /// When the probe answered.
    pub read: Instant,
}

/// [`converge_node`] once the node's facts are known (a fleet probes a node, then converges it).
pub async fn converge_probed(
    transport: &Transport,
    prepared: &Prepared,
    probed: FirstProbe,
    options: &ApplyOptions<'_>,
    reporter: &dyn Reporter,
) -> Result<NodeOutcome, ConvergeError> {
    let FirstProbe {
        facts,
        started,
        read,
    } = probed;
    let node = transport.name().to_string();
    let (lock, origin): (Lock, Option<String>) = match options.saved {
        Some(saved) => {
            saved.check(&facts, &node, options.plan_path)?;
            (saved.lock().clone(), None)
        }
        None => {
            let (lock, origin) = super::lock_with_origin(prepared, &facts, &node)?;
            (lock, origin.note())
        }
    };
    let urls = super::index_urls(prepared)?;
    let plan = super::plan_for(
        prepared,
        &node,
        &facts,
        &lock,
        &urls,
        options.hash_command,
        &options.delivery,
    )?;
    if let Some(step) = plan.blocked().first() {
        return Err(ConvergeError::Blocked {
            node: node.clone(),
            step: step.kind.to_string(),
            reason: step.blocked.clone().unwrap_or_default(),
        });
    }
    // A node in service is launched only when it is being changed (and so drained).
    let launches = options.verify
        && plan.verify.is_some()
        && (options.drain.is_none() || !plan.is_converged());
    // An apply that was cut off left its run open in the journal: this one closes it
    // (a start and an end) even when nothing is left to change.
    let closes_open_run = facts.open_journal_run.is_some();
    if plan.is_converged() && !launches && !closes_open_run {
        let steps = plan
            .steps
            .iter()
            .map(|step| record(step, "no-op", None))
            .collect();
        return Ok(NodeOutcome {
            node,
            ok: true,
            steps,
            verification: None,
            benchmark: None,
            lock: origin,
            round_trips: transport.round_trips(),
            seconds: started.elapsed().as_secs_f64(),
            rollout: Rollout::default(),
        });
    }
    if let Some(confirm) = options.confirm
        && !plan.is_converged()
    {
        reporter.done();
        if !confirm(&plan) {
            return Err(ConvergeError::Declined { node });
        }
    }
    let node_lock = NodeLock::acquire(transport, &options.holder, options.break_lock).await?;
    let drain = options.drain.filter(|_| !plan.is_converged());
    // The probe still holds for the first step when nothing came between: no prompt,
    // no drain, no wait, and no other apply changed the node before this one took the
    // lock (each change is journaled, so the journal ends as the probe read it).
    let first_current = options.confirm.is_none()
        && drain.is_none()
        && read.elapsed() <= PROBE_FRESH
        && node_lock.journal_tail() == facts.journal_tail.as_deref();
    let run = Run {
        transport,
        prepared,
        options,
        reporter,
        started,
        urls: &urls,
        first: &facts,
        first_current,
    };
    let outcome = match drain {
        Some(drain) => run.drained(drain, &plan, lock, closes_open_run).await,
        None => run.execute_and_undo(&plan, lock, closes_open_run).await,
    };
    let released = node_lock.release(transport).await;
    let mut outcome = outcome?;
    released?;
    outcome.round_trips = transport.round_trips();
    outcome.seconds = started.elapsed().as_secs_f64();
    outcome.lock = origin;
    Ok(outcome)
}

/// The first line of a failed node's cause, for a drain reason, e.g. `step pip failed`.
fn failure_reason(outcome: &NodeOutcome) -> String {
    if let Some(step) = outcome.steps.iter().find(|step| step.outcome == "failed") {
        return format!("step {} failed", step.kind);
    }
    if let Some(benchmark) = &outcome.benchmark
        && matches!(benchmark.verdict, Verdict::Regressed | Verdict::Failed)
    {
        return format!("benchmark {}", benchmark.verdict);
    }
    if outcome
        .rollout
        .service
        .as_ref()
        .is_some_and(|service| !service.up)
    {
        return "the service did not come up".to_string();
    }
    match &outcome.verification {
        Some(LaunchOutcome::Failed { .. }) => "verification failed".to_string(),
        Some(LaunchOutcome::Refused { .. }) => "verification refused".to_string(),
        _ => "failed".to_string(),
    }
}

/// One node's apply once its plan is known and its lock is held.
struct Run<'a> {
    transport: &'a Transport,
    prepared: &'a Prepared,
    options: &'a ApplyOptions<'a>,
    reporter: &'a dyn Reporter,
    started: Instant,
    urls: &'a std::collections::BTreeMap<String, String>,
    /// The run's first probe: the GPUs the re-checks keep.
    first: &'a crate::facts::NodeFacts,
    /// The first probe is the first step's re-check (nothing could change the node
    /// between it and the lock).
    first_current: bool,
}

impl Run<'_> {
    /// A journal entry of this run.
    fn entry(&self, event: JournalEvent) -> JournalEntry {
        let holder = &self.options.holder;
        JournalEntry {
            run: format!("{}-{}", holder.started, holder.pid),
            at: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |elapsed| elapsed.as_secs()),
            event,
            manifest: self.prepared.manifest.name.clone(),
            manifest_sha256: self.prepared.sha256.to_string(),
            holder: format!("{} on {}", holder.user, holder.controller),
            step: None,
            written: Vec::new(),
            ok: None,
            environment: None,
            undoes: None,
            benchmark: None,
        }
    }

    /// Journal one applied or failed step with what it wrote.
    async fn journal_step(
        &self,
        step: &Step,
        outcome: &'static str,
        detail: String,
        written: &[crate::transport::Written],
    ) -> Result<(), ConvergeError> {
        let entry = JournalEntry {
            step: Some(JournalStep {
                kind: step.kind.to_string(),
                subject: step.subject.clone(),
                outcome: outcome.to_string(),
                detail,
            }),
            written: written.iter().map(WrittenFile::from).collect(),
            ..self.entry(JournalEvent::Step)
        };
        journal::append(self.transport, &entry)
            .await
            .map_err(ConvergeError::from)
    }

    /// The run's id, e.g. `1796241671-4242`.
    fn id(&self) -> String {
        let holder = &self.options.holder;
        format!("{}-{}", holder.started, holder.pid)
    }

    /// [`Run::execute`], then, for a failed node with `--rollback-on-failure`, the undo
    /// of this run from the journal (under the lock this apply holds).
    async fn execute_and_undo(
        &self,
        plan: &NodePlan,
        lock: Lock,
        closes_open_run: bool,
    ) -> Result<NodeOutcome, ConvergeError> {
        let mut outcome = self.execute(plan, lock, closes_open_run).await?;
        self.start_service(&mut outcome).await?;
        // A node stopped before its first step (its baseline benchmark failed) has
        // nothing of this run to undo.
        if !outcome.ok && self.options.rollback_on_failure && !outcome.steps.is_empty() {
            let node = self.transport.name();
            self.reporter.step(&format!(
                "{node}: rollback — undoing this run from the journal"
            ));
            let run = self.id();
            let undone =
                super::rollback::undo_held(self.transport, &run, &self.options.holder).await;
            self.reporter.done();
            outcome.rollout.rollback = Some(match undone {
                Ok(undone) => RollbackRecord {
                    run,
                    ok: undone.ok,
                    outcome: Some(undone),
                    error: None,
                },
                Err(error) => RollbackRecord {
                    run,
                    ok: false,
                    outcome: None,
                    error: Some(crate::text::error_chain(&error)),
                },
            });
        }
        Ok(outcome)
    }

    /// Start the production service again (the manifest's `service`) once a good run
    /// changed the node or stopped its verification server; a service that is not up
    /// within its bound fails the node.
    async fn start_service(&self, outcome: &mut NodeOutcome) -> Result<(), ConvergeError> {
        let Some(service) = &self.prepared.manifest.service else {
            return Ok(());
        };
        let changed = outcome.steps.iter().any(|step| step.outcome == "applied");
        if !outcome.ok || !(changed || outcome.verification.is_some()) {
            return Ok(());
        }
        let node = self.transport.name();
        self.reporter.step(&format!(
            "{node}: service — starting {} again",
            crate::exec::service::describe(service)
        ));
        let record = crate::exec::service::start(
            self.transport,
            service,
            &self.prepared.manifest.target.python,
        )
        .await?;
        self.reporter.done();
        if !record.up {
            outcome.ok = false;
        }
        outcome.rollout.service = Some(record);
        Ok(())
    }

    /// [`Run::execute_and_undo`] with the node out of service: taken out before the
    /// first change, put back once verified (and its service is up), left out with the
    /// failure as its reason otherwise. A node that could not be taken out is not changed.
    async fn drained(
        &self,
        drain: &dyn Drain,
        plan: &NodePlan,
        lock: Lock,
        closes_open_run: bool,
    ) -> Result<NodeOutcome, ConvergeError> {
        let node = self.transport.name().to_string();
        let how = drain.describe();
        self.reporter
            .step(&format!("{node}: drain — taking it out of service ({how})"));
        let taken = drain.take_out(self.transport).await;
        self.reporter.done();
        let mut record = DrainRecord {
            how: how.clone(),
            state: "drained",
            detail: Vec::new(),
        };
        match taken {
            Ok(step) => record.detail.push(step.detail),
            Err(source) => {
                // Whatever the integration got to stays: the node is left out, named.
                let reason = format!("could not be drained: {source}");
                let _ = drain.keep_out(self.transport, &reason).await;
                return Err(ConvergeError::Drain { node, how, source });
            }
        }
        let result = self.execute_and_undo(plan, lock, closes_open_run).await;
        let mut outcome = match result {
            Ok(outcome) => outcome,
            Err(error) => {
                let reason = crate::text::error_chain(&error);
                let reason = reason.lines().next().unwrap_or("failed");
                let _ = drain.keep_out(self.transport, reason).await;
                return Err(error);
            }
        };
        if outcome.ok {
            self.reporter.step(&format!(
                "{node}: resume — putting it back in service ({how})"
            ));
            let back = drain.put_back(self.transport).await;
            self.reporter.done();
            match back {
                Ok(step) => {
                    if step.in_service {
                        record.state = "resumed";
                    }
                    record.detail.push(step.detail);
                }
                Err(error) => {
                    outcome.ok = false;
                    record
                        .detail
                        .push(format!("could not be put back in service: {error}"));
                }
            }
        } else {
            let reason = failure_reason(&outcome);
            match drain.keep_out(self.transport, &reason).await {
                Ok(step) => record.detail.push(step.detail),
                Err(error) => record
                    .detail
                    .push(format!("the reason could not be recorded: {error}")),
            }
        }
        outcome.rollout.drain = Some(record);
        Ok(outcome)
    }

    /// Run the steps and the launch; a run that changes something, or that closes a run
    /// an interrupted apply left open, is journaled from its first change (a start
    /// entry) to its end (a launch alone leaves no entry, so a converged node's files
    /// stay as they are).
    async fn execute(
        &self,
        plan: &NodePlan,
        lock: Lock,
        closes_open_run: bool,
    ) -> Result<NodeOutcome, ConvergeError> {
        let mut journaled = false;
        if closes_open_run {
            self.journal_start(&mut journaled).await?;
        }
        // The workload as the node runs it now, before the first change; a node that
        // will not change runs none.
        let benchmark = self
            .prepared
            .manifest
            .benchmark
            .as_ref()
            .filter(|_| !plan.is_converged());
        let baseline = match benchmark {
            Some(benchmark) => {
                self.journal_start(&mut journaled).await?;
                let reading = self.benchmark(benchmark, "baseline").await?;
                self.journal_benchmark(benchmark, BenchmarkPhase::Baseline, &reading, None)
                    .await?;
                Some((benchmark, reading))
            }
            None => None,
        };
        let outcome = match &baseline {
            Some((benchmark, reading @ Reading::Failed { .. })) => NodeOutcome {
                node: self.transport.name().to_string(),
                ok: false,
                steps: Vec::new(),
                verification: None,
                benchmark: Some(bench::result(benchmark, reading.clone(), None)),
                lock: None,
                round_trips: self.transport.round_trips(),
                seconds: self.started.elapsed().as_secs_f64(),
                rollout: Rollout::default(),
            },
            _ => self.steps_and_launch(plan, lock, &mut journaled).await?,
        };
        let outcome = match baseline {
            Some((benchmark, baseline @ Reading::Figure { .. })) => {
                self.benchmark_after(benchmark, baseline, outcome).await?
            }
            _ => outcome,
        };
        if journaled {
            let end = JournalEntry {
                ok: Some(outcome.ok),
                ..self.entry(JournalEvent::End)
            };
            journal::append(self.transport, &end).await?;
        }
        Ok(outcome)
    }

    /// Keep the environment's packages before the run's first change to them, for a
    /// rollback (an interpreter that cannot list them yet keeps nothing); with `--fetch
    /// controller`, the wheels of those `lock` replaces too ([`super::keep`]).
    async fn keep_environment(&self, facts: &NodeFacts, lock: &Lock) -> Result<(), ConvergeError> {
        let Some(images) = &self.options.context.before_images else {
            return Ok(());
        };
        let urls = self
            .urls
            .values()
            .map(|url| crate::manifest::redact_url(url))
            .collect();
        let python = &self.prepared.manifest.target.python;
        // `facts` are this step's re-check, just taken: the packages as they are now.
        let Some(before) = environment::freeze_lines(facts) else {
            return Ok(());
        };
        let Ok(mut image) =
            environment::capture(self.transport, python, &before, images, urls).await
        else {
            return Ok(());
        };
        if self.options.delivery.fetch == crate::steps::FetchMode::Controller {
            let tags = facts
                .python
                .as_ref()
                .map_or(&[][..], |python| &python.tags[..]);
            let keep_unlocked = self.prepared.manifest.target.keep_unlocked_packages;
            let replaced = super::keep::replaced(&before, lock, keep_unlocked);
            let kept = super::keep::keep(
                self.transport,
                &self.prepared.shared.pages,
                &replaced,
                tags,
                self.urls,
                &self.options.context.cache_dir,
            )
            .await;
            image.wheels = Some(PathBuf::from(super::keep::KEPT_WHEELS_DIR));
            image.not_kept = kept.not_kept;
        }
        let entry = JournalEntry {
            environment: Some(image),
            ..self.entry(JournalEvent::Environment)
        };
        journal::append(self.transport, &entry).await?;
        Ok(())
    }

    /// Run the manifest's benchmark once (`when`: `baseline` or `after`, for progress).
    async fn benchmark(
        &self,
        benchmark: &crate::manifest::Benchmark,
        when: &str,
    ) -> Result<Reading, ConvergeError> {
        let node = self.transport.name();
        self.reporter.step(&format!(
            "{node}: benchmark — {} {when} (`{}`)",
            benchmark.name,
            crate::shell::join(&benchmark.command)
        ));
        let reading = bench::run(self.transport, benchmark, &self.options.context.secrets).await;
        self.reporter.done();
        Ok(reading?)
    }

    /// Journal one run of the benchmark.
    async fn journal_benchmark(
        &self,
        benchmark: &crate::manifest::Benchmark,
        phase: BenchmarkPhase,
        reading: &Reading,
        result: Option<&BenchmarkResult>,
    ) -> Result<(), ConvergeError> {
        let entry = JournalEntry {
            benchmark: Some(JournalBenchmark {
                phase,
                name: benchmark.name.clone(),
                unit: benchmark.unit.clone(),
                reading: reading.clone(),
                verdict: result.map(|result| result.verdict),
                cause: result.and_then(|result| result.cause.clone()).or_else(|| {
                    let when = match phase {
                        BenchmarkPhase::Baseline => "baseline",
                        BenchmarkPhase::After => "after",
                    };
                    bench::failure_cause(benchmark, when, reading)
                }),
            }),
            ..self.entry(JournalEvent::Benchmark)
        };
        journal::append(self.transport, &entry)
            .await
            .map_err(ConvergeError::from)
    }

    /// The benchmark again once the steps and the verification passed, compared with
    /// `baseline`: a figure worse beyond the tolerance, or a run that fails, fails the
    /// node. A node that failed before keeps its baseline alone (`not run`).
    async fn benchmark_after(
        &self,
        benchmark: &crate::manifest::Benchmark,
        baseline: Reading,
        mut outcome: NodeOutcome,
    ) -> Result<NodeOutcome, ConvergeError> {
        if !outcome.ok {
            outcome.benchmark = Some(bench::result(benchmark, baseline, None));
            return Ok(outcome);
        }
        let after = self.benchmark(benchmark, "after").await?;
        let result = bench::result(benchmark, baseline, Some(after.clone()));
        self.journal_benchmark(benchmark, BenchmarkPhase::After, &after, Some(&result))
            .await?;
        if result.verdict != Verdict::Passed {
            outcome.ok = false;
        }
        outcome.benchmark = Some(result);
        Ok(outcome)
    }

    /// Journal the run's start before its first change.
    async fn journal_start(&self, journaled: &mut bool) -> Result<(), ConvergeError> {
        if !*journaled {
            journal::append(self.transport, &self.entry(JournalEvent::Start)).await?;
            *journaled = true;
        }
        Ok(())
    }

    /// Re-check and apply each step of `plan`, then launch the verification.
    async fn steps_and_launch(
        &self,
        plan: &NodePlan,
        mut lock: Lock,
        journaled: &mut bool,
    ) -> Result<NodeOutcome, ConvergeError> {
        let Run {
            transport,
            prepared,
            options,
            reporter,
            started,
            urls,
            first,
            first_current,
        } = *self;
        let node = transport.name().to_string();
        let finish = |ok, steps, verification| NodeOutcome {
            node: node.clone(),
            ok,
            steps,
            verification,
            benchmark: None,
            lock: None,
            round_trips: transport.round_trips(),
            seconds: started.elapsed().as_secs_f64(),
            rollout: Rollout::default(),
        };
        let mut steps = Vec::new();
        let mut environment_kept = false;
        let recheck = super::recheck_request(prepared);
        // What the last step's verification probed after its change: the next step's
        // re-check, without probing again.
        let mut verified: Option<crate::facts::NodeFacts> = first_current.then(|| first.clone());
        for planned in &plan.steps {
            if planned.action == Action::NoOp {
                steps.push(record(planned, "no-op", None));
                continue;
            }
            reporter.step(&format!("{node}: {} — {}", planned.kind, planned.reason));
            // Re-check against fresh facts: the step may have been done meanwhile.
            let fresh = match verified.take() {
                Some(facts) => super::with_gpus_of(facts, first),
                None => super::facts_again(transport, prepared, first).await?,
            };
            let replanned = super::plan_for(
                prepared,
                &node,
                &fresh,
                &lock,
                urls,
                options.hash_command,
                &options.delivery,
            )?;
            let step = replanned
                .steps
                .into_iter()
                .find(|step| step.kind == planned.kind && step.subject == planned.subject)
                .unwrap_or_else(|| planned.clone());
            if step.action == Action::NoOp {
                steps.push(record(&step, "no-op", None));
                // Nothing changed: the facts hold for the next step too.
                verified = Some(fresh);
                continue;
            }
            // Planned anew (e.g. against an interpreter the python-env step just created),
            // a step can turn out blocked: stop the node before it changes anything more.
            if let Some(reason) = &step.blocked {
                return Err(ConvergeError::Blocked {
                    node: node.clone(),
                    step: step.kind.to_string(),
                    reason: reason.clone(),
                });
            }
            self.journal_start(journaled).await?;
            if matches!(step.kind, StepKind::PipPins | StepKind::SourceInstall) && !environment_kept
            {
                self.keep_environment(&fresh, &lock).await?;
                environment_kept = true;
            }
            let applied =
                apply_step_writing(transport, &step, options.context, Some(&recheck)).await?;
            let written = applied.written;
            verified = applied.facts;
            // What the step settled on the controller (e.g. the build requirements it
            // resolved) is told with its reason, in the report and the journal.
            let step = with_notes(step, &applied.notes);
            match applied.outcome {
                StepOutcome::Unchanged => steps.push(record(&step, "no-op", None)),
                StepOutcome::Applied => {
                    self.journal_step(&step, "applied", step.reason.clone(), &written)
                        .await?;
                    steps.push(record(&step, "applied", None));
                    // A new interpreter: the run's lock again for what it really is (its
                    // version and tags; a lock file must hold for it too); a saved plan's
                    // facts already named it.
                    if step.kind == StepKind::PythonEnv && options.saved.is_none() {
                        let fresh = super::facts_again(transport, prepared, first).await?;
                        lock = super::lock(prepared, &fresh, &node)?;
                    }
                }
                StepOutcome::Failed(failure) => {
                    let detail = format!("{}: {}", failure.operation, failure.detail);
                    self.journal_step(&step, "failed", detail, &written).await?;
                    steps.push(record(&step, "failed", Some(failure)));
                    reporter.done();
                    return Ok(finish(false, steps, None));
                }
            }
        }
        reporter.done();
        // The binaries before the server: a missing symbol stops the node with the
        // report instead of a Traceback in the server's log.
        if plan.verify.is_some() && options.verify {
            reporter.step(&format!(
                "{node}: abi-check — native extensions against the libraries they load"
            ));
            let record = abi_check_step(transport, &prepared.manifest.target.python).await;
            reporter.done();
            let failed = record.outcome == "failed";
            steps.push(record);
            if failed {
                return Ok(finish(false, steps, None));
            }
        }
        let verification = match (&plan.verify, options.verify) {
            (Some(verify), true) => {
                reporter.step(&format!(
                    "{node}: verification launch — waiting for {:?}",
                    verify.ready
                ));
                let spec = LaunchSpec {
                    verify: verify.clone(),
                    pid_file: PathBuf::from(PID_FILE),
                    python: prepared.manifest.target.python.clone(),
                    secrets: options.context.secrets.clone(),
                    // This apply holds the node lock: a recorded server still running
                    // is one an interrupted apply left behind.
                    stop_earlier: true,
                };
                let outcome = launch(transport, &spec).await?;
                reporter.done();
                Some(outcome)
            }
            _ => None,
        };
        let ok = !matches!(
            verification,
            Some(LaunchOutcome::Failed { .. } | LaunchOutcome::Refused { .. })
        );
        Ok(finish(ok, steps, verification))
    }
}
