//! The fuzz harness of issue 9, shared by `examples/fuzz` (a million cases and more)
//! and `tests/fuzz.rs` (a short pass in CI).
//!
//! Each case derives, from one 64-bit seed, a mutated copy of a file of the repository
//! (every manifest, every malformed manifest, every example and every fixture) and
//! feeds it to: the manifest loader and validator, the YAML layer, the facts parser,
//! the shell quoting (quote → split gives back the word; a sample is run by `sh`), and
//! the sitecustomize renderer (`steps::env::block`, then `managed_block::splice` and
//! `find`, which must give back the block), and, for issue 33, the lock reader, the
//! project page reader (HTML and JSON) and the requirements, `pylock.toml` and `.pth`
//! writers, with the property that no output holds more lines or entries than its
//! inputs allow: every line a reader of any kind splits off (Python's `str.splitlines`
//! knows U+2028 and more) is a line the writer meant. A case fails when anything
//! panics, when a property does not hold, or when one case takes longer than
//! [`SLOW_CASE`]. Nothing here talks to a network.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use std::collections::BTreeMap;

use cuda_upgrade::facts::NodeFacts;
use cuda_upgrade::index::client::simple;
use cuda_upgrade::index::filename::DistFileName;
use cuda_upgrade::managed_block;
use cuda_upgrade::manifest::{self, EnvScope, yaml};
use cuda_upgrade::resolve::export::{self, ExportIndex, LockedFileUrl};
use cuda_upgrade::resolve::{Lock, LockedSource};
use cuda_upgrade::shell;
use cuda_upgrade::steps::env::{self, ResolvedVar};
use cuda_upgrade::text::is_line_break;

/// One case taking longer than this is a failure: cost must stay bounded.
pub const SLOW_CASE: Duration = Duration::from_secs(2);

/// How many mutated locks the lock reader accepted (and so the exporters wrote), and
/// how many files the page reader listed, over every case of this process: a target
/// that only ever refuses would test no writer.
pub static LOCKS_EXPORTED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
/// See [`LOCKS_EXPORTED`].
pub static PAGE_FILES_LISTED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Every `SHELL_SAMPLE`-th case also runs its quoted word through `sh`.
pub const SHELL_SAMPLE: u64 = 4096;

/// The files the inputs are mutated from, with their paths.
pub struct Seeds {
    /// e.g. `("manifests/sglang-0.5.9-cu130.yaml", bytes)`.
    pub files: Vec<(String, Vec<u8>)>,
}

impl Seeds {
    /// Read every manifest and fixture of the repository at `root`.
    pub fn load(root: &Path) -> std::io::Result<Self> {
        let mut files = Vec::new();
        for dir in ["manifests", "tests/manifests/invalid", "examples"] {
            for entry in std::fs::read_dir(root.join(dir))? {
                let path = entry?.path();
                if path.extension().is_some_and(|ext| ext == "yaml") {
                    files.push(path);
                }
            }
        }
        walk(&root.join("tests/fixtures"), &mut files)?;
        files.sort();
        let mut seeds = Vec::new();
        for path in files {
            let bytes = std::fs::read(&path)?;
            let name = path
                .strip_prefix(root)
                .unwrap_or(&path)
                .display()
                .to_string();
            seeds.push((name, bytes));
        }
        Ok(Self { files: seeds })
    }
}

fn walk(dir: &Path, files: &mut Vec<PathBuf>) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.is_dir() {
            walk(&path, files)?;
        } else {
            files.push(path);
        }
    }
    Ok(())
}

/// splitmix64: a small, fast generator; every case is reproducible from its seed.
pub struct Rng(u64);

impl Rng {
    /// A generator for case `seed`.
    pub fn new(seed: u64) -> Self {
        Self(seed)
    }

    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            return 0;
        }
        (self.next() % n as u64) as usize
    }
}

/// Pieces that hostile inputs are made of: option dashes, paths that climb, control
/// and bidi characters, YAML syntax (documents, anchors, tags, flow), credentials.
const TOKENS: &[&str] = &[
    "-",
    "--",
    "-oProxyCommand=x",
    "..",
    "../",
    "/",
    "\n",
    "\r\n",
    "\0",
    "\t",
    "\u{1b}[31m",
    "\u{202e}",
    "\u{2066}",
    "\u{feff}",
    "'",
    "\"",
    "\\",
    "`",
    "$(id)",
    ";",
    "&&",
    "|",
    ":",
    ": ",
    "- ",
    "---\n",
    "...\n",
    "&a ",
    "*a",
    "!!binary ",
    "!!str ",
    "{",
    "}",
    "[",
    "]",
    ",",
    "#",
    "%YAML 1.2\n",
    "? ",
    "|\n  ",
    ">\n  ",
    "~",
    "null",
    "true",
    "1e999",
    "99999999999999999999h",
    "ext::sh -c x",
    "fd::3",
    "https://user:token@h/x?token=t",
    "file:///etc/shadow",
    "ftp://h/x",
    "/etc/passwd",
    "/etc/ld.so.conf.d/x.conf",
    "# >>> cuda-upgrade managed block >>>\n",
    "# <<< cuda-upgrade managed block <<<\n",
    "\u{85}",
    "\u{2028}",
    "\u{2029}",
    "\u{1b}[2J",
    "\u{202e}",
    "../",
    // The same characters as JSON escapes, which a lock or a JSON page decodes.
    "\\u2028",
    "\\u0085",
    "\\n--extra-index-url https://x/",
    "\\u001b[2J",
    "é",
    "\u{10ffff}",
];

/// A mutated copy of `seed`: one to eight byte-, token- and chunk-level edits, some of
/// them taking chunks from `other`.
pub fn mutate(rng: &mut Rng, seed: &[u8], other: &[u8]) -> Vec<u8> {
    let mut bytes = seed.to_vec();
    for _ in 0..1 + rng.below(8) {
        let at = rng.below(bytes.len() + 1);
        match rng.below(8) {
            0 if !bytes.is_empty() => {
                let index = rng.below(bytes.len());
                bytes[index] ^= 1 << rng.below(8);
            }
            1 => bytes.insert(at, rng.next() as u8),
            2 | 3 => {
                let token = TOKENS[rng.below(TOKENS.len())].as_bytes();
                bytes.splice(at..at, token.iter().copied());
            }
            4 if !bytes.is_empty() => {
                let end = (at + 1 + rng.below(64)).min(bytes.len());
                bytes.drain(at.min(end)..end);
            }
            5 if !bytes.is_empty() => {
                let start = rng.below(bytes.len());
                let end = (start + 1 + rng.below(256)).min(bytes.len());
                let chunk = bytes[start..end].to_vec();
                bytes.splice(at..at, chunk);
            }
            6 if !other.is_empty() => {
                let start = rng.below(other.len());
                let end = (start + 1 + rng.below(256)).min(other.len());
                bytes.splice(at..at, other[start..end].iter().copied());
            }
            _ => {
                // Repeat a short piece many times: long scalars, deep nesting, many keys.
                let token = TOKENS[rng.below(TOKENS.len())].as_bytes();
                let times = 1 + rng.below(2000);
                let repeated: Vec<u8> = token.repeat(times);
                bytes.splice(at..at, repeated);
            }
        }
    }
    bytes
}

/// How one case went wrong.
#[derive(Debug)]
pub struct CaseFailure {
    /// The case's seed, to reproduce it with `--seed`.
    pub seed: u64,
    /// What failed, e.g. `panic in manifest::load_str: …`.
    pub what: String,
}

/// Run case `seed` against every target. Returns the failure, if any.
pub fn run_case(seeds: &Seeds, seed: u64) -> Result<Duration, CaseFailure> {
    let started = Instant::now();
    let outcome = std::panic::catch_unwind(|| check_case(seeds, seed));
    let elapsed = started.elapsed();
    let fail = |what: String| CaseFailure { seed, what };
    match outcome {
        Err(payload) => {
            let message = payload
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| payload.downcast_ref::<&str>().map(ToString::to_string))
                .unwrap_or_default();
            Err(fail(format!("panic: {message}")))
        }
        Ok(Err(what)) => Err(fail(what)),
        Ok(Ok(())) if elapsed > SLOW_CASE => Err(fail(format!("slow: {elapsed:?}"))),
        Ok(Ok(())) => Ok(elapsed),
    }
}

fn check_case(seeds: &Seeds, seed: u64) -> Result<(), String> {
    let mut rng = Rng::new(seed);
    let files = &seeds.files;
    let (_, base) = &files[rng.below(files.len())];
    let (_, other) = &files[rng.below(files.len())];
    let input = mutate(&mut rng, base, other);
    let text = String::from_utf8_lossy(&input);

    // The YAML layer and the manifest loader: any text, no panic.
    let _ = yaml::parse(&text);
    let _ = manifest::load_str(&text, "fuzz.yaml", None);

    // The facts parser: any text, no panic.
    let _ = NodeFacts::parse(&text);

    // Shell quoting: a word made of the input's characters comes back from `split`.
    let start = rng.below(text.len());
    let word: String = text
        .chars()
        .skip(start % text.chars().count().max(1))
        .take(rng.below(64))
        .collect();
    let quoted = shell::quote(&word);
    match shell::split(&quoted) {
        Ok(words) if words == [word.clone()] => {}
        other => return Err(format!("quote/split of {word:?} gave {other:?}")),
    }
    if seed.is_multiple_of(SHELL_SAMPLE) && !word.contains('\0') {
        let output = std::process::Command::new("sh")
            .arg("-c")
            .arg(format!("printf %s {quoted}"))
            .output()
            .map_err(|error| format!("sh did not run: {error}"))?;
        if output.stdout != word.as_bytes() {
            return Err(format!(
                "sh printed {:?} for {word:?} quoted as {quoted:?}",
                String::from_utf8_lossy(&output.stdout)
            ));
        }
    }

    // The sitecustomize renderer: any variables, any existing file; splice then find
    // gives back exactly the block.
    let vars: Vec<ResolvedVar> = (0..rng.below(4))
        .map(|index| ResolvedVar {
            name: format!("VAR_{index}"),
            value: word.chars().rev().collect(),
            secret: rng.below(2) == 0,
            override_existing: rng.below(2) == 0,
        })
        .collect();
    let secrets_file =
        (rng.below(2) == 0).then(|| Path::new("/etc/cuda-upgrade/secrets/env-x.json"));
    let scope = if rng.below(2) == 0 {
        EnvScope::Environment
    } else {
        EnvScope::Interpreter
    };
    let block = env::block(&vars, &word, secrets_file, scope);
    // Whatever the values hold, the block is printable ASCII on the lines it meant.
    if let Some(byte) = block
        .bytes()
        .find(|byte| *byte != b'\n' && !(b' '..=b'~').contains(byte))
    {
        return Err(format!(
            "a .pth block byte outside printable ASCII: {byte:#04x}"
        ));
    }
    same_lines("the .pth block", &block)?;
    // In a `.pth` file `site` runs only lines that start with `import`: every line of the
    // block is one of those or a comment, whatever the values hold.
    if scope == EnvScope::Environment
        && let Some(line) = block
            .lines()
            .find(|line| !line.starts_with("import ") && !line.starts_with('#'))
    {
        return Err(format!(
            "a .pth block line that site would not run: {line:?}"
        ));
    }
    check_lock(&text)?;
    check_page(&input)?;
    // Every case also mutates the seed lock and the seed pages, so each target meets a
    // million inputs of its own kind in a million cases.
    for (name, seed) in files {
        if name.ends_with("fuzz/seed.lock.json") {
            let mutated = mutate(&mut rng, seed, other);
            check_lock(&String::from_utf8_lossy(&mutated))?;
        } else if name.contains("fuzz/project-page.") {
            check_page(&mutate(&mut rng, seed, other))?;
        }
    }
    let _ = managed_block::find(&input, env::MARKER);
    if let Ok(spliced) = managed_block::splice(&input, env::MARKER, &block) {
        match managed_block::find(&spliced, env::MARKER) {
            Ok(Some(located)) if spliced[located.content.clone()] == *block.as_bytes() => {}
            other => {
                return Err(format!(
                    "splice then find did not give back the block: {other:?}"
                ));
            }
        }
    }
    Ok(())
}

/// Every line any reader splits `text` into is a line split at `\n`: no U+2028, U+0085,
/// form feed or other separator starts a line of its own.
fn same_lines(what: &str, text: &str) -> Result<(), String> {
    let anywhere = text.split(is_line_break).count();
    let meant = text.split('\n').count();
    if anywhere == meant {
        Ok(())
    } else {
        Err(format!(
            "{what}: {anywhere} lines for a reader of any separator, {meant} meant:\n{text}"
        ))
    }
}

/// The lock reader, then the exporters of what it accepted: the requirements file holds
/// one requirement per indexed package and nothing but comments, index options,
/// requirements and hashes; `pylock.toml` parses as TOML with one `[[packages]]` table
/// per indexed package; a lock read back from its own JSON is the same lock.
fn check_lock(text: &str) -> Result<(), String> {
    let Ok(lock) = Lock::from_json(text) else {
        return Ok(());
    };
    LOCKS_EXPORTED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let json = serde_json::to_string(&lock).map_err(|error| format!("lock to JSON: {error}"))?;
    match Lock::from_json(&json) {
        Ok(again) if again == lock => {}
        other => return Err(format!("a lock read back from its JSON differs: {other:?}")),
    }
    let mut indexes: Vec<ExportIndex> = Vec::new();
    let mut urls: BTreeMap<String, LockedFileUrl> = BTreeMap::new();
    let mut indexed = 0;
    for package in &lock.packages {
        let LockedSource::Index {
            index,
            file,
            sha256,
        } = &package.source
        else {
            continue;
        };
        if sha256.is_none() {
            return Ok(());
        }
        indexed += 1;
        if !indexes.iter().any(|known| known.name == index.as_str()) {
            indexes.push(ExportIndex {
                name: index.to_string(),
                url: indexes.len().is_multiple_of(2).then(|| {
                    format!(
                        "https://user:pw@index{}.example.invalid/simple/",
                        indexes.len()
                    )
                }),
                explicit: false,
            });
        }
        urls.insert(
            package.name.to_string(),
            LockedFileUrl {
                index_url: "https://index.example.invalid/simple/".to_string(),
                file_url: format!("https://files.example.invalid/{file}"),
                others: Vec::new(),
            },
        );
    }
    if let Ok(requirements) = export::requirements_txt(&lock, &indexes, &BTreeMap::new()) {
        same_lines("requirements.txt", &requirements)?;
        let mut requirement_lines = 0;
        for line in requirements.lines() {
            let hash = line
                .strip_prefix("    --hash=sha256:")
                .map(|rest| rest.trim_end_matches(" \\"));
            let allowed = line.is_empty()
                || line.starts_with('#')
                || line.starts_with("--index-url https://")
                || line.starts_with("--extra-index-url https://")
                || hash.is_some_and(|digits| {
                    digits.len() == 64 && digits.bytes().all(|byte| byte.is_ascii_hexdigit())
                });
            if line.contains("==") && !line.starts_with('#') && line.ends_with(" \\") {
                requirement_lines += 1;
            } else if !allowed {
                return Err(format!("requirements.txt line {line:?}:\n{requirements}"));
            }
        }
        if requirement_lines != indexed {
            return Err(format!(
                "requirements.txt has {requirement_lines} requirements for {indexed} packages:\n{requirements}"
            ));
        }
    }
    if let Ok(pylock) = export::pylock(&lock, &urls) {
        same_lines("pylock.toml", &pylock)?;
        let document = pylock
            .parse::<toml_edit::DocumentMut>()
            .map_err(|error| format!("pylock.toml does not parse: {error}\n{pylock}"))?;
        let tables = document
            .get("packages")
            .and_then(|item| item.as_array_of_tables())
            .map_or(0, |tables| tables.len());
        if tables != indexed {
            return Err(format!(
                "pylock.toml has {tables} packages for {indexed}:\n{pylock}"
            ));
        }
    }
    Ok(())
}

/// The project page reader, as HTML and as JSON: every file it lists has a name that is
/// one path component of a distribution's characters.
fn check_page(body: &[u8]) -> Result<(), String> {
    let (Ok(page), Ok(index)) = (
        url::Url::parse("https://index.example.invalid/simple/torch/"),
        url::Url::parse("https://user:pw@index.example.invalid/simple/"),
    ) else {
        return Err("the page URLs do not parse".to_string());
    };
    for content_type in ["text/html", "application/vnd.pypi.simple.v1+json"] {
        let Ok(files) = simple::parse_page(body, Some(content_type), &page, &index) else {
            continue;
        };
        PAGE_FILES_LISTED.fetch_add(files.len() as u64, std::sync::atomic::Ordering::Relaxed);
        for file in files {
            if DistFileName::new(file.filename.as_str()).is_err() {
                return Err(format!("a page listed the file name {:?}", file.filename));
            }
        }
    }
    Ok(())
}
