//! `--max-fail` and `--batch` values: a count (`2`) or a share of the selected nodes
//! (`25%`), and `--batch`'s list of them (Ansible's `serial`: `1,10%,100%`).

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

/// `--batch`: the sizes of the batches in order, each a [`Threshold`] of the whole
/// fleet, the last repeated until every node is taken (Ansible's `serial` list), e.g.
/// `1,10%,100%`: a canary, then a tenth of the fleet, then the rest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BatchList(Vec<Threshold>);

impl BatchList {
    /// The size of each batch for a fleet of `total`, e.g. `1,50%,100%` of 4 nodes is
    /// `[1, 2, 1]`: each entry at least one node and at most what is left.
    pub fn sizes(&self, total: usize) -> Vec<usize> {
        let mut sizes = Vec::new();
        let mut left = total;
        let last = self.0.last().copied().unwrap_or(Threshold::Percent(100));
        let mut entries = self.0.iter().copied();
        while left > 0 {
            let size = entries.next().unwrap_or(last).of(total).clamp(1, left);
            sizes.push(size);
            left -= size;
        }
        sizes
    }
}

impl FromStr for BatchList {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let entries = text
            .split(',')
            .map(|entry| match entry.trim().parse::<Threshold>() {
                Ok(Threshold::Count(0)) => Err(format!(
                    "`{}`: a batch takes at least one node",
                    entry.trim()
                )),
                other => other,
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Self(entries))
    }
}

impl fmt::Display for BatchList {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (index, entry) in self.0.iter().enumerate() {
            if index > 0 {
                f.write_str(",")?;
            }
            write!(f, "{entry}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sizes(list: &str, total: usize) -> Result<Vec<usize>, String> {
        list.parse::<BatchList>().map(|list| list.sizes(total))
    }

    #[test]
    fn a_batch_list_is_ansibles_serial() {
        assert_eq!(sizes("1,50%,100%", 4), Ok(vec![1, 2, 1]));
        assert_eq!(sizes("1,10%,100%", 20), Ok(vec![1, 2, 17]));
        // The last entry repeats until every node is taken.
        assert_eq!(sizes("1,2", 7), Ok(vec![1, 2, 2, 2]));
        assert_eq!(sizes("4", 10), Ok(vec![4, 4, 2]));
        assert_eq!(sizes("25%", 8), Ok(vec![2, 2, 2, 2]));
        assert_eq!(sizes(" 1 , 100% ", 3), Ok(vec![1, 2]));
        // More entries than nodes: the batches end with the nodes.
        assert_eq!(sizes("1,1,1,1", 2), Ok(vec![1, 1]));
        assert_eq!(sizes("1,10%", 0), Ok(vec![]));
        assert_eq!(
            "1,10%,100%".parse::<BatchList>().map(|l| l.to_string()),
            Ok("1,10%,100%".to_string())
        );
        for bad in ["", "1,", "0", "1,0,2", "1;2", "150%", "-1"] {
            assert!(bad.parse::<BatchList>().is_err(), "{bad}");
        }
    }

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
