//! Output of `upgrade diff`: text for a terminal, markdown for a pull request, JSON.
//!
//! Every format starts from [`redacted`]: credentials in URLs (`user:token@`,
//! `?token=`) are masked as `***` before anything is escaped or serialized.

use super::{markdown_code, markdown_text, text_value};
use crate::manifest::{Change, DiffEntry, ManifestDiff, Section, redact_text};

/// The diff with every URL credential masked, e.g. `https://u:***@host/simple`. A change
/// of credentials alone stays visible as a change, with a note saying so.
pub fn redacted(diff: &ManifestDiff) -> ManifestDiff {
    let entries = diff
        .entries
        .iter()
        .map(|entry| {
            let mut notes: Vec<String> = entry.notes.iter().map(|n| redact_text(n)).collect();
            let change = match &entry.change {
                Change::Added { new } => Change::Added {
                    new: redact_text(new),
                },
                Change::Removed { old } => Change::Removed {
                    old: redact_text(old),
                },
                Change::Changed {
                    old,
                    new,
                    direction,
                } => {
                    let (shown_old, shown_new) = (redact_text(old), redact_text(new));
                    if shown_old == shown_new {
                        notes.push("only the credentials in the URL changed".to_string());
                    }
                    Change::Changed {
                        old: shown_old,
                        new: shown_new,
                        direction: direction.clone(),
                    }
                }
            };
            DiffEntry {
                section: entry.section,
                subject: redact_text(&entry.subject),
                change,
                notes,
            }
        })
        .collect();
    ManifestDiff {
        old: redact_text(&diff.old),
        new: redact_text(&diff.new),
        entries,
        notes: diff.notes.iter().map(|note| redact_text(note)).collect(),
    }
}

fn sections(diff: &ManifestDiff) -> Vec<(Section, Vec<&DiffEntry>)> {
    let mut grouped: Vec<(Section, Vec<&DiffEntry>)> = Vec::new();
    for entry in &diff.entries {
        match grouped.last_mut() {
            Some((section, entries)) if *section == entry.section => entries.push(entry),
            _ => grouped.push((entry.section, vec![entry])),
        }
    }
    grouped
}

fn glyph(change: &Change) -> char {
    match change {
        Change::Added { .. } => '+',
        Change::Removed { .. } => '-',
        Change::Changed { .. } => '~',
    }
}

/// Text for a terminal.
pub fn text(diff: &ManifestDiff) -> String {
    let diff = &redacted(diff);
    let mut out = format!(
        "diff {} → {}\n",
        text_value(&diff.old),
        text_value(&diff.new)
    );
    for note in &diff.notes {
        out.push_str(&format!("note: {}\n", text_value(note)));
    }
    if diff.is_empty() {
        out.push_str("no semantic changes\n");
        return out;
    }
    for (section, entries) in sections(diff) {
        out.push_str(&format!("\n{}\n", section.title()));
        for entry in entries {
            let subject = text_value(&entry.subject);
            let line = match &entry.change {
                Change::Added { new } => format!("{subject}: {}", text_value(new)),
                Change::Removed { old } => format!("{subject}: {}", text_value(old)),
                Change::Changed {
                    old,
                    new,
                    direction,
                } => {
                    let mut line = format!("{subject}: {} → {}", text_value(old), text_value(new));
                    if let Some(direction) = direction {
                        line.push_str(&format!(" ({})", direction.describe()));
                    }
                    line
                }
            };
            out.push_str(&format!("  {} {line}\n", glyph(&entry.change)));
            for note in &entry.notes {
                out.push_str(&format!("      {}\n", text_value(note)));
            }
        }
    }
    out.push_str(&format!("\n{}\n", summary(diff)));
    out
}

fn summary(diff: &ManifestDiff) -> String {
    let count = |f: fn(&Change) -> bool| diff.entries.iter().filter(|e| f(&e.change)).count();
    format!(
        "{} added, {} changed, {} removed",
        count(|c| matches!(c, Change::Added { .. })),
        count(|c| matches!(c, Change::Changed { .. })),
        count(|c| matches!(c, Change::Removed { .. }))
    )
}

/// Markdown for a pull-request comment; every value is a code span or escaped prose.
pub fn markdown(diff: &ManifestDiff) -> String {
    let diff = &redacted(diff);
    let mut out = format!(
        "### Stack diff: {} → {}\n\n",
        markdown_code(&diff.old),
        markdown_code(&diff.new)
    );
    for note in &diff.notes {
        out.push_str(&format!("> Note: {}\n\n", markdown_text(note)));
    }
    if diff.is_empty() {
        out.push_str("No semantic changes.\n");
        return out;
    }
    for (section, entries) in sections(diff) {
        out.push_str(&format!("#### {}\n\n", section.title()));
        for entry in entries {
            let subject = markdown_code(&entry.subject);
            let line = match &entry.change {
                Change::Added { new } => format!("**added** {subject}: {}", markdown_code(new)),
                Change::Removed { old } => format!("**removed** {subject}: {}", markdown_code(old)),
                Change::Changed {
                    old,
                    new,
                    direction,
                } => {
                    let mut line = format!(
                        "**changed** {subject}: {} → {}",
                        markdown_code(old),
                        markdown_code(new)
                    );
                    if let Some(direction) = direction {
                        line.push_str(&format!(" — *{}*", markdown_text(&direction.describe())));
                    }
                    line
                }
            };
            out.push_str(&format!("- {line}\n"));
            for note in &entry.notes {
                out.push_str(&format!("  - {}\n", markdown_text(note)));
            }
        }
        out.push('\n');
    }
    out.push_str(&format!("{}\n", markdown_text(&summary(diff))));
    out
}

/// JSON for machines.
pub fn json(diff: &ManifestDiff) -> String {
    let diff = &redacted(diff);
    let mut text = serde_json::to_string_pretty(diff)
        .unwrap_or_else(|error| format!("{{\"error\": \"{error}\"}}"));
    text.push('\n');
    text
}
