//! Planning: from a checked job and the catalogue to the Plan IR.

pub mod ir;
pub mod search;
