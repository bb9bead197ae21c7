//! The manifest's benchmark on a node: run its command through the transport (as root,
//! like the verification launch, so the environment's managed variables apply the same
//! way), read the figure with its pattern, and compare a figure with a baseline. Where
//! the runs happen in an apply (after the node lock and the drain, before the first
//! change; after the verification) is `converge::node`'s.

use serde::{Deserialize, Serialize};

use crate::manifest::{Benchmark, Better};
use crate::transport::{NodeCommand, Transport, mask};

use super::ExecError;

/// How many lines of the command's output a failure shows.
pub const TAIL_LINES: usize = 10;

/// One run of the benchmark, e.g. a figure of `89.5`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum Reading {
    /// The pattern read this figure from the output.
    Figure {
        /// e.g. `89.5`.
        value: f64,
    },
    /// The command failed, ran past its timeout, or printed no figure.
    Failed {
        /// Why, e.g. `exited with status 1`.
        reason: String,
        /// Its exit status; `None` when killed by a signal.
        status: Option<i32>,
        /// The end of its output (secrets masked).
        tail: String,
    },
}

impl Reading {
    /// The figure, when there is one.
    pub fn value(&self) -> Option<f64> {
        match self {
            Self::Figure { value } => Some(*value),
            Self::Failed { .. } => None,
        }
    }
}

/// Where a benchmark's run stands against its baseline, e.g. `passed`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Within the tolerance of the baseline (or better).
    Passed,
    /// Worse than the baseline beyond the tolerance.
    Regressed,
    /// A run failed or printed no figure.
    Failed,
    /// The apply failed before the run after its changes.
    NotRun,
}

impl std::fmt::Display for Verdict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Passed => "passed",
            Self::Regressed => "regressed",
            Self::Failed => "failed",
            Self::NotRun => "not run",
        })
    }
}

/// A node's benchmark in an apply: the baseline, the run after, and the verdict, e.g.
/// `output throughput` `89.5` → `84.0` `tok/s`, `regressed`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BenchmarkResult {
    /// What the figure is, e.g. `output throughput`.
    pub name: String,
    /// e.g. `tok/s`.
    pub unit: String,
    /// Which way is better.
    pub better: Better,
    /// e.g. `5.0`.
    pub tolerance_percent: f64,
    /// Before the first change.
    pub baseline: Reading,
    /// After the verification; `None` when it did not run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after: Option<Reading>,
    /// How it compares.
    pub verdict: Verdict,
    /// Why it did not pass, in words, e.g. `output throughput 84.0 tok/s is 6.1 % below
    /// the 89.5 tok/s baseline (tolerance 5 %)`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cause: Option<String>,
}

/// A figure as the reports write it: `89.5`, `84.0`, `1200.0`.
pub use crate::manifest::figure_text as figure;

/// A percentage as the reports write it: `5`, `6.1`.
fn percent(value: f64) -> String {
    let text = format!("{value:.1}");
    text.strip_suffix(".0").map_or(text.clone(), str::to_string)
}

/// Run the benchmark once on the node: its command, bounded by its timeout, its output
/// read with its pattern; what the node printed is shown with `secrets` as `***`.
pub async fn run(
    transport: &Transport,
    benchmark: &Benchmark,
    secrets: &[String],
) -> Result<Reading, ExecError> {
    let Some((program, arguments)) = benchmark.command.split_first() else {
        return Ok(Reading::Failed {
            reason: "the command names no program".to_string(),
            status: None,
            tail: String::new(),
        });
    };
    let timeout = benchmark.timeout.min(crate::manifest::MAX_DURATION);
    let command = NodeCommand::new(program.clone())
        .args(arguments.iter().cloned())
        .bounded(timeout);
    let output = transport.run(&command, None).await?;
    Ok(read(benchmark, &output, secrets))
}

/// What a finished run of the benchmark says (see [`run`]).
pub fn read(
    benchmark: &Benchmark,
    output: &crate::transport::CommandOutput,
    secrets: &[String],
) -> Reading {
    let failed = |reason: String| Reading::Failed {
        reason,
        status: output.status,
        tail: mask(&output.tail(TAIL_LINES), secrets),
    };
    match output.status {
        Some(0) => {}
        // coreutils' `timeout` exits 124 when it stopped the command.
        Some(124) => {
            return failed(format!(
                "did not finish within {} s",
                benchmark.timeout.as_secs()
            ));
        }
        Some(status) => return failed(format!("exited with status {status}")),
        None => return failed("was killed by a signal".to_string()),
    }
    let text = format!("{}\n{}", output.stdout_text(), output.stderr_text());
    match benchmark.pattern.figure(&text) {
        Some(value) => Reading::Figure { value },
        None => failed(format!(
            "printed no line matching `{}` with a number in its group",
            benchmark.pattern.as_str()
        )),
    }
}

/// How much worse `after` is than `baseline`, in percent of the baseline (0 or less:
/// as good or better).
pub fn worse_percent(better: Better, baseline: f64, after: f64) -> f64 {
    let worse = match better {
        Better::Higher => baseline - after,
        Better::Lower => after - baseline,
    };
    if baseline == 0.0 {
        return if worse > 0.0 { f64::INFINITY } else { 0.0 };
    }
    worse / baseline.abs() * 100.0
}

/// Compare `after` with `baseline`: `passed`, or `regressed` with the cause in words,
/// e.g. `output throughput 84.0 tok/s is 6.1 % below the 89.5 tok/s baseline
/// (tolerance 5 %)`. A figure exactly at the tolerance passes.
pub fn compare(benchmark: &Benchmark, baseline: f64, after: f64) -> (Verdict, Option<String>) {
    let worse = worse_percent(benchmark.better, baseline, after);
    // Decimal figures do not subtract exactly: a hair past the edge is the edge.
    if worse <= benchmark.tolerance_percent + 1e-9 {
        return (Verdict::Passed, None);
    }
    let direction = match benchmark.better {
        Better::Higher => "below",
        Better::Lower => "above",
    };
    let how_much = if worse.is_finite() {
        format!("{} % {direction}", percent(worse))
    } else {
        direction.to_string()
    };
    let cause = format!(
        "{name} {after} {unit} is {how_much} the {baseline} {unit} baseline (tolerance {tolerance} %)",
        name = benchmark.name,
        after = figure(after),
        unit = benchmark.unit,
        baseline = figure(baseline),
        tolerance = percent(benchmark.tolerance_percent),
    );
    (Verdict::Regressed, Some(cause))
}

/// The cause of a failed run (`when`: `baseline`, `after`, or empty for a run alone), e.g. ``output throughput: `python3 bench.py` exited with
/// status 1: Traceback …``.
pub fn failure_cause(benchmark: &Benchmark, when: &str, reading: &Reading) -> Option<String> {
    match reading {
        Reading::Figure { .. } => None,
        Reading::Failed { reason, tail, .. } => {
            let command = crate::shell::join(&benchmark.command);
            let tail = if tail.is_empty() {
                String::new()
            } else {
                format!(": {}", tail.trim_end())
            };
            let run = if when.is_empty() {
                "the benchmark".to_string()
            } else {
                format!("the {when} benchmark")
            };
            Some(format!(
                "{run} of {} failed: `{command}` {reason}{tail}",
                benchmark.name
            ))
        }
    }
}

/// The benchmark's result once both runs are known (`after` `None`: the apply failed
/// before it).
pub fn result(benchmark: &Benchmark, baseline: Reading, after: Option<Reading>) -> BenchmarkResult {
    let (verdict, cause) = match (&baseline, &after) {
        (Reading::Failed { .. }, _) => (
            Verdict::Failed,
            failure_cause(benchmark, "baseline", &baseline),
        ),
        (_, None) => (Verdict::NotRun, None),
        (_, Some(after @ Reading::Failed { .. })) => {
            (Verdict::Failed, failure_cause(benchmark, "after", after))
        }
        (Reading::Figure { value: before }, Some(Reading::Figure { value: now })) => {
            compare(benchmark, *before, *now)
        }
    };
    BenchmarkResult {
        name: benchmark.name.clone(),
        unit: benchmark.unit.clone(),
        better: benchmark.better,
        tolerance_percent: benchmark.tolerance_percent,
        baseline,
        after,
        verdict,
        cause,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::manifest::FigurePattern;
    use crate::transport::CommandOutput;

    fn benchmark(better: Better, tolerance: f64) -> Benchmark {
        Benchmark {
            command: vec!["python3".into(), "bench.py".into()],
            pattern: FigurePattern::new(r"output throughput: ([0-9.]+) tok/s").unwrap(),
            name: "output throughput".into(),
            unit: "tok/s".into(),
            better,
            tolerance_percent: tolerance,
            timeout: std::time::Duration::from_secs(60),
        }
    }

    #[test]
    fn higher_is_better_fails_below_the_tolerance_with_the_cause() {
        let bench = benchmark(Better::Higher, 5.0);
        assert_eq!(compare(&bench, 89.5, 89.5), (Verdict::Passed, None));
        assert_eq!(compare(&bench, 89.5, 120.0), (Verdict::Passed, None));
        assert_eq!(compare(&bench, 89.5, 86.0).0, Verdict::Passed);
        assert_eq!(
            compare(&bench, 89.5, 84.0),
            (
                Verdict::Regressed,
                Some(
                    "output throughput 84.0 tok/s is 6.1 % below the 89.5 tok/s baseline (tolerance 5 %)"
                        .to_string()
                )
            )
        );
    }

    #[test]
    fn lower_is_better_fails_above_the_tolerance() {
        let mut bench = benchmark(Better::Lower, 10.0);
        bench.name = "time to first token".into();
        bench.unit = "ms".into();
        assert_eq!(compare(&bench, 200.0, 150.0).0, Verdict::Passed);
        assert_eq!(compare(&bench, 200.0, 220.0).0, Verdict::Passed);
        assert_eq!(
            compare(&bench, 200.0, 230.0).1.unwrap(),
            "time to first token 230.0 ms is 15 % above the 200.0 ms baseline (tolerance 10 %)"
        );
    }

    #[test]
    fn the_tolerance_edge_passes_and_a_hair_past_it_fails() {
        let bench = benchmark(Better::Higher, 5.0);
        // Exactly 5 % below, although 100 - 95 is not exact in binary.
        assert_eq!(compare(&bench, 100.0, 95.0).0, Verdict::Passed);
        assert_eq!(compare(&bench, 100.0, 94.99).0, Verdict::Regressed);
        let strict = benchmark(Better::Higher, 0.0);
        assert_eq!(compare(&strict, 89.5, 89.5).0, Verdict::Passed);
        assert_eq!(compare(&strict, 89.5, 89.4).0, Verdict::Regressed);
        let lower = benchmark(Better::Lower, 5.0);
        assert_eq!(compare(&lower, 100.0, 105.0).0, Verdict::Passed);
        assert_eq!(compare(&lower, 100.0, 105.01).0, Verdict::Regressed);
    }

    #[test]
    fn a_zero_baseline_fails_only_a_worse_figure() {
        let bench = benchmark(Better::Higher, 5.0);
        assert_eq!(compare(&bench, 0.0, 1.0).0, Verdict::Passed);
        let lower = benchmark(Better::Lower, 5.0);
        let (verdict, cause) = compare(&lower, 0.0, 1.0);
        assert_eq!(verdict, Verdict::Regressed);
        assert_eq!(
            cause.unwrap(),
            "output throughput 1.0 tok/s is above the 0.0 tok/s baseline (tolerance 5 %)"
        );
    }

    fn output(status: Option<i32>, stdout: &str) -> CommandOutput {
        CommandOutput {
            status,
            stdout: stdout.as_bytes().to_vec(),
            stderr: Vec::new(),
        }
    }

    #[test]
    fn the_figure_is_read_from_the_last_matching_line_and_failures_keep_the_tail() {
        let bench = benchmark(Better::Higher, 5.0);
        let text = "warmup\noutput throughput: 10.0 tok/s\noutput throughput: 89.5 tok/s\ndone\n";
        assert_eq!(
            read(&bench, &output(Some(0), text), &[]),
            Reading::Figure { value: 89.5 }
        );
        let none = read(
            &bench,
            &output(Some(0), "token hf_secret\nno figure\n"),
            &["hf_secret".to_string()],
        );
        let Reading::Failed {
            reason,
            status,
            tail,
        } = &none
        else {
            panic!("{none:?}")
        };
        assert!(reason.starts_with("printed no line matching"), "{reason}");
        assert_eq!(*status, Some(0));
        assert_eq!(tail, "token ***\nno figure");
        let exited = read(&bench, &output(Some(2), "Traceback\n"), &[]);
        assert_eq!(
            failure_cause(&bench, "after", &exited).unwrap(),
            "the after benchmark of output throughput failed: `python3 bench.py` exited with status 2: Traceback"
        );
        let Reading::Failed { reason, .. } = read(&bench, &output(Some(124), ""), &[]) else {
            panic!()
        };
        assert_eq!(reason, "did not finish within 60 s");
    }

    #[test]
    fn results_name_their_verdict() {
        let bench = benchmark(Better::Higher, 5.0);
        let baseline = Reading::Figure { value: 89.5 };
        let passed = result(
            &bench,
            baseline.clone(),
            Some(Reading::Figure { value: 90.0 }),
        );
        assert_eq!((passed.verdict, passed.cause), (Verdict::Passed, None));
        assert_eq!(result(&bench, baseline, None).verdict, Verdict::NotRun);
    }
}
