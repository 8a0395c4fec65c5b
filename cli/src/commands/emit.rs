//! `loam emit`: plan the specs (or read a plan JSON) and write the manifests of one backend into
//! a folder, atomically: everything is rendered first, written into a temporary folder beside
//! the target, and renamed into place at the end, so a failing emit leaves the folder untouched.

use crate::Context;
use crate::args::{EmitArgs, EmitFlavor};
use crate::io::{self, IoError};
use crate::render::diagnostics::render_text;
use crate::session::{load_checked, threads};
use loam_backends::{Flavor, Options, SlurmVersion};
use loam_compiler::catalogue::facts;
use loam_compiler::project::plan_project;
use loam_ir::span::SourceMap;
use std::path::Path;

mod from_json;
mod probe;

/// Runs `loam emit`; exit 0 when every manifest was written, 1 on problems in the specs or plans
/// (nothing written; a plan JSON made with another catalogue is one, L4010, and so is one that
/// disagrees with the catalogue, itself or its spec, L4012), 2 on usage or I/O errors.
pub fn run(
    args: &EmitArgs,
    catalogue_dir: Option<&Path>,
    cx: &mut Context<'_>,
) -> Result<u8, IoError> {
    let slurm_version: SlurmVersion = args.slurm_version.parse().map_err(IoError)?;
    let (doc, catalogue, notes) = if args.path.extension().is_some_and(|e| e == "json") {
        // A plan file may have been edited: re-checked against the catalogue, itself and the
        // spec it names (L4010, L4012) before anything is rendered.
        match from_json::load(&args.path, catalogue_dir)? {
            Ok(checked) => (checked.doc, checked.catalogue, checked.notes),
            Err(diagnostics) => {
                cx.eprint(&render_text(&diagnostics, &SourceMap::new(), cx.color));
                cx.eprint("nothing emitted\n");
                return Ok(1);
            }
        }
    } else {
        // The same checks as `loam plan`, then the same planner; any error stops the emit.
        let specs = load_checked(std::slice::from_ref(&args.path), catalogue_dir)?;
        if specs.files.is_empty() && specs.catalogue_errors == 0 {
            cx.eprint(&crate::io::no_specs_found(std::slice::from_ref(&args.path)));
            return Ok(1);
        }
        let planned = plan_project(&specs, threads());
        if !planned.diagnostics.is_empty() {
            cx.eprint(&render_text(&planned.diagnostics, &specs.sources, cx.color));
        }
        let check_errors = specs.errors();
        let Some(catalogue) = specs.catalogue.filter(|_| !planned.has_errors()) else {
            let why = if check_errors > 0 {
                "the specs have errors"
            } else {
                "planning failed"
            };
            cx.eprint(&format!("nothing emitted: {why}\n"));
            return Ok(1);
        };
        (planned.document, catalogue, Vec::new())
    };
    let (doc, probe_steps) = match &args.probe {
        Some(job) => match loam_backends::probe::document(&doc, job, args.probe_steps) {
            Ok((probed, steps)) => (probed, Some(steps)),
            Err(message) => {
                cx.eprint(&format!("error: --probe: {message}; nothing emitted\n"));
                return Ok(2);
            }
        },
        None => (doc, None),
    };
    let target = args.backend;
    let mut options = Options {
        flavor: match args.flavor {
            Some(EmitFlavor::Volcano) => Flavor::Volcano,
            Some(EmitFlavor::Jobset) | None => Flavor::Jobset,
        },
        slurm_version,
        tenants: facts::tenancies(&doc, &catalogue),
        node_groups: facts::node_group_devices(&doc, &catalogue),
        sites: facts::site_node_groups(&doc, &catalogue),
        ..Options::new(facts::vendors(&catalogue))
    };
    if let Some(image) = &args.image {
        options.image.clone_from(image);
    }
    options
        .checkpoint_storage_class
        .clone_from(&args.checkpoint_storage_class);
    if let Some(ranges) = &args.rendezvous_source_ranges {
        options.rendezvous_source_ranges = ranges
            .split(',')
            .map(str::trim)
            .filter(|r| !r.is_empty())
            .map(str::to_string)
            .collect();
    }
    if let Some(image) = &args.serving_image {
        options.serving_image = Some(image.clone());
    }
    options.window_image.clone_from(&args.window_image);
    options.probe_steps = probe_steps;
    if let Some(trainer) = &args.trainer {
        options.trainer = trainer.split_whitespace().map(str::to_string).collect();
    }
    let manifests = match loam_backends::render_by_site(&doc, target, &options) {
        Ok(manifests) => manifests,
        Err(diagnostics) => {
            cx.eprint(&render_text(&diagnostics, &SourceMap::new(), cx.color));
            cx.eprint("nothing emitted\n");
            return Ok(1);
        }
    };
    io::emit_folder::write_dir(&args.out, &manifests, args.force)?;
    let services = if doc.services.is_empty() {
        String::new()
    } else {
        format!(
            " and {} {}",
            doc.services.len(),
            crate::commands::check::plural(doc.services.len(), "service")
        )
    };
    for note in &notes {
        cx.eprint(note);
    }
    for need in loam_backends::still_to_provide(&doc, target, &options) {
        cx.eprint(&format!("still to provide: {need}\n"));
    }
    if let (Some(job), Some(steps)) = (&args.probe, probe_steps) {
        cx.eprint(&probe::read_back(job, steps, target));
    }
    cx.print(&format!(
        "wrote {} {} for {} {}{services} to {}\n",
        manifests.len(),
        crate::commands::check::plural(manifests.len(), "file"),
        doc.plans.len(),
        crate::commands::check::plural(doc.plans.len(), "job"),
        io::display(&args.out)
    ));
    Ok(0)
}
