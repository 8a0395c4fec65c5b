//! The integration tests, as one test binary: each file beside this one is a module of it.
//!
//! One binary instead of one per file: every test binary links the whole compiler and its
//! dependencies, and thirty of them filled a CI machine's disk and spent minutes linking on two
//! cores. Run one file's tests with `cargo test -p loam-tests --test suite -- FILE::`.

#[path = "support/git_repo.rs"]
mod git_repo;
#[path = "support/loam_process.rs"]
mod loam_process;
#[path = "support/lsp_client.rs"]
mod lsp_client;
#[path = "support/schedule_workload.rs"]
mod schedule_workload;

mod admission;
mod admission_sim;
mod cases;
mod catalogue_cli;
mod catalogue_default;
mod ci_comment;
mod ci_examples;
mod cli;
mod diff_git;
mod diff_pull_requests;
mod diff_replace;
mod diff_schedule;
mod doc_examples;
mod docs;
mod editors;
mod emit;
mod emit_baremetal;
mod emit_deploy_review;
mod emit_kubernetes;
mod emit_probe;
mod emit_services;
mod emit_slurm;
mod emit_tools;
mod emit_vendor;
mod examples;
mod fmt_properties;
mod hostile_fs;
mod hostile_numbers;
mod hostile_output;
mod hostile_planner;
mod hostile_trust;
mod layout_reaches_emit;
mod loamignore;
mod lsp;
mod lsp_neovim;
mod phases;
mod pipeline_memory;
mod plan;
mod plan_cache;
mod plan_schedule;
mod readme_tour;
mod report_browser;
mod report_cli;
mod report_schedule;
mod robustness;
mod runs_cli;
mod runs_serving;
mod schedule_cli;
mod schedule_properties;
mod schedule_slurm;
mod schema;
mod service_context;
mod serving_calibration;
mod tidy;
mod tree_sitter;
