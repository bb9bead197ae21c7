//! A short pass of the fuzz harness of issue 9, as a property: for every generated seed,
//! the mutated inputs neither panic nor break a property nor take too long. The long
//! run is `cargo run --release --example fuzz -- --cases 1000000`.

#![expect(
    clippy::expect_used,
    reason = "a test fails loudly at the first surprise"
)]

#[path = "../examples/fuzz/harness.rs"]
mod harness;

use std::path::Path;
use std::sync::OnceLock;

use proptest::prelude::*;

fn seeds() -> &'static harness::Seeds {
    static SEEDS: OnceLock<harness::Seeds> = OnceLock::new();
    SEEDS.get_or_init(|| {
        harness::Seeds::load(Path::new(env!("CARGO_MANIFEST_DIR"))).expect("read the seed files")
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn mutated_inputs_never_panic(seed in any::<u64>()) {
        if let Err(failure) = harness::run_case(seeds(), seed) {
            prop_assert!(false, "seed {}: {}", failure.seed, failure.what);
        }
    }
}

/// Every seed file unchanged, and the shell sample, run once each.
#[test]
fn every_seed_file_as_it_is() {
    let seeds = seeds();
    assert!(seeds.files.len() > 40, "{} seed files", seeds.files.len());
    // The seed lock is accepted and exported, and the seed pages list their files.
    for (name, bytes) in &seeds.files {
        if name.ends_with("fuzz/seed.lock.json") {
            let text = String::from_utf8_lossy(bytes);
            assert!(
                cuda_upgrade::resolve::Lock::from_json(&text).is_ok(),
                "{name} is not a lock"
            );
        }
    }
    for seed in (0..harness::SHELL_SAMPLE * 4).step_by(harness::SHELL_SAMPLE as usize) {
        if let Err(failure) = harness::run_case(seeds, seed) {
            panic!("seed {}: {}", failure.seed, failure.what);
        }
    }
}
