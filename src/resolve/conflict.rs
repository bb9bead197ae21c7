//! The conflict report as plain data: facts and hints per independent conflict, and how
//! it reads.
//!
//! Every fact is kept in two wordings: the short one a person reads once (no range with
//! more than three intervals) and the full one. `{}` prints the short report, `{:#}`
//! (`--verbose`) every fact of every conflict in full; JSON carries the full wording.
//! `report` builds these values; this module only holds and prints them.

use std::fmt;

/// Why a manifest cannot be resolved: facts in derivation order, then hints; then every
/// further independent conflict, most actionable first.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ConflictReport {
    /// The manifest's name, e.g. `sglang-0.5.9-cuda13`.
    pub manifest: String,
    /// One sentence per fact, e.g. ``the manifest asks for `torch==2.10.0+cu130` (x.yaml:30:3)``.
    pub facts: Vec<Fact>,
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
    pub facts: Vec<Fact>,
    /// As [`ConflictReport::hints`].
    pub hints: Vec<String>,
}

/// One fact in its two wordings, e.g. ``no release of `vllm` matches `>=0.5.2, <0.30.0` ``.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Fact {
    /// At most three intervals per range, the rest counted.
    pub short: String,
    /// Every interval.
    pub full: String,
}

impl Fact {
    /// A fact with one wording, e.g. one that names no range.
    pub fn plain(text: String) -> Self {
        Self {
            short: text.clone(),
            full: text,
        }
    }
}

impl serde::Serialize for Fact {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.full)
    }
}

impl fmt::Display for Fact {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(if f.alternate() {
            &self.full
        } else {
            &self.short
        })
    }
}

/// The short report shows at most this many facts of one conflict.
const SHORT_FACTS: usize = 10;
/// The short report shows at most this many conflicts.
const SHORT_CONFLICTS: usize = 3;

impl fmt::Display for ConflictReport {
    /// `{}`: the short report; `{:#}`: everything.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let verbose = f.alternate();
        let total = self.more.len() + 1;
        if total > 1 {
            writeln!(
                f,
                "{total} independent conflicts, the one to change first first; conflict 1:"
            )?;
        }
        write_conflict(f, &self.facts, &self.hints, verbose)?;
        let shown = if verbose { total } else { SHORT_CONFLICTS };
        for (position, conflict) in self.more.iter().enumerate().take(shown.saturating_sub(1)) {
            writeln!(
                f,
                "conflict {} (still there once the ones above are fixed):",
                position + 2
            )?;
            write_conflict(f, &conflict.facts, &conflict.hints, verbose)?;
        }
        if total > shown {
            writeln!(
                f,
                "{} more conflict{} (`--verbose` shows every one)",
                total - shown,
                if total - shown == 1 { "" } else { "s" }
            )?;
        }
        Ok(())
    }
}

fn write_conflict(
    f: &mut fmt::Formatter<'_>,
    facts: &[Fact],
    hints: &[String],
    verbose: bool,
) -> fmt::Result {
    writeln!(f, "because:")?;
    let shown = if verbose { facts.len() } else { SHORT_FACTS };
    for fact in facts.iter().take(shown) {
        if verbose {
            writeln!(f, "  - {}", fact.full)?;
        } else {
            writeln!(f, "  - {}", fact.short)?;
        }
    }
    if facts.len() > shown {
        writeln!(
            f,
            "  - … and {} more (`--verbose` shows every fact)",
            facts.len() - shown
        )?;
    }
    for hint in hints {
        writeln!(f, "hint: {hint}")?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(facts: usize, conflicts: usize) -> ConflictReport {
        let fact = |n: usize| Fact {
            short: format!("short {n}"),
            full: format!("full {n}"),
        };
        ConflictReport {
            manifest: "m".to_string(),
            facts: (0..facts).map(fact).collect(),
            hints: vec!["try".to_string()],
            more: (1..conflicts)
                .map(|n| Conflict {
                    facts: vec![fact(100 + n)],
                    hints: Vec::new(),
                })
                .collect(),
        }
    }

    #[test]
    fn the_short_report_counts_what_it_leaves_out_and_verbose_shows_it() {
        let long = report(12, 5);
        let short = long.to_string();
        assert!(short.contains("  - short 9\n"), "{short}");
        assert!(!short.contains("  - short 10\n"), "{short}");
        assert!(short.contains("… and 2 more (`--verbose` shows every fact)"));
        assert!(short.contains("conflict 3 (still there"), "{short}");
        assert!(!short.contains("conflict 4"), "{short}");
        assert!(short.contains("2 more conflicts (`--verbose` shows every one)"));
        let verbose = format!("{long:#}");
        assert!(verbose.contains("  - full 11\n"), "{verbose}");
        assert!(verbose.contains("conflict 5 (still there"), "{verbose}");
        assert!(!verbose.contains("more"), "{verbose}");
        let json = serde_json::to_value(&long).unwrap();
        assert_eq!(json["facts"][0], "full 0");
    }
}
