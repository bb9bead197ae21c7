//! Helpers shared by integration tests.

pub mod stack;
pub mod testbed;
