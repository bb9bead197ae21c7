//! C++ names for people: Itanium demangling (`cpp_demangle`), the split of a demangled
//! function into its qualified name and parameters, the mangled "stem" that groups
//! overloads cheaply, and the distance between two parameter lists.

/// The demangled form of a mangled C++ name, e.g.
/// `_ZN3c104cuda29c10_cuda_check_implementationEiPKcS2_ib` →
/// `c10::cuda::c10_cuda_check_implementation(int, char const*, char const*, int, bool)`;
/// `None` for a C name or one that does not demangle.
pub fn demangle(mangled: &str) -> Option<String> {
    if !mangled.starts_with("_Z") {
        return None;
    }
    let symbol = cpp_demangle::Symbol::new(mangled.as_bytes()).ok()?;
    symbol
        .demangle_with_options(&cpp_demangle::DemangleOptions::default())
        .ok()
}

/// A name as shown: demangled when it is C++, else as is.
pub fn display(mangled: &str) -> String {
    demangle(mangled).unwrap_or_else(|| mangled.to_string())
}

/// A demangled function split at its parameter list, e.g.
/// `c10::cuda::f(int, bool) const` → (`c10::cuda::f`, [`int`, `bool`], ` const`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Signature {
    /// Everything before the parameter list, e.g. `c10::cuda::f`.
    pub name: String,
    /// The parameters, e.g. `["int", "bool"]`; empty for `()` and `(void)`.
    pub params: Vec<String>,
    /// What follows the list, e.g. ` const`.
    pub suffix: String,
}

/// Split a demangled name; `None` when it has no parameter list (data, a C name).
pub fn signature(demangled: &str) -> Option<Signature> {
    let bytes = demangled.as_bytes();
    let close = demangled.rfind(')')?;
    let mut depth = 0usize;
    let mut open = None;
    for index in (0..=close).rev() {
        match bytes[index] {
            b')' => depth += 1,
            b'(' => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    open = Some(index);
                    break;
                }
            }
            _ => {}
        }
    }
    let open = open?;
    let inner = &demangled[open + 1..close];
    let mut params = Vec::new();
    let mut level = 0i32;
    let mut start = 0;
    for (index, byte) in inner.bytes().enumerate() {
        match byte {
            b'(' | b'<' | b'[' => level += 1,
            b')' | b'>' | b']' => level -= 1,
            b',' if level == 0 => {
                params.push(inner[start..index].trim().to_string());
                start = index + 1;
            }
            _ => {}
        }
    }
    let last = inner[start..].trim();
    if !last.is_empty() && last != "void" {
        params.push(last.to_string());
    }
    Some(Signature {
        name: demangled[..open].to_string(),
        params,
        suffix: demangled[close + 1..].to_string(),
    })
}

/// How many parameters must be inserted, removed or replaced to turn `a` into `b`.
pub fn distance(a: &[String], b: &[String]) -> usize {
    let mut previous: Vec<usize> = (0..=b.len()).collect();
    for (i, left) in a.iter().enumerate() {
        let mut current = vec![i + 1; b.len() + 1];
        for (j, right) in b.iter().enumerate() {
            let replace = previous[j] + usize::from(left != right);
            current[j + 1] = replace.min(previous[j + 1] + 1).min(current[j] + 1);
        }
        previous = current;
    }
    previous[b.len()]
}

/// The mangled prefix that names a function or variable without its parameters, e.g.
/// `_ZN3c104cuda29c10_cuda_check_implementationEiPKcS2_ib` →
/// `_ZN3c104cuda29c10_cuda_check_implementation`, shared by every overload; a template's
/// stem ends at its name. `None` for C names and forms it does not follow.
pub fn stem(mangled: &str) -> Option<&str> {
    let bytes = mangled.as_bytes();
    let mut at = mangled.strip_prefix("_Z").map(|_| 2)?;
    let nested = bytes.get(at) == Some(&b'N');
    if nested {
        at += 1;
        while matches!(bytes.get(at), Some(b'r' | b'V' | b'K' | b'R' | b'O')) {
            at += 1;
        }
    }
    let mut end = None;
    loop {
        if bytes.get(at) == Some(&b'S') && bytes.get(at + 1) == Some(&b't') {
            at += 2;
            continue;
        }
        let digits = bytes[at.min(bytes.len())..]
            .iter()
            .take_while(|byte| byte.is_ascii_digit())
            .count();
        if digits == 0 {
            break;
        }
        let length: usize = mangled.get(at..at + digits)?.parse().ok()?;
        at += digits + length;
        if at > bytes.len() {
            return None;
        }
        end = Some(at);
        if !nested {
            break;
        }
    }
    end.map(|end| &mangled[..end])
}

/// The first namespace of a mangled name, e.g. `c10` for `_ZN3c104cuda…` and
/// `_ZNK3c1010TensorImpl…`.
pub fn namespace(mangled: &str) -> Option<&str> {
    let stem = stem(mangled)?;
    let rest = stem.strip_prefix("_ZN")?;
    let rest = rest.trim_start_matches(['r', 'V', 'K', 'R', 'O']);
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    let length: usize = rest.get(..digits)?.parse().ok()?;
    rest.get(digits..digits + length)
}

#[cfg(test)]
mod tests {
    use super::*;

    const WANTED: &str = "_ZN3c104cuda29c10_cuda_check_implementationEiPKcS2_ib";
    const EXPORTED: &str = "_ZN3c104cuda29c10_cuda_check_implementationEiPKcS2_jb";

    #[test]
    fn the_seed_incident_demangles_to_its_two_overloads() {
        assert_eq!(
            demangle(WANTED).unwrap(),
            "c10::cuda::c10_cuda_check_implementation(int, char const*, char const*, int, bool)"
        );
        let wanted = signature(&demangle(WANTED).unwrap()).unwrap();
        let exported = signature(&demangle(EXPORTED).unwrap()).unwrap();
        assert_eq!(wanted.name, exported.name);
        assert_eq!(distance(&wanted.params, &exported.params), 1);
        assert_eq!(exported.params[3], "unsigned int");
        assert_eq!(stem(WANTED), stem(EXPORTED));
        assert_eq!(
            stem(WANTED),
            Some("_ZN3c104cuda29c10_cuda_check_implementation")
        );
        assert_eq!(namespace(WANTED), Some("c10"));
        assert_eq!(namespace("_ZNK2at6Tensor3dimEv"), Some("at"));
        assert_eq!(demangle("memcpy"), None);
        assert_eq!(stem("memcpy"), None);
        assert_eq!(stem("_Z3fooi"), Some("_Z3foo"));
    }

    #[test]
    fn signatures_keep_nested_parameter_lists_together() {
        let split = signature("f(std::function<void (int, int)>, int) const").unwrap();
        assert_eq!(split.params, vec!["std::function<void (int, int)>", "int"]);
        assert_eq!(split.suffix, " const");
        assert!(signature("c10::detail::some_variable").is_none());
        assert!(signature("g()").unwrap().params.is_empty());
    }
}
