//! Where the catalogue comes from when `--catalogue` is not given: a `./specs` folder that holds
//! job specs, not `devices/` or `pools/`, is never taken for the catalogue. Loam runs as a process in
//! a folder of its own.

use crate::loam_process::loam_in;
use loam_tests::repo_root;

#[test]
fn a_specs_folder_of_job_specs_is_not_the_catalogue() {
    let dir = std::env::temp_dir().join(format!("loam-specs-folder-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("specs")).unwrap();
    let example = repo_root().join("examples/llama3-8b-finetune.loam");
    std::fs::copy(&example, dir.join("specs/llama3-8b-finetune.loam")).unwrap();

    let (code, out, err) = loam_in(&dir, &["check", "specs"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("checked 1 file, 1 job: no problems"), "{out}");
    // With the built-in catalogue the job plans; the folder was read as specs only.
    let (code, out, err) = loam_in(&dir, &["plan", "specs/llama3-8b-finetune.loam"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("llama3-8b-sft"), "{out}");
    // A `specs/` that is a catalogue is still taken for one.
    std::fs::create_dir_all(dir.join("specs/devices")).unwrap();
    let (code, _, err) = loam_in(&dir, &["check", "specs/llama3-8b-finetune.loam"]);
    assert_eq!(
        code, 1,
        "an empty catalogue folder must be read (and fail): {err}"
    );

    let _ = std::fs::remove_dir_all(&dir);
}
