//! Shared test code: reads the real H200 captures under `tests/fixtures/h200-cuda13/`
//! and the synthetic fixtures under `tests/fixtures/facts/`.

use std::path::PathBuf;

/// The directory of the real H200 captures, inside the repository.
pub(crate) fn capture_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/h200-cuda13")
}

/// The text of a real capture, e.g. `query-gpu.csv`.
pub(crate) fn capture(name: &str) -> String {
    fs_err::read_to_string(capture_dir().join(name)).unwrap()
}

/// The lines of a capture strictly between the line starting with `start` and the next
/// line starting with `end`, e.g. the `## nvcc` part of `system.txt`.
pub(crate) fn capture_part(name: &str, start: &str, end: &str) -> String {
    let text = capture(name);
    let mut lines = text.lines().skip_while(|line| !line.starts_with(start));
    assert!(lines.next().is_some(), "`{start}` is not in `{name}`");
    let mut part = String::new();
    for line in lines.take_while(|line| !line.starts_with(end)) {
        part.push_str(line);
        part.push('\n');
    }
    part
}

/// The text of a synthetic fixture, e.g. `h200.probe.txt`.
pub(crate) fn fixture(name: &str) -> String {
    fs_err::read_to_string(
        PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/facts")
            .join(name),
    )
    .unwrap()
}
