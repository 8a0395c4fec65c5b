//! Reading one file: regular files only, never more than a size limit, so a FIFO cannot block
//! loam and `/dev/zero` cannot exhaust its memory.

use super::{IoError, display};
use std::fs;
use std::io::Read;
use std::path::Path;

/// The largest spec, catalogue or `.loamignore` file loam reads: 16 MiB. Real specs are a few
/// KB and the tests check 10 MB of jobs; loam's memory is about 50 times its input, so 16 MiB
/// stays under a gigabyte on a small CI machine.
pub const SPEC_SIZE_LIMIT: u64 = 16 << 20;

/// The largest plan JSON or calibration CSV loam reads: 64 MiB (a plan of thousands of jobs, a
/// calibration file of 100,000 rows).
pub const DATA_SIZE_LIMIT: u64 = 64 << 20;

/// Reads a spec, catalogue or ignore file (at most [`SPEC_SIZE_LIMIT`] bytes).
pub fn read_spec(path: &Path) -> Result<Vec<u8>, IoError> {
    read_limited(path, SPEC_SIZE_LIMIT)
}

/// Reads a data file: a plan JSON, a CSV (at most [`DATA_SIZE_LIMIT`] bytes).
pub fn read(path: &Path) -> Result<Vec<u8>, IoError> {
    read_limited(path, DATA_SIZE_LIMIT)
}

/// Reads `path` when it is a regular file (a link to one is followed) of at most `limit` bytes.
/// The type is checked before opening (opening a FIFO blocks until a writer comes) and again on
/// the open file, so what is read is the file that was checked.
fn read_limited(path: &Path, limit: u64) -> Result<Vec<u8>, IoError> {
    let shown = display(path);
    let fail = |e: std::io::Error| IoError(format!("cannot read `{shown}`: {e}"));
    let before = fs::metadata(path).map_err(fail)?;
    if !before.is_file() {
        return Err(IoError(format!(
            "cannot read `{shown}`: {}",
            not_regular(&before)
        )));
    }
    let file = fs::File::open(path).map_err(fail)?;
    let opened = file.metadata().map_err(fail)?;
    if !opened.is_file() || !same_file(&before, &opened) {
        return Err(IoError(format!(
            "cannot read `{shown}`: it changed while loam opened it"
        )));
    }
    let too_large = || {
        IoError(format!(
            "cannot read `{shown}`: it is larger than {} MiB, the most loam reads",
            limit >> 20
        ))
    };
    if opened.len() > limit {
        return Err(too_large());
    }
    let mut bytes = Vec::new();
    file.take(limit + 1).read_to_end(&mut bytes).map_err(fail)?;
    if bytes.len() as u64 > limit {
        return Err(too_large());
    }
    Ok(bytes)
}

/// What a file that is not a regular file is, for messages.
pub(super) fn not_regular(meta: &fs::Metadata) -> &'static str {
    if meta.is_dir() {
        return "it is a folder";
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        let kind = meta.file_type();
        if kind.is_fifo() {
            return "it is a FIFO (named pipe), not a regular file";
        }
        if kind.is_socket() {
            return "it is a socket, not a regular file";
        }
        if kind.is_block_device() || kind.is_char_device() {
            return "it is a device, not a regular file";
        }
    }
    "it is not a regular file"
}

/// Whether two metadata describe the same file (device and inode on Unix).
#[cfg(unix)]
fn same_file(a: &fs::Metadata, b: &fs::Metadata) -> bool {
    file_id(a) == file_id(b)
}

/// Whether two metadata describe the same file: not knowable without inodes, so assumed.
#[cfg(not(unix))]
fn same_file(_a: &fs::Metadata, _b: &fs::Metadata) -> bool {
    true
}

/// A file's identity: `(device, inode)` on Unix; elsewhere every file looks distinct.
#[cfg(unix)]
pub(super) fn file_id(meta: &fs::Metadata) -> (u64, u64) {
    use std::os::unix::fs::MetadataExt;
    (meta.dev(), meta.ino())
}

/// A file's identity: `(device, inode)` on Unix; elsewhere every file looks distinct.
#[cfg(not(unix))]
pub(super) fn file_id(_meta: &fs::Metadata) -> (u64, u64) {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    (
        u64::MAX,
        NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
    )
}
