//! Where `loam emit` writes each Kubernetes file: one folder per site cluster, so that
//! `kubectl --context <site> apply -R -f out/<site>/` applies that cluster's objects and no
//! other's (deploy review, finding 10: one `apply -R -f out/` merged every site's queues and
//! flavors into one cluster, the last file winning).

use crate::Manifest;
use crate::kubernetes::{PREREQUISITES, site_label};
use std::collections::BTreeMap;

/// The sites of each job's or service's folder, as folder labels in plan order, no repeats.
#[derive(Debug, Default)]
pub struct FolderSites(BTreeMap<String, Vec<String>>);

impl FolderSites {
    /// No folder yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Records that `folder` holds objects of `sites` (the sites of its groups or roles).
    pub fn insert<'a>(&mut self, folder: String, sites: impl Iterator<Item = &'a str>) {
        let mut labels: Vec<String> = Vec::new();
        for site in sites {
            let label = site_label(site);
            if !labels.contains(&label) {
                labels.push(label);
            }
        }
        self.0.insert(folder, labels);
    }
}

/// Moves the files of [`crate::render`]'s Kubernetes layout into one folder per site:
/// `_prerequisites/<site>/F` → `<site>/_prerequisites/F`; a one-site job's `<job>/F` →
/// `<site>/<job>/F`; a job over several sites' `<job>/<site>/F` → `<site>/<job>/F`; a service's
/// `<service>/F` → `<site>/<service>/F` (its first role's site: the planner places a service's
/// roles at one site). A path of another shape is kept as it is.
pub fn by_site(manifests: Vec<Manifest>, sites: &FolderSites) -> Vec<Manifest> {
    manifests
        .into_iter()
        .map(|m| Manifest {
            path: placed(&m.path, sites),
            contents: m.contents,
        })
        .collect()
}

fn placed(path: &str, sites: &FolderSites) -> String {
    let Some((folder, rest)) = path.split_once('/') else {
        return path.to_string();
    };
    if folder == PREREQUISITES {
        return match rest.split_once('/') {
            Some((site, file)) => format!("{site}/{PREREQUISITES}/{file}"),
            None => path.to_string(),
        };
    }
    match sites.0.get(folder).map(Vec::as_slice) {
        Some([site]) => format!("{site}/{folder}/{rest}"),
        Some([_, _, ..]) => match rest.split_once('/') {
            Some((site, file)) => format!("{site}/{folder}/{file}"),
            None => path.to_string(),
        },
        _ => path.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sites() -> FolderSites {
        let mut sites = FolderSites::new();
        sites.insert("one".into(), ["shanghai", "shanghai"].into_iter());
        sites.insert("two".into(), ["shanghai", "guiyang"].into_iter());
        sites
    }

    #[test]
    fn each_file_lands_in_its_sites_folder() {
        let sites = sites();
        // A job whose two groups are at one site: one site folder.
        assert_eq!(
            placed("one/20-jobset.yaml", &sites),
            "shanghai/one/20-jobset.yaml"
        );
        assert_eq!(
            placed("two/guiyang/20-jobset.yaml", &sites),
            "guiyang/two/20-jobset.yaml"
        );
        assert_eq!(
            placed("_prerequisites/guiyang/00-namespace-a.yaml", &sites),
            "guiyang/_prerequisites/00-namespace-a.yaml"
        );
        // Nothing known about the folder: left where it is.
        assert_eq!(placed("three/x.yaml", &sites), "three/x.yaml");
    }
}
