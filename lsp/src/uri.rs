//! `file:` URIs and paths: the editor names documents by URI, the catalogue by path.

use lsp_types::Uri;
use std::path::{Path, PathBuf};
use std::str::FromStr;

/// The path of a `file:` URI (percent-escapes decoded), `None` for another scheme or an
/// escape that is not UTF-8.
pub fn to_path(uri: &Uri) -> Option<PathBuf> {
    let rest = uri.as_str().strip_prefix("file://")?;
    // `file://host/path`: only the local host (empty or `localhost`) is a path here.
    let path = rest.strip_prefix("localhost").unwrap_or(rest);
    if !path.starts_with('/') {
        return None;
    }
    let bytes = path.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while let Some(&b) = bytes.get(i) {
        if b == b'%'
            && let Some(hex) = path.get(i + 1..i + 3)
            && let Ok(byte) = u8::from_str_radix(hex, 16)
        {
            out.push(byte);
            i += 3;
        } else {
            out.push(b);
            i += 1;
        }
    }
    String::from_utf8(out).ok().map(PathBuf::from)
}

/// The `file:` URI of an absolute path, escaping every byte outside RFC 3986's unreserved
/// characters and `/`.
pub fn from_path(path: &Path) -> Option<Uri> {
    if !path.is_absolute() {
        return None;
    }
    let mut text = String::from("file://");
    for &b in path.to_str()?.as_bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'/' | b'-' | b'.' | b'_' | b'~') {
            text.push(char::from(b));
        } else {
            text.push_str(&format!("%{b:02X}"));
        }
    }
    Uri::from_str(&text).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_round_trip_through_escapes() {
        let path = Path::new("/tmp/a b/é.loam");
        let uri = from_path(path).expect("an absolute path");
        // A space is %20; é is the two UTF-8 bytes C3 A9.
        assert_eq!(uri.as_str(), "file:///tmp/a%20b/%C3%A9.loam");
        assert_eq!(to_path(&uri).as_deref(), Some(path));
        assert_eq!(from_path(Path::new("relative.loam")), None);
        let other = Uri::from_str("untitled:Untitled-1").expect("a URI");
        assert_eq!(to_path(&other), None);
    }
}
