//! The resolver's scenario runner: packse's public suite read as data from
//! `solver-tests/packse/`, our own incidents from `solver-tests/scenarios/`.

#[cfg(test)]
#[path = "../solver-tests/packse.rs"]
mod packse;

#[cfg(test)]
#[path = "../solver-tests/incidents.rs"]
mod incidents;

#[cfg(test)]
#[path = "../solver-tests/brute_force.rs"]
mod brute_force;

#[cfg(test)]
#[path = "../solver-tests/choice.rs"]
mod choice;

#[cfg(test)]
#[path = "../solver-tests/cli.rs"]
mod cli;

#[cfg(test)]
#[path = "../solver-tests/reports.rs"]
mod reports;

#[cfg(test)]
#[expect(dead_code, reason = "the scenarios use only the wheel builder")]
mod support;
