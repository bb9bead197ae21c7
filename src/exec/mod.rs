//! The executor: everything that talks to nodes through a transport.
//!
//! Gathering facts is the first thing it does on a node; later stages (steps, the
//! verification launch) run here too. Everything before the executor is pure.

mod apply;
pub mod benchmark;
pub mod build_requirements;
pub mod environment;
mod error;
mod facts;
pub mod journal;
pub mod launch;
mod node;
pub mod node_lock;
mod reporter;
mod send;
pub mod service;

pub use apply::{
    Applied, ApplyContext, StepFailure, StepOutcome, apply_step, apply_step_writing, verify,
    written_paths,
};
pub use error::ExecError;
pub use facts::gather_facts;
pub use node::{NodeSelection, connect};
pub use reporter::{QuietReporter, Reporter};
pub use send::{held, local_copy, send_all};
