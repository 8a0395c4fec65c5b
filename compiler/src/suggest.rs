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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggests_close_names_only() {
        let devices = ["H100_SXM", "H200_SXM", "A100_SXM_80GB", "Ascend910B"];
        assert_eq!(closest("H100_SMX", devices), Some("H100_SXM"));
        assert_eq!(closest("ascend910b", devices), Some("Ascend910B"));
        assert_eq!(closest("TPUv5", devices), None);
    }
}
