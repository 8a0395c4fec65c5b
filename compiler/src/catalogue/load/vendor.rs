//! Reading a vendor file (`vendors/<id>.yaml`): the facts the planner and the backends need about
//! a vendor's software, each name checked with the rule of the manifest it lands in.

use super::Cx;
use crate::catalogue::codes;
use crate::catalogue::raw::{self, Loc};
use loam_ir::cluster::vendor::Vendor;
use loam_ir::diagnostics::Diagnostic;
use loam_ir::names::{is_env_name, is_plain_word};
use std::collections::BTreeMap;

/// The placeholders a slice-resource template may hold.
const SLICE_PLACEHOLDERS: &[&str] = &["{resource}", "{profile}"];

impl Cx<'_, '_> {
    /// The vendor this file describes, or `None` (with diagnostics) when it cannot be read. A
    /// vendor with a wrong value is still returned, so its devices resolve and its problems are
    /// not reported again as unknown vendors (the diagnostics already fail the catalogue).
    pub(super) fn vendor(&mut self) -> Option<Vendor> {
        let raw: raw::VendorFile = self.read_as("vendor", |f: &raw::VendorFile| &f.id)?;
        self.manifest_name(&raw.collective.library, "collective.library", is_plain_word);
        self.manifest_name(&raw.slurm_gres, "slurm_gres", is_plain_word);
        let mut collective_env = BTreeMap::new();
        for (name, value) in &raw.collective.env {
            if !is_env_name(name) || value.value.chars().any(char::is_control) {
                let d = Diagnostic::error(
                    codes::INVALID_NAME,
                    format!(
                        "expected an environment variable name and a value without control characters, found `{}`",
                        name.escape_debug()
                    ),
                    self.span(value),
                    "the value of this variable",
                )
                .with_help("name variables with letters, digits and `_`, e.g. `NCCL_IB_HCA`");
                self.push(d);
            }
            collective_env.insert(name.clone(), value.value.clone());
        }
        if let Some(template) = &raw.slice_resource {
            self.slice_template(template);
        }
        let mut images = BTreeMap::new();
        for (engine, image) in &raw.serving.images {
            self.manifest_name(image, "serving.images", is_image);
            images.insert(*engine, image.value.clone());
        }
        let mut unpublished = BTreeMap::new();
        for (engine, how) in &raw.serving.unpublished {
            self.unpublished(*engine, how, &images);
            unpublished.insert(*engine, how.value.clone());
        }
        let default_engine = raw.serving.default_engine.value;
        if !images.contains_key(&default_engine) {
            let d = Diagnostic::error(
                codes::INCONSISTENT,
                format!("default engine `{default_engine}` has no image in `serving.images`"),
                self.span(&raw.serving.default_engine),
                "an engine the vendor's devices do not run",
            )
            .with_help(format!(
                "add an image for `{default_engine}` under `serving.images`, or choose one of the engines listed there"
            ));
            self.push(d);
        }
        Some(Vendor {
            id: raw.id.value.clone(),
            id_span: self.span(&raw.id),
            name: raw.name.value,
            collective: raw.collective.library.value,
            collective_env,
            rank_table: raw.collective.rank_table,
            slurm_gres: raw.slurm_gres.value,
            slice_resource: raw.slice_resource.map(|t| t.value),
            default_engine,
            images,
            unpublished,
            file: self.source.path.to_string(),
        })
    }

    /// Checks an `unpublished` entry: its engine has an image (the name the team's build is
    /// pushed as) and the sentence saying how to build it is one line of text.
    fn unpublished(
        &mut self,
        engine: loam_ir::types::Engine,
        how: &Loc<String>,
        images: &BTreeMap<loam_ir::types::Engine, String>,
    ) {
        if !images.contains_key(&engine) {
            let d = Diagnostic::error(
                codes::INCONSISTENT,
                format!("unpublished engine `{engine}` has no image in `serving.images`"),
                self.span(how),
                "an engine the vendor's devices do not run",
            )
            .with_help(format!(
                "add the name the team's build of `{engine}` is pushed as under `serving.images`"
            ));
            self.push(d);
        }
        if how.value.trim().is_empty() || how.value.chars().any(char::is_control) {
            let d = Diagnostic::error(
                codes::INVALID_NAME,
                "expected one line saying how to build the image",
                self.span(how),
                "empty, or holds control characters",
            )
            .with_help(
                "write one sentence, e.g. `build it from the engine's Dockerfile for this device`",
            );
            self.push(d);
        }
    }

    /// Checks a slice-resource template: it names the profile, holds no other placeholder, and
    /// with both filled in it is a plain resource name.
    fn slice_template(&mut self, template: &Loc<String>) {
        let mut rest = template.value.clone();
        for placeholder in SLICE_PLACEHOLDERS {
            rest = rest.replace(placeholder, "x");
        }
        let names_profile = template.value.contains("{profile}");
        let resource_like = |s: &str| {
            s.split_once('/')
                .map_or(is_plain_word(s), |(domain, name)| {
                    is_plain_word(domain) && is_plain_word(name)
                })
        };
        if names_profile && resource_like(&rest) {
            return;
        }
        let d = Diagnostic::error(
            codes::INVALID_NAME,
            format!(
                "`slice_resource` cannot name a Kubernetes resource: `{}`",
                template.value.escape_debug()
            ),
            self.span(template),
            "not a resource template",
        )
        .with_help(
            "write a resource name with `{profile}` and optionally `{resource}`, e.g. `nvidia.com/mig-{profile}`",
        );
        self.push(d);
    }
}

/// Whether `s` reads as a container image reference (`registry/path:tag`): letters, digits and
/// `.`, `_`, `-`, `/`, `:`, `@`, starting with a letter or digit.
fn is_image(s: &str) -> bool {
    s.starts_with(|c: char| c.is_ascii_alphanumeric())
        && s.len() <= 255
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | '/' | ':' | '@'))
}
