//! Which distribution a file belongs to: the paths of each `*.dist-info/RECORD` (of a
//! site-packages directory or inside a wheel) and the name and version from its
//! `METADATA`. Paths are compared lexically, relative to the directory the RECORD's
//! paths are relative to.

/// A distribution's `Name` and `Version` from its `METADATA` headers, e.g. `torch`,
/// `2.11.0+cu130`.
pub fn metadata(bytes: &[u8]) -> (Option<String>, Option<String>) {
    let text = String::from_utf8_lossy(bytes);
    let mut name = None;
    let mut version = None;
    for line in text.lines() {
        if line.is_empty() {
            break;
        }
        if let Some(value) = line.strip_prefix("Name:") {
            name.get_or_insert_with(|| value.trim().to_string());
        } else if let Some(value) = line.strip_prefix("Version:") {
            version.get_or_insert_with(|| value.trim().to_string());
        }
    }
    (name, version)
}

/// The paths a RECORD lists (its first CSV column; a quoted path keeps its commas).
pub fn record_paths(bytes: &[u8]) -> Vec<String> {
    let text = String::from_utf8_lossy(bytes);
    text.lines()
        .filter_map(|line| {
            let path = if let Some(quoted) = line.strip_prefix('"') {
                let mut path = String::new();
                let mut chars = quoted.chars().peekable();
                while let Some(ch) = chars.next() {
                    if ch == '"' {
                        if chars.peek() == Some(&'"') {
                            chars.next();
                            path.push('"');
                        } else {
                            break;
                        }
                    } else {
                        path.push(ch);
                    }
                }
                path
            } else {
                line.split(',').next().unwrap_or_default().to_string()
            };
            (!path.is_empty()).then_some(path)
        })
        .collect()
}

/// Whether a path names a shared object: `*.so` or `*.so.N…`, e.g.
/// `torch/lib/libc10.so`, `nvidia/cu13/lib/libcublas.so.13`, `_C.cpython-312-x86_64-linux-gnu.so`.
pub fn is_library_path(path: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path);
    name.ends_with(".so") || name.contains(".so.")
}

/// `path` with `.` and `..` resolved lexically and no doubled or trailing `/`, e.g.
/// `/venv/site/torch/lib/../../x.so` → `/venv/site/x.so`.
pub fn normalize(path: &str) -> String {
    let absolute = path.starts_with('/');
    let mut parts: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                if parts.last().is_some_and(|last| *last != "..") {
                    parts.pop();
                } else if !absolute {
                    parts.push("..");
                }
            }
            other => parts.push(other),
        }
    }
    let joined = parts.join("/");
    if absolute {
        format!("/{joined}")
    } else {
        joined
    }
}

/// The directory part of a path, e.g. `/site/torch/lib` for `/site/torch/lib/libc10.so`.
pub fn parent(path: &str) -> &str {
    match path.rfind('/') {
        Some(0) => "/",
        Some(index) => &path[..index],
        None => ".",
    }
}

/// The last component of a path, e.g. `libc10.so`.
pub fn file_name(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

/// A distribution name compared as PEP 503 does, e.g. `Sgl_Kernel` → `sgl-kernel`.
pub fn canonical_name(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut dash = false;
    for ch in name.chars() {
        if matches!(ch, '-' | '_' | '.') {
            dash = true;
        } else {
            if dash && !out.is_empty() {
                out.push('-');
            }
            dash = false;
            out.push(ch.to_ascii_lowercase());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_metadata_and_paths() {
        let record = b"torch/lib/libc10.so,sha256=abc,123\n\"odd,name.so\",,\ntorch-2.11.0.dist-info/RECORD,,\n";
        assert_eq!(
            record_paths(record),
            vec![
                "torch/lib/libc10.so",
                "odd,name.so",
                "torch-2.11.0.dist-info/RECORD"
            ]
        );
        assert_eq!(
            metadata(b"Metadata-Version: 2.1\nName: torch\nVersion: 2.11.0+cu130\n\nName: body\n"),
            (Some("torch".into()), Some("2.11.0+cu130".into()))
        );
        assert!(is_library_path("nvidia/cu13/lib/libcublas.so.13"));
        assert!(is_library_path("torch/_C.cpython-312-x86_64-linux-gnu.so"));
        assert!(!is_library_path("torch/lib/soname.py"));
        assert_eq!(normalize("/a/b/../c/./d.so"), "/a/c/d.so");
        assert_eq!(normalize("a/../../b"), "../b");
        assert_eq!(parent("/a/b.so"), "/a");
        assert_eq!(canonical_name("Sgl_Kernel"), "sgl-kernel");
    }
}
