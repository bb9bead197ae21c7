//! cuda-upgrade: moves GPU nodes from one CUDA software stack to another.
//!
//! The pipeline flows one way: a [`manifest`] is checked against [`rules`], resolved,
//! planned per node from [`facts`] and applied. This crate root is only the table of
//! contents.

pub mod abi;
pub mod calendar;
pub mod cli;
pub mod commands;
pub mod converge;
pub mod cuda;
pub mod exec;
pub mod facts;
pub mod fleet;
pub mod index;
pub mod inventory;
pub mod local_file;
pub mod managed_block;
pub mod manifest;
pub mod pep508;
pub mod plan;
pub mod printer;
pub mod report;
pub mod resolve;
pub mod rules;
pub mod settings;
pub mod shell;
pub mod steps;
pub mod text;
pub mod transport;
