//! The journal on each node: what every apply that changed something did, one JSON
//! object a line in a root-only file, appended (never rewritten): the run's start, each
//! applied or failed step with the files it wrote and the digests of their
//! before-images, and the run's end. Secret values never enter it (step texts are
//! masked before they get here; secret files are journaled by path only).

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::transport::{NodeCommand, Stdin, Transport, TransportError, Written};

/// The journal file on every node.
pub const JOURNAL: &str = "/var/lib/cuda-upgrade/journal.jsonl";

/// How many of the journal's last lines `read_last` returns at most.
const READ_LINES: usize = 500;

/// What an entry records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum JournalEvent {
    /// The run took the node's lock and starts changing it.
    Start,
    /// A step was applied, or failed.
    Step,
    /// The run ended (`ok` says how).
    End,
    /// Before the run's first change to the Python environment: its packages then
    /// (`environment`), what a rollback returns it to.
    Environment,
    /// A rollback undid the run named in `undoes`.
    RolledBack,
    /// The manifest's benchmark ran (`benchmark`): the baseline before the run's first
    /// change, or the run after its verification with the verdict.
    Benchmark,
}

/// Which of an apply's two benchmark runs an entry records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BenchmarkPhase {
    /// Before the first change: what the node did as it was.
    Baseline,
    /// After the verification: what the changed node does.
    After,
}

/// A benchmark entry, e.g. the baseline `output throughput` `89.5` `tok/s`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JournalBenchmark {
    /// Which run.
    pub phase: BenchmarkPhase,
    /// What the figure is, e.g. `output throughput`.
    pub name: String,
    /// e.g. `tok/s`.
    pub unit: String,
    /// What the run read (its output's tail masked).
    pub reading: crate::exec::benchmark::Reading,
    /// For the run after: how it compares with the baseline.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verdict: Option<crate::exec::benchmark::Verdict>,
    /// Why it did not pass, in words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cause: Option<String>,
}

/// The Python environment before a run changed it: its packages as `pip freeze --all`
/// lines (an earlier version kept pip's own output) kept as a before-image, and the indexes its packages can be installed from again.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EnvironmentImage {
    /// The interpreter, e.g. `/opt/ml-env/bin/python3`.
    pub python: PathBuf,
    /// The sha256 of those lines, the name of their file in the before-images directory.
    pub freeze: String,
    /// The manifest's index URLs (credentials masked: a masked URL is not used again).
    pub index_urls: Vec<String>,
    /// Where the node keeps the wheels of the packages the run replaced (`--fetch
    /// controller`): a rollback installs from there with `--no-index`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wheels: Option<PathBuf>,
    /// Replaced packages whose wheel could not be kept, each with why.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub not_kept: Vec<String>,
}

/// A file a step wrote, e.g. `/usr/lib/python3.12/sitecustomize.py` →
/// `/etc/python3.12/sitecustomize.py`, before-image `3f1c…`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WrittenFile {
    /// The file that was replaced (links resolved).
    pub real_path: PathBuf,
    /// The sha256 of its previous content, kept in the before-images directory; `None`
    /// when the file was new.
    pub before: Option<String>,
    /// The sha256 of what the step wrote (absent in entries of older versions).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after: Option<String>,
}

impl From<&Written> for WrittenFile {
    fn from(written: &Written) -> Self {
        Self {
            real_path: written.real_path.clone(),
            before: written.before_image.clone(),
            after: Some(written.after.clone()),
        }
    }
}

/// One step's result, as the report shows it (secrets masked).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct JournalStep {
    /// e.g. `env`.
    pub kind: String,
    /// e.g. `/opt/ml-env/bin/python3`.
    pub subject: String,
    /// `applied` or `failed`.
    pub outcome: String,
    /// Why the step ran, or why it failed.
    pub detail: String,
}

/// One line of the journal.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JournalEntry {
    /// The run, e.g. `1796241671-4242` (start time and controller pid).
    pub run: String,
    /// When, in seconds since the Unix epoch.
    pub at: u64,
    /// What happened.
    pub event: JournalEvent,
    /// The manifest's name, e.g. `sglang-0.5.9-cuda13`.
    pub manifest: String,
    /// The manifest file's sha256.
    pub manifest_sha256: String,
    /// Who ran it, e.g. `root` on `ci-controller`.
    pub holder: String,
    /// For a step entry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<JournalStep>,
    /// The files the step wrote.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub written: Vec<WrittenFile>,
    /// For an end entry: whether the run converged the node.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ok: Option<bool>,
    /// For an environment entry: the environment before the run changed it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub environment: Option<EnvironmentImage>,
    /// For a rolled-back entry: the run that was undone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub undoes: Option<String>,
    /// For a benchmark entry: the run and what it read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub benchmark: Option<JournalBenchmark>,
}

/// The last benchmark entry of `phase` that read a figure, e.g. the baseline the last
/// changing apply measured.
pub fn last_benchmark(entries: &[JournalEntry], phase: BenchmarkPhase) -> Option<&JournalEntry> {
    entries.iter().rev().find(|entry| {
        entry
            .benchmark
            .as_ref()
            .is_some_and(|benchmark| benchmark.phase == phase)
    })
}

/// Append `entry` to the node's journal (created root-only when missing).
pub async fn append(transport: &Transport, entry: &JournalEntry) -> Result<(), TransportError> {
    const SCRIPT: &str = r#"set -eu
journal=$1
[ -d "${journal%/*}" ] || mkdir -p -- "${journal%/*}"
umask 077
# A line cut off by a crash mid-append ends here, so this entry starts a line of its own.
if [ -s "$journal" ] && [ -n "$(tail -c 1 -- "$journal")" ]; then
    printf '\n' >>"$journal"
fi
cat >>"$journal"
"#;
    let mut line = serde_json::to_vec(entry).unwrap_or_default();
    line.push(b'\n');
    let command = NodeCommand::new("sh")
        .arg("-c")
        .script("journal-append", SCRIPT)
        .arg("journal-append")
        .arg(JOURNAL);
    let output = transport.run_with(&command, Stdin::Bytes(&line)).await?;
    if output.success() {
        Ok(())
    } else {
        Err(TransportError::WriteFile {
            host: transport.name().to_string(),
            path: JOURNAL.to_string(),
            message: output.tail(5),
        })
    }
}

/// The journal's last entries, oldest first (lines that do not parse are skipped: a
/// line cut by a crash mid-append).
pub async fn read_last(transport: &Transport) -> Result<Vec<JournalEntry>, TransportError> {
    let command = NodeCommand::new("sh")
        .arg("-c")
        .script(
            "journal-read",
            "if [ -e \"$1\" ]; then tail -n \"$2\" -- \"$1\"; fi",
        )
        .arg("journal-read")
        .arg(JOURNAL)
        .arg(READ_LINES.to_string());
    let output = transport.run(&command, None).await?;
    if !output.success() {
        return Err(TransportError::ReadFile {
            host: transport.name().to_string(),
            path: JOURNAL.to_string(),
            message: output.tail(5),
        });
    }
    Ok(output
        .stdout_text()
        .lines()
        .filter_map(|line| serde_json::from_str(line).ok())
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transport::LocalTransport;

    #[test]
    fn entries_round_trip_and_omit_what_they_do_not_have() {
        let entry = JournalEntry {
            run: "1-2".into(),
            at: 1,
            event: JournalEvent::Start,
            manifest: "m".into(),
            manifest_sha256: "00".into(),
            holder: "root on c".into(),
            step: None,
            written: Vec::new(),
            ok: None,
            environment: None,
            undoes: None,
            benchmark: None,
        };
        let text = serde_json::to_string(&entry).unwrap();
        assert!(
            !text.contains("written") && !text.contains("\"ok\""),
            "{text}"
        );
        assert_eq!(serde_json::from_str::<JournalEntry>(&text).unwrap(), entry);
    }

    #[tokio::test]
    async fn a_missing_journal_reads_as_empty() {
        // Only reads: the journal path on this machine is not created.
        if std::path::Path::new(JOURNAL).exists() {
            return;
        }
        let transport = Transport::Local(LocalTransport::new());
        assert!(read_last(&transport).await.unwrap().is_empty());
    }
}
