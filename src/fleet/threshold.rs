//! `--max-fail` and `--batch` values: a count (`2`) or a share of the selected nodes
//! (`25%`).

use std::fmt;
use std::str::FromStr;

/// A number of nodes, absolute or a percentage of the fleet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Threshold {
    /// e.g. `2`.
    Count(usize),
    /// e.g. `25%` (1 to 100).
    Percent(u8),
}

impl Threshold {
    /// The number of nodes this means for a fleet of `total`: a percentage rounds up so
    /// that `--batch 10%` of 4 nodes is one node, never none.
    pub fn of(self, total: usize) -> usize {
        match self {
            Self::Count(count) => count,
            Self::Percent(percent) => (total * usize::from(percent)).div_ceil(100),
        }
    }
}

impl FromStr for Threshold {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let text = text.trim();
        if let Some(percent) = text.strip_suffix('%') {
            return match percent.parse::<u8>() {
                Ok(percent @ 1..=100) => Ok(Self::Percent(percent)),
                _ => Err(format!("`{text}`: a percentage is 1% to 100%")),
            };
        }
        text.parse::<usize>().map(Self::Count).map_err(|_| {
            format!("`{text}` is neither a number of nodes (`2`) nor a percentage (`25%`)")
        })
    }
}

impl fmt::Display for Threshold {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Count(count) => write!(f, "{count}"),
            Self::Percent(percent) => write!(f, "{percent}%"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_and_percentages() {
        assert_eq!("3".parse::<Threshold>().map(|t| t.of(16)), Ok(3));
        assert_eq!("25%".parse::<Threshold>().map(|t| t.of(16)), Ok(4));
        assert_eq!("10%".parse::<Threshold>().map(|t| t.of(4)), Ok(1));
        assert_eq!("100%".parse::<Threshold>().map(|t| t.of(7)), Ok(7));
        assert!("0%".parse::<Threshold>().is_err());
        assert!("101%".parse::<Threshold>().is_err());
        assert!("x".parse::<Threshold>().is_err());
    }
}
