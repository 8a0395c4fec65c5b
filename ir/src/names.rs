//! The job-name rule and the names derived from a job's name on every backend, in one place so
//! that `loam check` and `loam emit` cannot disagree about them.
//!
//! A job's Kubernetes objects, its output folder and its Slurm job name are all one DNS-1123
//! label made from the job's name by [`job_label`]; a name that yields no readable label is
//! refused by the checker (L1019) and by the backends (L4004) through that same function.

use crate::display;
use sha2::{Digest, Sha256};
use std::fmt::{self, Write};

/// Longest name of a job's Kubernetes objects and folder, so pod host names
/// (`<job>-<group>-0-<n>`) stay within the 63 bytes of a DNS label.
pub const MAX_JOB_LABEL: usize = 32;

/// Why a job's name cannot name its objects and folder on the backends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JobNameProblem {
    /// `job "" { … }`.
    Empty,
    /// No ASCII letter or digit, so the derived label would be a bare hash (`job "---"`).
    NoLetterOrDigit,
    /// A control character (`job "a\nb"`, an ESC sequence) or a bidirectional formatting
    /// character ([`display::is_hidden`]): the name is printed in tables, logs and pull-request
    /// comments and written into scripts, where such a character acts instead of reading.
    Hidden(char),
}

impl fmt::Display for JobNameProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            JobNameProblem::Empty => "the name is empty",
            JobNameProblem::NoLetterOrDigit => "the name has no ASCII letter or digit",
            JobNameProblem::Hidden(c) => {
                return write!(
                    f,
                    "the name contains the control character U+{:04X}",
                    u32::from(*c)
                );
            }
        })
    }
}

/// The DNS-1123 label that names the job's Kubernetes objects, its output folder and its Slurm
/// job name: the job's name itself when it is a label of at most [`MAX_JOB_LABEL`] bytes, else
/// a readable part of it and a hash (see [`dns_label`]).
///
/// Job names must be non-empty, hold at least one ASCII letter or digit and no control or
/// bidirectional formatting character.
pub fn job_label(name: &str) -> Result<String, JobNameProblem> {
    if name.is_empty() {
        Err(JobNameProblem::Empty)
    } else if let Some(c) = name.chars().find(|&c| display::is_hidden(c)) {
        Err(JobNameProblem::Hidden(c))
    } else if !name.bytes().any(|b| b.is_ascii_alphanumeric()) {
        Err(JobNameProblem::NoLetterOrDigit)
    } else {
        Ok(dns_label(name, MAX_JOB_LABEL))
    }
}

/// Whether `s` is a DNS-1123 label: 1–63 of `a-z0-9-`, starting and ending alphanumeric.
pub fn is_dns_label(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 63
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !s.starts_with('-')
        && !s.ends_with('-')
}

/// A DNS-1123 label of at most `max` bytes (`max` ≥ 10) made from `s`: lowercase ASCII letters
/// and digits kept, runs of anything else turned into one `-`. When that changed `s`, an
/// 8-digit hash of `s` is appended, so different inputs keep different names.
///
/// Only the empty string gives an empty (invalid) label; [`job_label`] refuses it.
pub fn dns_label(s: &str, max: usize) -> String {
    let slug = slug(s, usize::MAX);
    if slug == s && slug.len() <= max {
        return slug;
    }
    let hash = short_hash(s);
    let keep = max.saturating_sub(hash.len() + 1);
    let mut head: String = slug.chars().take(keep).collect();
    while head.ends_with('-') {
        head.pop();
    }
    if head.is_empty() {
        format!("x-{hash}")
    } else {
        format!("{head}-{hash}")
    }
}

/// `s` lowercased, with runs of anything but ASCII letters and digits turned into one `-`,
/// trimmed of `-` and cut to `max` bytes: readable, but not unique (see [`dns_label`]).
pub fn slug(s: &str, max: usize) -> String {
    let mut slug = String::new();
    for c in s.chars().flat_map(char::to_lowercase) {
        if slug.len() >= max {
            break;
        }
        if c.is_ascii_lowercase() || c.is_ascii_digit() {
            slug.push(c);
        } else if !slug.is_empty() && !slug.ends_with('-') {
            slug.push('-');
        }
    }
    slug.trim_end_matches('-').to_string()
}

/// The first 8 hex digits of the SHA-256 of `s`.
fn short_hash(s: &str) -> String {
    let digest = Sha256::digest(s.as_bytes());
    digest.iter().take(4).fold(String::new(), |mut acc, b| {
        let _ = write!(acc, "{b:02x}");
        acc
    })
}

/// Whether `s` is safe unquoted in a `#SBATCH` line or a file name: 1–128 of
/// `A-Za-z0-9._-`, not starting with `-` or `.`.
pub fn is_plain_word(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 128
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
        && !s.starts_with('-')
        && !s.starts_with('.')
}

/// Whether `s` is a Kubernetes label (or annotation) key: an optional DNS-subdomain prefix and
/// `/`, then a name of 1–63 of `A-Za-z0-9-_.`, starting and ending alphanumeric.
pub fn is_label_key(s: &str) -> bool {
    let (prefix, name) = match s.split_once('/') {
        Some((p, n)) => (Some(p), n),
        None => (None, s),
    };
    let prefix_ok =
        prefix.is_none_or(|p| !p.is_empty() && p.len() <= 253 && p.split('.').all(is_dns_label));
    prefix_ok && is_label_value(name) && !name.is_empty()
}

/// Whether `s` is a Kubernetes label value: empty, or 1–63 of `A-Za-z0-9-_.`, starting and
/// ending alphanumeric.
pub fn is_label_value(s: &str) -> bool {
    s.is_empty()
        || (s.len() <= 63
            && s.bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
            && s.bytes().next().is_some_and(|b| b.is_ascii_alphanumeric())
            && s.bytes().last().is_some_and(|b| b.is_ascii_alphanumeric()))
}

/// Whether `s` is an environment variable name: letters, digits and `_`, not starting with a
/// digit.
pub fn is_env_name(s: &str) -> bool {
    !s.is_empty()
        && !s.starts_with(|c: char| c.is_ascii_digit())
        && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dns_labels_are_valid_and_distinct() {
        assert_eq!(dns_label("llama3-70b", 32), "llama3-70b");
        let a = dns_label("Llama3 70B", 32);
        let b = dns_label("llama3-70b!", 32);
        assert!(is_dns_label(&a) && is_dns_label(&b));
        assert_ne!(a, b);
        assert!(dns_label(&"x".repeat(500), 32).len() <= 32);
        assert!(is_dns_label(&dns_label("$(touch /tmp/pwned)", 32)));
        assert!(is_dns_label(&dns_label("---", 32)));
        assert!(is_dns_label(&dns_label("名前", 12)));
    }

    #[test]
    fn job_names_hold_no_control_or_bidi_character() {
        for (name, c) in [
            ("a\nb", '\n'),
            ("\u{1b}]0;owned\u{7}ok", '\u{1b}'),
            ("job\0", '\0'),
            ("a\u{9b}b", '\u{9b}'),
            ("a\u{202e}b", '\u{202e}'),
        ] {
            assert_eq!(job_label(name), Err(JobNameProblem::Hidden(c)), "{name:?}");
        }
        assert_eq!(
            JobNameProblem::Hidden('\u{1b}').to_string(),
            "the name contains the control character U+001B"
        );
    }

    #[test]
    fn job_names_need_a_letter_or_digit() {
        assert_eq!(job_label(""), Err(JobNameProblem::Empty));
        assert_eq!(job_label("--- !"), Err(JobNameProblem::NoLetterOrDigit));
        assert_eq!(job_label("名前"), Err(JobNameProblem::NoLetterOrDigit));
        assert_eq!(job_label("llama3-8b-sft").as_deref(), Ok("llama3-8b-sft"));
        for name in [
            "a",
            "Llama 3 / 70B",
            "x'y\"z $(rm -rf /) 名前",
            &"L".repeat(300),
        ] {
            let label = job_label(name).unwrap();
            assert!(
                is_dns_label(&label) && label.len() <= MAX_JOB_LABEL,
                "{label}"
            );
        }
    }
}
