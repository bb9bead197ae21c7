//! Helpers shared by integration tests.
#![expect(
    dead_code,
    reason = "helpers shared by the integration tests; each binary uses a few"
)]

pub mod cli;
pub mod stack;
pub mod testbed;
