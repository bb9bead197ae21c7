//! Rules: knowledge no package metadata carries, loaded from `manifests/rules/`.
//!
//! Every fact is data with a `source:`; this module parses and looks them up, and does
//! not decide anything on its own (the resolver and the diff apply the rules).

mod driver;
mod error;

pub use driver::{CUDA_DRIVER_FILE, DriverMinimum, DriverRequirement, DriverTable};
pub use error::RulesError;
