//! "Did you mean": the project names closest to a name no index has, by edit distance
//! with adjacent transpositions (`torchaudoi` → `torchaudio`).

use pep508_rs::PackageName;

/// Up to three names within a small edit distance of `name`, closest first.
pub fn closest<'a>(
    name: &PackageName,
    known: impl Iterator<Item = &'a PackageName>,
) -> Vec<PackageName> {
    let wanted = name.as_ref();
    let limit = if wanted.len() >= 6 { 2 } else { 1 };
    let mut found: Vec<(usize, &PackageName)> = known
        .filter(|candidate| *candidate != name)
        .map(|candidate| (distance(wanted, candidate.as_ref()), candidate))
        .filter(|(distance, _)| *distance <= limit)
        .collect();
    found.sort();
    found.dedup_by(|a, b| a.1 == b.1);
    found
        .into_iter()
        .take(3)
        .map(|(_, candidate)| candidate.clone())
        .collect()
}

/// Optimal string alignment distance: insertions, deletions, substitutions and swaps of
/// two adjacent characters each cost one.
fn distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let width = b.len() + 1;
    let mut table = vec![0usize; (a.len() + 1) * width];
    for i in 0..=a.len() {
        table[i * width] = i;
    }
    for (j, cell) in table.iter_mut().enumerate().take(width) {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut best = (table[(i - 1) * width + j] + 1)
                .min(table[i * width + j - 1] + 1)
                .min(table[(i - 1) * width + j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                best = best.min(table[(i - 2) * width + j - 2] + 1);
            }
            table[i * width + j] = best;
        }
    }
    table[a.len() * width + b.len()]
}

#[cfg(test)]
mod tests {
    use std::str::FromStr;

    use super::*;

    #[test]
    fn suggests_transpositions_and_typos() {
        let known: Vec<PackageName> = ["torchaudio", "torch", "torchvision", "six"]
            .iter()
            .map(|name| PackageName::from_str(name).unwrap())
            .collect();
        let name = PackageName::from_str("torchaudoi").unwrap();
        assert_eq!(closest(&name, known.iter())[0].as_ref(), "torchaudio");
        let name = PackageName::from_str("vllm").unwrap();
        assert!(closest(&name, known.iter()).is_empty());
        assert_eq!(distance("abc", "acb"), 1);
        assert_eq!(distance("kitten", "sitting"), 3);
    }
}
