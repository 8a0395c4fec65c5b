//! Did-you-mean suggestions for unknown names.
//!
//! Similarity is normalised Damerau–Levenshtein (`strsim::normalized_damerau_levenshtein`, 1.0 =
//! identical), compared case-insensitively. A candidate is suggested only when its similarity is
//! at least [`MIN_SIMILARITY`]; ties go to the candidate closer in case-sensitive similarity,
//! then to the one listed first, so suggestions are deterministic.

/// The least similarity at which a known name is offered as a suggestion.
///
/// 0.5 lets one or two edits through on short names (`H100_SMX` → `H100_SXM`, `gui_yang` →
/// `guiyang`) while keeping unrelated names of similar length apart. Nickel uses 0.6 with plain
/// Levenshtein; transpositions count as one edit here, so a slightly lower bar gives the same
/// feel.
pub const MIN_SIMILARITY: f64 = 0.5;

/// Edits a place name may be away from a known one and still be taken for a typo of it: sites
/// are proper names, where a typo keeps most letters (`shanghia`, `guiyan`), while a name half
/// changed is another place (`shenzhen` is not `shanghai`; a decommissioned site must not be
/// sent to a neighbour). Counted: two edits.
pub const MAX_PLACE_EDITS: usize = 2;

/// [`closest`], held to [`MAX_PLACE_EDITS`] edits: for site names.
pub fn closest_place<'a>(
    unknown: &str,
    known: impl IntoIterator<Item = &'a str>,
) -> Option<&'a str> {
    let unknown_lower = unknown.to_lowercase();
    let near: Vec<&'a str> = known
        .into_iter()
        .filter(|k| {
            strsim::damerau_levenshtein(&unknown_lower, &k.to_lowercase()) <= MAX_PLACE_EDITS
        })
        .collect();
    closest(unknown, near)
}

/// The known name most similar to `unknown`, if any is similar enough.
pub fn closest<'a>(unknown: &str, known: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let unknown_lower = unknown.to_lowercase();
    let mut best: Option<(&'a str, (f64, f64))> = None;
    for candidate in known {
        let folded =
            strsim::normalized_damerau_levenshtein(&unknown_lower, &candidate.to_lowercase());
        let exact = strsim::normalized_damerau_levenshtein(unknown, candidate);
        let score = (folded, exact);
        if folded >= MIN_SIMILARITY && best.is_none_or(|(_, s)| score > s) {
            best = Some((candidate, score));
        }
    }
    best.map(|(name, _)| name)
}

/// The known names of the same family as `unknown`, nearest first: device ids are a family
/// stem and a variant (`H100_SXM`, `H100_HBM2e_96GB`), and a user who writes the stem (`H100`),
/// another variant (`H100_PCIe`) or the stem without its vendor prefix (`910B` for
/// `Ascend910B`) means one of that family, however far the edit distance (`H100` is closer to
/// `A10` by edits than to `H100_SXM`). Empty when no known name shares the stem.
///
/// Stems compare case-insensitively. A stem that is a prefix or a suffix of a known stem (`MI300`
/// of `MI300X`, `910B` of `Ascend910B`) counts only when it has a digit and at least 3
/// characters, so `A` or `RTX` alone do not pull in every device that starts with them.
pub fn family<'a>(unknown: &str, known: impl IntoIterator<Item = &'a str>) -> Vec<&'a str> {
    let stem_of = |name: &str| {
        name.split('_')
            .next()
            .unwrap_or_default()
            .to_ascii_lowercase()
    };
    let wanted = stem_of(unknown);
    if wanted.is_empty() {
        return Vec::new();
    }
    let partial_ok = wanted.len() >= 3 && wanted.chars().any(|c| c.is_ascii_digit());
    let mut members: Vec<(&'a str, f64)> = known
        .into_iter()
        .filter(|name| {
            let stem = stem_of(name);
            stem == wanted || (partial_ok && (stem.starts_with(&wanted) || stem.ends_with(&wanted)))
        })
        .map(|name| {
            let score = strsim::normalized_damerau_levenshtein(
                &unknown.to_lowercase(),
                &name.to_lowercase(),
            );
            (name, score)
        })
        .collect();
    members.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(b.0)));
    members.into_iter().map(|(name, _)| name).collect()
}

/// How similar a misspelling must be to one member of its family to be offered alone: one
/// edit in eight characters (`H100_SMX` → `H100_SXM`, 0.875) passes, another variant
/// (`H100_PCIe` against `H100_SXM`, 0.56) does not and gets the whole family.
const TYPO_SIMILARITY: f64 = 0.75;

/// What to offer for an unknown device id: a near-certain typo's one correction (unless the
/// id is a bare family stem); else its
/// family ([`family`]) when it has one; else the single closest id ([`closest`]); else nothing.
pub fn devices_like<'a>(
    unknown: &str,
    known: impl IntoIterator<Item = &'a str> + Clone,
) -> Vec<&'a str> {
    let nearest = closest(unknown, known.clone());
    let typo = nearest.filter(|near| {
        strsim::normalized_damerau_levenshtein(&unknown.to_lowercase(), &near.to_lowercase())
            >= TYPO_SIMILARITY
    });
    let members = family(unknown, known);
    // A bare stem (`A100`) names its family even when it is one edit from another id (`A10`).
    let bare_stem = !unknown.contains('_') && !members.is_empty();
    match typo {
        Some(near) if !bare_stem => vec![near],
        _ if members.is_empty() => nearest.into_iter().collect(),
        _ => members,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Device ids of the shipped catalogue that matter here.
    const CATALOGUE: [&str; 9] = [
        "A10",
        "A100_SXM_40GB",
        "A100_SXM_80GB",
        "Ascend910B",
        "H100_HBM2e_96GB",
        "H100_SXM",
        "H200_SXM",
        "MI300X",
        "RTX_3090",
    ];

    #[test]
    fn a_family_stem_offers_the_family_not_the_nearest_spelling() {
        // By edits alone `A10` (two edits of four letters: 0.5) ties with `H100_SXM` (four
        // added of eight: 0.5) and wins as the one listed first; the family `H100_*` is what a
        // user means. `H100_SXM` (4 extra characters of 8: 0.5) comes before
        // `H100_HBM2e_96GB` (11 extra of 15: 0.27).
        assert_eq!(closest("H100", CATALOGUE), Some("A10"));
        assert_eq!(
            devices_like("H100", CATALOGUE),
            ["H100_SXM", "H100_HBM2e_96GB"]
        );
        assert_eq!(
            devices_like("h100_pcie", CATALOGUE),
            ["H100_SXM", "H100_HBM2e_96GB"]
        );
        assert_eq!(
            devices_like("A100", CATALOGUE),
            ["A100_SXM_40GB", "A100_SXM_80GB"]
        );
        assert_eq!(devices_like("MI300", CATALOGUE), ["MI300X"]);
        assert_eq!(devices_like("910B", CATALOGUE), ["Ascend910B"]);
    }

    #[test]
    fn without_a_family_the_closest_spelling_is_offered() {
        assert_eq!(devices_like("H100SXM", CATALOGUE), ["H100_SXM"]);
        // A one-edit typo of a member is offered alone (7 of 8 alike: 0.875).
        assert_eq!(devices_like("H100_SMX", CATALOGUE), ["H100_SXM"]);
        assert_eq!(devices_like("TPUv5", CATALOGUE), Vec::<&str>::new());
        // A short stem without a digit pulls in nothing by prefix.
        assert!(family("RT", CATALOGUE).is_empty());
    }

    #[test]
    fn suggests_close_names_only() {
        let devices = ["H100_SXM", "H200_SXM", "A100_SXM_80GB", "Ascend910B"];
        assert_eq!(closest("H100_SMX", devices), Some("H100_SXM"));
        assert_eq!(closest("ascend910b", devices), Some("Ascend910B"));
        assert_eq!(closest("TPUv5", devices), None);
    }
}
