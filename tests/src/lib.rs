//! The fixture harness of loam's end-to-end tests: splits multi-file fixtures, runs the phases
//! through one helper each, renders results without colour at width 80.
//!
//! A fixture is a text file. Several virtual files are separated by header lines
//! `--- name.loam ---`; a fixture without a header is one file named after the fixture.
//! Specs are checked against the built-in catalogue; a virtual file named
//! `--- catalogue/pools/<ID>.yaml ---` (or `catalogue/devices/…`) adds to it or replaces the
//! built-in file of that name.

pub mod browser;
pub mod tools;

use loam_cli::render::diagnostics::render_text;
use loam_compiler::catalogue::builtin_sources;
use loam_compiler::project::{CheckedProject, ProjectFiles, check_project, plan_project};

/// One virtual file of a fixture.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VirtualFile {
    /// Its name, e.g. `main.loam`.
    pub name: String,
    /// Its text.
    pub text: String,
}

/// Splits a fixture into its virtual files (`--- name ---` headers).
pub fn split_fixture(default_name: &str, fixture: &str) -> Vec<VirtualFile> {
    let mut files: Vec<VirtualFile> = Vec::new();
    for line in fixture.split_inclusive('\n') {
        let trimmed = line.trim_end();
        if let Some(name) = trimmed
            .strip_prefix("--- ")
            .and_then(|rest| rest.strip_suffix(" ---"))
        {
            files.push(VirtualFile {
                name: name.to_string(),
                text: String::new(),
            });
        } else if let Some(last) = files.last_mut() {
            last.text.push_str(line);
        } else {
            files.push(VirtualFile {
                name: default_name.to_string(),
                text: line.to_string(),
            });
        }
    }
    if files.is_empty() {
        files.push(VirtualFile {
            name: default_name.to_string(),
            text: String::new(),
        });
    }
    files
}

/// The catalogue texts of a fixture: the built-in catalogue, with each virtual file named
/// `catalogue/devices/<ID>.yaml` or `catalogue/pools/<ID>.yaml` added (or replacing the built-in
/// file of the same name).
pub fn catalogue_texts(files: &[VirtualFile]) -> Vec<(String, String)> {
    let virtual_files: Vec<&VirtualFile> = files
        .iter()
        .filter(|f| f.name.starts_with("catalogue/"))
        .collect();
    let replaced = |builtin: &str| {
        let rest = builtin.strip_prefix("specs/").unwrap_or(builtin);
        virtual_files
            .iter()
            .any(|f| f.name.strip_prefix("catalogue/") == Some(rest))
    };
    let mut texts: Vec<(String, String)> = builtin_sources()
        .into_iter()
        .filter(|(path, _)| !replaced(path))
        .map(|(path, text)| (path.to_string(), text.to_string()))
        .collect();
    texts.extend(
        virtual_files
            .iter()
            .map(|f| (f.name.clone(), f.text.clone())),
    );
    texts
}

/// The fixture as the core's project input: the catalogue (see [`catalogue_texts`]) and every
/// `.loam` file.
pub fn project_files(files: &[VirtualFile]) -> ProjectFiles {
    ProjectFiles {
        catalogue: catalogue_texts(files),
        specs: files
            .iter()
            .filter(|f| f.name.ends_with(".loam"))
            .map(|f| (f.name.clone(), f.text.clone().into_bytes()))
            .collect(),
    }
}

/// Checks the fixture through the core's one entry point, as `loam check` does: a broken
/// catalogue file blocks the specs that use it (L2121), and a catalogue that does not load at
/// all gives only its own diagnostics.
pub fn check_files(files: &[VirtualFile]) -> CheckedProject {
    check_project(project_files(files), 1)
}

/// The one helper every check fixture goes through: the rendered diagnostics of the fixture,
/// no colour, width 80.
pub fn check(default_name: &str, fixture: &str) -> String {
    let specs = check_files(&split_fixture(default_name, fixture));
    if specs.diagnostics.is_empty() {
        return match specs.services.len() {
            0 => format!("no diagnostics ({} jobs)\n", specs.jobs.len()),
            1 => format!("no diagnostics ({} jobs, 1 service)\n", specs.jobs.len()),
            n => format!("no diagnostics ({} jobs, {n} services)\n", specs.jobs.len()),
        };
    }
    render_text(&specs.diagnostics, &specs.sources, false)
}

/// The rendered diagnostics of checking and planning the fixture, as `loam plan` shows them.
pub fn plan(default_name: &str, fixture: &str) -> String {
    let specs = check_files(&split_fixture(default_name, fixture));
    let planned = plan_project(&specs, 1);
    if planned.diagnostics.is_empty() {
        return format!("no diagnostics ({} plans)\n", planned.document.plans.len());
    }
    render_text(&planned.diagnostics, &specs.sources, false)
}

/// The snapshot body of a fixture: the source and the rendered output together.
pub fn snapshot(source: &str, output: &str) -> String {
    format!("----- SOURCE\n{source}\n----- OUTPUT\n{output}")
}

/// Runs the CLI in-process: exit code, stdout, stderr.
pub fn run_cli(args: &[&str], stdin: &str) -> (u8, String, String) {
    let mut out = Vec::new();
    let mut err = Vec::new();
    let mut input = stdin.as_bytes();
    let mut argv = vec!["loam", "--color", "never"];
    argv.extend_from_slice(args);
    let code = loam_cli::run(argv, &mut out, &mut err, &mut input);
    (
        code,
        String::from_utf8_lossy(&out).into_owned(),
        String::from_utf8_lossy(&err).into_owned(),
    )
}

/// The repository root (the parent of this crate's folder).
pub fn repo_root() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(std::path::Path::to_path_buf)
        .unwrap_or_default()
}

/// Copies the shipped catalogue's `devices/` and `pools/` into `dir` (a catalogue folder a
/// test may change or add to).
pub fn copy_shipped_catalogue(dir: &std::path::Path) {
    for sub in ["devices", "pools"] {
        std::fs::create_dir_all(dir.join(sub)).unwrap();
        for entry in std::fs::read_dir(repo_root().join("specs").join(sub)).unwrap() {
            let path = entry.unwrap().path();
            std::fs::copy(&path, dir.join(sub).join(path.file_name().unwrap())).unwrap();
        }
    }
}

/// A copy of the shipped catalogue in `dir/specs` and `spec` planned against it, its Plan JSON
/// written to `dir/plan.json`: (the catalogue folder, the plan's path, the Plan JSON). What a
/// runs-store test starts from: a repository's catalogue and the plan a job ran with.
pub fn planned_on_shipped_catalogue(
    dir: &std::path::Path,
    spec: &std::path::Path,
) -> (String, String, serde_json::Value) {
    let specs = dir.join("specs");
    copy_shipped_catalogue(&specs);
    let catalogue = specs.to_string_lossy().into_owned();
    let (code, out, err) = run_cli(
        &[
            "--catalogue",
            &catalogue,
            "plan",
            &spec.to_string_lossy(),
            "--format",
            "json",
        ],
        "",
    );
    assert_eq!(code, 0, "{err}");
    let plan = dir.join("plan.json");
    std::fs::write(&plan, &out).unwrap();
    let doc = serde_json::from_str(&out).unwrap();
    (catalogue, plan.to_string_lossy().into_owned(), doc)
}

/// The MoE job of `tests/cases/plan/moe-deduplicated-dispatch-over-nodes.loam` (64 experts in 8
/// groups, a token picking from 2, its 32 expert ranks pinned over 4 H100 nodes) with its
/// `expert_dispatch` set to `dispatch`, or left out for `None`.
pub fn routed_moe(dispatch: Option<&str>) -> String {
    let path = repo_root().join("tests/cases/plan/moe-deduplicated-dispatch-over-nodes.loam");
    let text = std::fs::read_to_string(path).unwrap();
    let line = "    expert_dispatch = deduplicated\n";
    assert!(text.contains(line), "{text}");
    let with = dispatch.map_or(String::new(), |d| format!("    expert_dispatch = {d}\n"));
    text.replace(line, &with)
}

/// The backends' options with the shipped catalogue's vendor facts, loaded once: what the emit
/// tests render with unless they say otherwise.
pub fn shipped_options() -> loam_backends::Options {
    static VENDORS: std::sync::OnceLock<loam_ir::cluster::vendor::Vendors> =
        std::sync::OnceLock::new();
    let vendors = VENDORS.get_or_init(|| {
        loam_compiler::catalogue::facts::vendors(&loam_compiler::catalogue::builtin())
    });
    loam_backends::Options::new(vendors.clone())
}
