//! Tests of the catalogue: shipped files, fixtures per validation rule, lookups and reports.

use super::*;

#[test]
fn shipped_catalogue_loads_clean() {
    let sources: Vec<_> = builtin_sources()
        .into_iter()
        .enumerate()
        .map(|(i, (p, t))| (crate::span::FileId(i as u32), p, t))
        .collect();
    let (catalogue, diags) = load(&sources);
    assert_eq!(diags, vec![], "{diags:#?}");
    let catalogue = catalogue.unwrap();
    assert_eq!(catalogue.devices.len(), 13);
}
