//! `benchmark`: the workload measured before and after an apply changes a node: its
//! command (a program and its arguments, as `verify.launch`), the pattern that reads the
//! figure from its output (compiled here, with exactly one capture group), what the
//! figure is, which way is better, the tolerance and the timeout. Running it and
//! comparing the figures is `exec::benchmark`'s.

use super::*;

/// The largest tolerance a benchmark may have, in percent: past it nothing could fail.
const MAX_TOLERANCE: f64 = 100.0;

impl Checker {
    pub(super) fn benchmark(&mut self, node: &Node) -> Option<Benchmark> {
        const KEYS: &[&str] = &[
            "command",
            "pattern",
            "name",
            "unit",
            "better",
            "tolerance",
            "timeout",
        ];
        let mut fields = self.fields(node, "benchmark", KEYS)?;
        let command = self
            .require(&mut fields, "command")
            .and_then(|n| self.program_words(n, "benchmark.command"));
        let pattern = self.require(&mut fields, "pattern").and_then(|n| {
            let text = self.non_empty_string(n, "benchmark.pattern")?;
            match FigurePattern::new(&text) {
                Ok(pattern) => Some(pattern),
                Err(why) => {
                    self.error_with_hint(
                        n.span,
                        format!("invalid `benchmark.pattern` `{text}`: {}", first_line(&why)),
                        "e.g. `output throughput: ([0-9.]+) tok/s`: one group around the number",
                    );
                    None
                }
            }
        });
        let name = self
            .require(&mut fields, "name")
            .and_then(|n| self.line(n, "benchmark.name"));
        let unit = self
            .require(&mut fields, "unit")
            .and_then(|n| self.line(n, "benchmark.unit"));
        let better = self.require(&mut fields, "better").and_then(|n| {
            let text = self.non_empty_string(n, "benchmark.better")?;
            match text.as_str() {
                "higher" => Some(Better::Higher),
                "lower" => Some(Better::Lower),
                _ => {
                    self.error(
                        n.span,
                        format!(
                            "invalid `benchmark.better` `{text}`: expected `higher` or `lower`"
                        ),
                    );
                    None
                }
            }
        });
        let tolerance = self.require(&mut fields, "tolerance").and_then(|n| {
            let text = self.non_empty_string(n, "benchmark.tolerance")?;
            match parse_tolerance(&text) {
                Some(percent) => Some(percent),
                None => {
                    self.error(
                        n.span,
                        format!("invalid `benchmark.tolerance` `{text}`: expected a percentage from 0 to 100, e.g. `5%`"),
                    );
                    None
                }
            }
        });
        let timeout = self.require(&mut fields, "timeout").and_then(|n| {
            let text = self.non_empty_string(n, "benchmark.timeout")?;
            match parse_duration(&text) {
                Ok(duration) => Some(duration),
                Err(hint) => {
                    self.error_with_hint(n.span, format!("invalid duration `{text}` for `benchmark.timeout`: expected e.g. `90s`, `10m` or `1h30m`"), hint);
                    None
                }
            }
        });
        self.finish(fields);
        Some(Benchmark {
            command: command?,
            pattern: pattern?,
            name: name?,
            unit: unit?,
            better: better?,
            tolerance_percent: tolerance?,
            timeout: timeout?,
        })
    }
}

/// A tolerance in percent: `5%`, `2.5 %` or a bare `5`, from 0 to 100.
fn parse_tolerance(text: &str) -> Option<f64> {
    let number = text.trim().strip_suffix('%').unwrap_or(text).trim();
    let value = number.parse::<f64>().ok()?;
    (value.is_finite() && (0.0..=MAX_TOLERANCE).contains(&value)).then_some(value)
}

#[cfg(test)]
mod tests {
    use super::parse_tolerance;
    use crate::manifest::{Better, Section, load_str};

    const HEAD: &str = "schema: 1\nname: m\ntarget:\n  python: /opt/ml-env/bin/python3\n";

    fn with(benchmark: &str) -> String {
        format!("{HEAD}benchmark:\n{benchmark}")
    }

    const GOOD: &str = "  command: [python3, bench.py, --rate, '8']\n  pattern: 'output throughput: ([0-9.]+) tok/s'\n  name: output throughput\n  unit: tok/s\n  better: higher\n  tolerance: 5%\n  timeout: 10m\n";

    #[test]
    fn a_benchmark_loads_typed() {
        let manifest = load_str(&with(GOOD), "m.yaml", None).unwrap();
        let benchmark = manifest.benchmark.unwrap();
        assert_eq!(benchmark.command, ["python3", "bench.py", "--rate", "8"]);
        assert_eq!(benchmark.better, Better::Higher);
        assert_eq!(benchmark.tolerance_percent, 5.0);
        assert_eq!(benchmark.timeout.as_secs(), 600);
        assert_eq!(
            benchmark.pattern.figure("output throughput: 89.5 tok/s"),
            Some(89.5)
        );
    }

    #[test]
    fn a_bad_pattern_is_refused_at_its_line_and_column() {
        for (pattern, why) in [
            (
                "'output throughput: [0-9.]+ tok/s'",
                "it has no capture group",
            ),
            ("'output throughput: ([0-9.]+ tok/s'", "unclosed group"),
            ("'(a)(b)'", "2 capture groups"),
        ] {
            let text = with(&GOOD.replace("'output throughput: ([0-9.]+) tok/s'", pattern));
            let error = load_str(&text, "m.yaml", None).unwrap_err().to_string();
            assert!(error.contains("m.yaml:7:12"), "{error}");
            assert!(error.contains("invalid `benchmark.pattern`"), "{error}");
            assert!(error.contains(why), "{error}");
        }
    }

    #[test]
    fn missing_and_wrong_fields_are_named() {
        let text = with("  command: bench\n  better: faster\n  tolerance: 200%\n");
        let error = load_str(&text, "m.yaml", None).unwrap_err().to_string();
        for expected in [
            "`pattern`",
            "invalid `benchmark.better` `faster`",
            "invalid `benchmark.tolerance` `200%`",
        ] {
            assert!(error.contains(expected), "{expected}: {error}");
        }
    }

    #[test]
    fn the_diff_names_each_changed_field() {
        let old = load_str(&with(GOOD), "old.yaml", None).unwrap();
        let new = load_str(
            &with(&GOOD.replace("5%", "10%").replace("10m", "20m")),
            "new.yaml",
            None,
        )
        .unwrap();
        let drivers = crate::rules::DriverTable::embedded().unwrap();
        let diff = crate::manifest::diff(&old, &new, "old", "new", &drivers);
        let subjects: Vec<&str> = diff
            .entries
            .iter()
            .filter(|entry| entry.section == Section::Benchmark)
            .map(|entry| entry.subject.as_str())
            .collect();
        assert_eq!(subjects, ["benchmark.timeout", "benchmark.tolerance"]);
        let removed = load_str(HEAD, "none.yaml", None).unwrap();
        let diff = crate::manifest::diff(&old, &removed, "old", "none", &drivers);
        assert!(
            diff.entries
                .iter()
                .any(|entry| entry.section == Section::Benchmark && entry.subject == "benchmark"),
            "{diff:?}"
        );
    }

    #[test]
    fn tolerances() {
        assert_eq!(parse_tolerance("5%"), Some(5.0));
        assert_eq!(parse_tolerance("2.5 %"), Some(2.5));
        assert_eq!(parse_tolerance("0"), Some(0.0));
        assert_eq!(parse_tolerance("101%"), None);
        assert_eq!(parse_tolerance("-1%"), None);
        assert_eq!(parse_tolerance("five"), None);
        assert_eq!(parse_tolerance("NaN"), None);
    }
}
