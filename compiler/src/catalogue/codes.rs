//! The diagnostic codes the catalogue phase emits: L20xx for loading the catalogue, L21xx for
//! checking jobs against it. They are registered (with their pages) in
//! `diagnostics/codes/catalogue.rs`; this re-export keeps the catalogue's call sites short.

pub use loam_ir::diagnostics::codes::catalogue::*;
