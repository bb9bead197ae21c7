//! `cargo run --release --example fuzz -- --cases 1000000 [--seed N] [--threads N]`:
//! the fuzz harness of issue 9 for as many cases as asked, reporting cases, time,
//! failures and the slowest case. Exits 1 when any case failed.
//!
//! See `harness.rs` for the targets and properties; `tests/fuzz.rs` runs a short pass.

mod harness;

use std::path::Path;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

fn main() -> std::process::ExitCode {
    let mut cases: u64 = 1_000_000;
    let mut seed: u64 = 0x15_5e_09;
    let mut threads = std::thread::available_parallelism().map_or(1, usize::from);
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let value = args.next().and_then(|value| value.parse::<u64>().ok());
        match (flag.as_str(), value) {
            ("--cases", Some(value)) => cases = value,
            ("--seed", Some(value)) => seed = value,
            ("--threads", Some(value)) => threads = usize::try_from(value).unwrap_or(1).max(1),
            _ => {
                eprintln!("usage: fuzz [--cases N] [--seed N] [--threads N]");
                return std::process::ExitCode::from(2);
            }
        }
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let seeds = match harness::Seeds::load(root) {
        Ok(seeds) => seeds,
        Err(error) => {
            eprintln!("error: Failed to read the seed files: {error}");
            return std::process::ExitCode::from(2);
        }
    };
    // A panic is a finding, reported once per case below, not a backtrace per case.
    std::panic::set_hook(Box::new(|_| {}));
    let next = AtomicU64::new(0);
    let failures = Mutex::new(Vec::new());
    let slowest = Mutex::new((Duration::ZERO, 0u64));
    let started = Instant::now();
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| {
                loop {
                    let index = next.fetch_add(1, Ordering::Relaxed);
                    if index >= cases {
                        break;
                    }
                    let case = seed.wrapping_add(index);
                    match harness::run_case(&seeds, case) {
                        Ok(elapsed) => {
                            if let Ok(mut slowest) = slowest.lock()
                                && elapsed > slowest.0
                            {
                                *slowest = (elapsed, case);
                            }
                        }
                        Err(failure) => {
                            if let Ok(mut failures) = failures.lock() {
                                failures.push(failure);
                            }
                        }
                    }
                }
            });
        }
    });
    let elapsed = started.elapsed();
    let failures = failures.into_inner().unwrap_or_default();
    let (slowest_time, slowest_case) = slowest.into_inner().unwrap_or_default();
    for failure in failures.iter().take(20) {
        println!("FAIL seed {}: {}", failure.seed, failure.what);
    }
    println!(
        "fuzz: {cases} cases from {} seed files in {:.1}s on {threads} threads; {} failures (panics, broken properties or cases over {:?}); slowest case {:?} (seed {slowest_case})",
        seeds.files.len(),
        elapsed.as_secs_f64(),
        failures.len(),
        harness::SLOW_CASE,
        slowest_time,
    );
    println!(
        "fuzz: {} mutated locks accepted and exported; {} files listed by mutated project pages",
        harness::LOCKS_EXPORTED.load(Ordering::Relaxed),
        harness::PAGE_FILES_LISTED.load(Ordering::Relaxed),
    );
    if failures.is_empty() {
        std::process::ExitCode::SUCCESS
    } else {
        std::process::ExitCode::from(1)
    }
}
