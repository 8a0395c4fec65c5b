//! The loam language server (`loam lsp`): diagnostics, completion, hover, go to definition,
//! document symbols, folding, formatting and quick fixes for `*.loam` specs, over the Language
//! Server Protocol on standard input and output.
//!
//! Everything it says comes from the compiler core: a document is checked through
//! [`loam_compiler::project::check_project`] as `loam check` checks it, formatted by
//! [`loam_compiler::fmt::format_source`] as `loam fmt` formats it, and a catalogue name is shown
//! as `loam catalogue show` shows it. The server reads no file itself: the CLI hands it the
//! catalogue's files through a [`CatalogueLoader`].

mod actions;
mod complete;
mod context;
mod convert;
mod document;
mod navigate;
mod outline;
pub mod schema;
mod server;
mod summary;
mod uri;
mod workspace;

pub use server::serve;

use lsp_server::Connection;
use std::path::Path;

/// Reads the catalogue for a workspace root (`None` when the editor named none): its
/// `(path, text)` files, with absolute paths for files on disk so that go to definition can
/// open them. The CLI's rules apply (`--catalogue DIR`, else `ROOT/specs` when it is one, else
/// the built-in catalogue).
pub type CatalogueLoader<'a> = dyn Fn(Option<&Path>) -> Result<Vec<(String, String)>, String> + 'a;

/// Serves one client on standard input and output until it says `exit` (or closes the input).
pub fn serve_stdio(loader: &CatalogueLoader<'_>) -> Result<(), String> {
    let (connection, io_threads) = Connection::stdio();
    serve(&connection, loader)?;
    // The writer thread ends once every sender of the connection is gone.
    drop(connection);
    io_threads.join().map_err(|e| e.to_string())
}
