//! Checkpoint paths: one parser and one rule for where a job's checkpoints may go.
//!
//! The checker (L1018), the catalogue (tenant roots, L2017), the check of a job against its
//! tenant (L2115), the planner's default path and the backends (L4003) all use this module, so
//! no phase accepts a path that a later one refuses.
//!
//! A checkpoint path is a clean absolute path: it starts with `/` and has no empty, `.` or `..`
//! segments and no control characters; one trailing `/` is dropped. A job's checkpoints go in a
//! folder strictly below its tenant's root (never the root itself, which all the tenant's jobs
//! share); without `path` in the spec, that folder is `<root>/<job name>`.

use serde::Serialize;
use std::fmt;

/// A clean absolute path, normalised: `/`, or `/a/b` without a trailing `/`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(transparent)]
pub struct CheckpointPath(String);

/// Why a text is not a clean absolute path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PathProblem {
    /// It does not start with `/`.
    NotAbsolute,
    /// A segment is `.` or `..`.
    DotSegment,
    /// Two `/` in a row.
    EmptySegment,
    /// A control character (a line break, a tab …).
    ControlCharacter,
}

impl fmt::Display for PathProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            PathProblem::NotAbsolute => "the path is not absolute",
            PathProblem::DotSegment => "the path contains `.` or `..`",
            PathProblem::EmptySegment => "the path contains an empty component",
            PathProblem::ControlCharacter => "the path contains a control character",
        })
    }
}

/// Why a clean path is not a folder for one job's checkpoints below a tenant's root.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RootProblem {
    /// The path is the root itself, which every job of the tenant shares.
    TheRoot,
    /// The path is not below the root.
    Outside,
}

/// Why a job's name cannot name its default checkpoint folder (`<root>/<job name>`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FolderProblem {
    /// The name is empty, `.` or `..`.
    NotAName,
    /// The name contains `/`.
    Slash,
    /// The name contains a control character.
    ControlCharacter,
    /// The name is longer than file systems allow for one folder name.
    TooLong,
}

/// The longest folder name most file systems accept, in bytes.
pub const MAX_FOLDER_NAME: usize = 255;

impl fmt::Display for FolderProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            FolderProblem::NotAName => "it is empty, `.` or `..`",
            FolderProblem::Slash => "it contains `/`",
            FolderProblem::ControlCharacter => "it contains a control character",
            FolderProblem::TooLong => "it is longer than 255 bytes",
        })
    }
}

impl CheckpointPath {
    /// Reads `text` as a clean absolute path; one trailing `/` is dropped.
    pub fn parse(text: &str) -> Result<Self, PathProblem> {
        let Some(body) = text.strip_prefix('/') else {
            return Err(PathProblem::NotAbsolute);
        };
        let mut segments: Vec<&str> = body.split('/').collect();
        // `/` is the root; `/a/` is `/a`, but `//` has an empty segment.
        if body.is_empty() || (segments.len() > 1 && segments.last() == Some(&"")) {
            segments.pop();
        }
        if segments.iter().any(|s| *s == "." || *s == "..") {
            Err(PathProblem::DotSegment)
        } else if segments.iter().any(|s| s.is_empty()) {
            Err(PathProblem::EmptySegment)
        } else if text.chars().any(char::is_control) {
            Err(PathProblem::ControlCharacter)
        } else {
            Ok(CheckpointPath(format!("/{}", segments.join("/"))))
        }
    }

    /// The normalised path.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// This path relative to `root` (`a/b` for `/ckpt/nlp/a/b` below `/ckpt/nlp`), when it is
    /// strictly below it.
    pub fn relative_to(&self, root: &CheckpointPath) -> Result<&str, RootProblem> {
        if self == root {
            return Err(RootProblem::TheRoot);
        }
        let rest = if root.0 == "/" {
            self.0.strip_prefix('/')
        } else {
            self.0
                .strip_prefix(root.0.as_str())
                .and_then(|rest| rest.strip_prefix('/'))
        };
        rest.filter(|r| !r.is_empty()).ok_or(RootProblem::Outside)
    }

    /// Why `name` cannot be one folder below a root, if it cannot.
    pub fn folder_name_problem(name: &str) -> Option<FolderProblem> {
        if name.is_empty() || name == "." || name == ".." {
            Some(FolderProblem::NotAName)
        } else if name.contains('/') {
            Some(FolderProblem::Slash)
        } else if name.chars().any(char::is_control) {
            Some(FolderProblem::ControlCharacter)
        } else if name.len() > MAX_FOLDER_NAME {
            Some(FolderProblem::TooLong)
        } else {
            None
        }
    }

    /// Where a job's checkpoints go when its spec gives no `path`: the folder named after the
    /// job below this root, `<root>/<job name>`.
    pub fn job_folder(&self, job: &str) -> Result<CheckpointPath, FolderProblem> {
        match Self::folder_name_problem(job) {
            Some(problem) => Err(problem),
            None if self.0 == "/" => Ok(CheckpointPath(format!("/{job}"))),
            None => Ok(CheckpointPath(format!("{}/{job}", self.0))),
        }
    }
}

impl fmt::Display for CheckpointPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn path(text: &str) -> CheckpointPath {
        CheckpointPath::parse(text).unwrap()
    }

    #[test]
    fn paths_are_clean_and_absolute() {
        assert_eq!(path("/ckpt/nlp/").as_str(), "/ckpt/nlp");
        assert_eq!(path("/").as_str(), "/");
        assert_eq!(
            CheckpointPath::parse("ckpt/nlp"),
            Err(PathProblem::NotAbsolute)
        );
        assert_eq!(
            CheckpointPath::parse("/ckpt/nlp/../vision"),
            Err(PathProblem::DotSegment)
        );
        assert_eq!(
            CheckpointPath::parse("/ckpt/./nlp//a"),
            Err(PathProblem::DotSegment)
        );
        assert_eq!(CheckpointPath::parse("//"), Err(PathProblem::EmptySegment));
        assert_eq!(
            CheckpointPath::parse("/ckpt//nlp"),
            Err(PathProblem::EmptySegment)
        );
        assert_eq!(
            CheckpointPath::parse("/ckpt/nlp//"),
            Err(PathProblem::EmptySegment)
        );
        assert_eq!(
            CheckpointPath::parse("/ckpt/nlp/a\nb"),
            Err(PathProblem::ControlCharacter)
        );
    }

    #[test]
    fn checkpoints_stay_strictly_below_the_root() {
        let root = path("/ckpt/nlp");
        assert_eq!(path("/ckpt/nlp/a/b").relative_to(&root), Ok("a/b"));
        assert_eq!(
            path("/ckpt/nlp/a/").relative_to(&path("/ckpt/nlp/")),
            Ok("a")
        );
        assert_eq!(
            path("/ckpt/nlp/").relative_to(&root),
            Err(RootProblem::TheRoot)
        );
        assert_eq!(
            path("/ckpt/nlp2/a").relative_to(&root),
            Err(RootProblem::Outside)
        );
        assert_eq!(path("/ckpt").relative_to(&root), Err(RootProblem::Outside));
        assert_eq!(path("/a").relative_to(&path("/")), Ok("a"));
        assert_eq!(path("/").relative_to(&path("/")), Err(RootProblem::TheRoot));
    }

    #[test]
    fn the_default_folder_is_below_the_root() {
        for root in ["/", "/ckpt/nlp"] {
            let root = path(root);
            for job in ["demo", "Llama 3 70B", "x'y\"z $(rm -rf ~)", "名前", "-a"] {
                let folder = root.job_folder(job).unwrap();
                assert_eq!(CheckpointPath::parse(folder.as_str()), Ok(folder.clone()));
                assert_eq!(folder.relative_to(&root), Ok(job));
            }
        }
        let root = path("/ckpt/nlp");
        assert_eq!(root.job_folder("a/b"), Err(FolderProblem::Slash));
        assert_eq!(root.job_folder(".."), Err(FolderProblem::NotAName));
        assert_eq!(root.job_folder(""), Err(FolderProblem::NotAName));
        assert_eq!(
            root.job_folder("a\tb"),
            Err(FolderProblem::ControlCharacter)
        );
        assert_eq!(
            root.job_folder(&"x".repeat(256)),
            Err(FolderProblem::TooLong)
        );
    }
}
