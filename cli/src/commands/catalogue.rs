//! `loam catalogue list|show ID`: what the catalogue holds, as text or JSON.

use crate::Context;
use crate::args::{CatalogueArgs, CatalogueCommand, OutputFormat};
use crate::render::diagnostics::render_text;
use crate::session::load_catalogue_only;
use loam_compiler::catalogue::{list_json, list_text, show_json, show_text};
use std::path::Path;

/// Runs `loam catalogue`; exit 0, 1 when the catalogue is broken or the id is unknown.
pub fn run(
    args: &CatalogueArgs,
    catalogue_dir: Option<&Path>,
    cx: &mut Context<'_>,
) -> Result<u8, crate::io::IoError> {
    let loaded = load_catalogue_only(catalogue_dir)?;
    if !loaded.diagnostics.is_empty() {
        cx.eprint(&render_text(&loaded.diagnostics, &loaded.sources, cx.color));
    }
    let errors = loaded.catalogue_errors;
    // A catalogue loaded without its broken files is not the catalogue: nothing is listed.
    let Some(catalogue) = loaded.catalogue.filter(|_| errors == 0) else {
        cx.eprint(&format!(
            "the catalogue has {errors} {}\n",
            super::check::plural(errors, "error")
        ));
        return Ok(1);
    };
    match &args.command {
        CatalogueCommand::List { format } => {
            match format {
                OutputFormat::Text => cx.print(&list_text(&catalogue)),
                OutputFormat::Json => cx.print_json(&list_json(&catalogue)),
            }
            Ok(0)
        }
        CatalogueCommand::Show { id, format } => {
            let shown = match format {
                OutputFormat::Text => show_text(&catalogue, id).map(|text| cx.print(&text)),
                OutputFormat::Json => show_json(&catalogue, id).map(|value| cx.print_json(&value)),
            };
            match shown {
                Ok(()) => Ok(0),
                Err(unknown) => {
                    cx.eprint(&format!("error: {unknown}\n"));
                    Ok(1)
                }
            }
        }
    }
}
