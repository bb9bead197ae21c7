//! The benchmark part of a manifest diff: the section added or removed, and each of its
//! fields changed (the command, the pattern, what the figure is, which way is better,
//! the tolerance, the timeout); a looser tolerance is noted, since a regression that
//! failed before now passes.

use super::*;

/// A tolerance as the diff shows it, e.g. `5%`.
fn tolerance(benchmark: &Benchmark) -> String {
    format!("{}%", tolerance_text(benchmark.tolerance_percent))
}

pub(super) fn diff_benchmark(
    b: &mut Builder<'_>,
    old: Option<&Benchmark>,
    new: Option<&Benchmark>,
) {
    match (old, new) {
        (None, None) => {}
        (Some(old), None) => b.push(
            Section::Benchmark,
            "benchmark",
            Change::Removed {
                old: shell::join(&old.command),
            },
            vec!["apply no longer measures the workload before and after a change".to_string()],
        ),
        (None, Some(new)) => b.push(
            Section::Benchmark,
            "benchmark",
            Change::Added {
                new: shell::join(&new.command),
            },
            vec![format!(
                "apply measures {} before the first change and fails a node {} % worse afterwards",
                new.name,
                tolerance(new).trim_end_matches('%')
            )],
        ),
        (Some(o), Some(n)) => {
            let fields: [(&str, String, String); 6] = [
                (
                    "benchmark.command",
                    shell::join(&o.command),
                    shell::join(&n.command),
                ),
                (
                    "benchmark.pattern",
                    o.pattern.as_str().to_string(),
                    n.pattern.as_str().to_string(),
                ),
                ("benchmark.name", o.name.clone(), n.name.clone()),
                ("benchmark.unit", o.unit.clone(), n.unit.clone()),
                (
                    "benchmark.better",
                    o.better.to_string(),
                    n.better.to_string(),
                ),
                (
                    "benchmark.timeout",
                    format_duration(o.timeout),
                    format_duration(n.timeout),
                ),
            ];
            for (subject, old, new) in fields {
                b.compare(Section::Benchmark, subject, Some(old), Some(new));
            }
            if o.tolerance_percent != n.tolerance_percent {
                let notes = if n.tolerance_percent > o.tolerance_percent {
                    vec![
                        "a looser tolerance: a regression the old one failed may now pass"
                            .to_string(),
                    ]
                } else {
                    Vec::new()
                };
                b.push(
                    Section::Benchmark,
                    "benchmark.tolerance",
                    Change::Changed {
                        old: tolerance(o),
                        new: tolerance(n),
                        direction: None,
                    },
                    notes,
                );
            }
        }
    }
}
