//! The resolver's scenario runner: packse's public suite read as data from
//! `../shared/solver-scenarios/packse/`, our own incidents from `solver-tests/scenarios/`.

#[cfg(test)]
#[path = "../solver-tests/packse.rs"]
mod packse;

#[cfg(test)]
#[path = "../solver-tests/incidents.rs"]
mod incidents;
