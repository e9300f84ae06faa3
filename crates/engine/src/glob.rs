//! Redis's glob matching (`stringmatchlen`): `*`, `?`, `[abc]`, `[^a-z]`, `\x`.

/// Does `s` match `pattern`? `nocase` folds ASCII case. As in Redis, an empty string
/// matches only the empty pattern (`*` included: stringmatchlen skips a trailing `*`
/// only after consuming a character); KEYS and SCAN take `*` alone as "everything".
pub fn glob_match(pattern: &[u8], s: &[u8], nocase: bool) -> bool {
    if s.is_empty() {
        return pattern.is_empty();
    }
    let mut skip_longer = false;
    match_from(pattern, s, nocase, 0, &mut skip_longer)
}

fn eq(a: u8, b: u8, nocase: bool) -> bool {
    if nocase {
        a.eq_ignore_ascii_case(&b)
    } else {
        a == b
    }
}

/// `skip_longer` is Redis's skipLongerMatches (the CVE-2022-36021 fix): once the rest of
/// the pattern after a `*` matched nowhere in the rest of the string, no earlier `*` can
/// help by matching more, so the search stops instead of going exponential.
fn match_from(
    mut p: &[u8],
    mut s: &[u8],
    nocase: bool,
    depth: usize,
    skip_longer: &mut bool,
) -> bool {
    // Each level of recursion consumes a `*`; bound it to protect the thread's stack.
    if depth > 1000 {
        return false;
    }
    while !p.is_empty() && !s.is_empty() {
        match p[0] {
            b'*' => {
                while p.len() > 1 && p[1] == b'*' {
                    p = &p[1..];
                }
                if p.len() == 1 {
                    return true;
                }
                for i in 0..s.len() {
                    if match_from(&p[1..], &s[i..], nocase, depth + 1, skip_longer) {
                        return true;
                    }
                    if *skip_longer {
                        return false;
                    }
                }
                *skip_longer = true;
                return false;
            }
            b'?' => {
                s = &s[1..];
                p = &p[1..];
            }
            b'[' => {
                p = &p[1..];
                let not = p.first() == Some(&b'^');
                if not {
                    p = &p[1..];
                }
                let mut matched = false;
                loop {
                    if p.is_empty() {
                        break;
                    }
                    if p[0] == b'\\' && p.len() >= 2 {
                        p = &p[1..];
                        if p[0] == s[0] {
                            matched = true;
                        }
                    } else if p[0] == b']' {
                        break;
                    } else if p.len() >= 3 && p[1] == b'-' {
                        let (mut start, mut end) = (p[0], p[2]);
                        let mut c = s[0];
                        if start > end {
                            std::mem::swap(&mut start, &mut end);
                        }
                        if nocase {
                            start = start.to_ascii_lowercase();
                            end = end.to_ascii_lowercase();
                            c = c.to_ascii_lowercase();
                        }
                        p = &p[2..];
                        if c >= start && c <= end {
                            matched = true;
                        }
                    } else if eq(p[0], s[0], nocase) {
                        matched = true;
                    }
                    p = &p[1..];
                }
                if p.is_empty() {
                    // Unterminated class: Redis treats the end of pattern as ']'.
                    let hit = matched != not;
                    return hit && s.len() == 1;
                }
                if not {
                    matched = !matched;
                }
                if !matched {
                    return false;
                }
                s = &s[1..];
                p = &p[1..];
            }
            b'\\' if p.len() >= 2 => {
                if !eq(p[1], s[0], nocase) {
                    return false;
                }
                s = &s[1..];
                p = &p[2..];
            }
            c => {
                if !eq(c, s[0], nocase) {
                    return false;
                }
                s = &s[1..];
                p = &p[1..];
            }
        }
    }
    if s.is_empty() {
        while !p.is_empty() && p[0] == b'*' {
            p = &p[1..];
        }
    }
    p.is_empty() && s.is_empty()
}

#[cfg(test)]
mod tests {
    use super::glob_match;

    #[test]
    fn basics() {
        assert!(glob_match(b"*", b"anything", false));
        assert!(glob_match(b"h?llo", b"hello", false));
        assert!(glob_match(b"h[ae]llo", b"hallo", false));
        assert!(!glob_match(b"h[^e]llo", b"hello", false));
        assert!(glob_match(b"h[a-b]llo", b"hbllo", false));
        assert!(glob_match(b"a\\*b", b"a*b", false));
        assert!(!glob_match(b"a*b", b"acd", false));
        assert!(glob_match(b"HELLO", b"hello", true));
        assert!(glob_match(b"", b"", false));
        assert!(!glob_match(b"", b"a", false));
        assert!(!glob_match(b"*", b"", false));
        assert!(!glob_match(b"**", b"", false));
        assert!(glob_match(b"a*", b"a", false));
    }

    #[test]
    fn pathological_patterns_end_quickly() {
        // Exponential without skipLongerMatches; instant with it.
        let s = vec![b'a'; 5000];
        let p = b"*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*b";
        assert!(!glob_match(p, &s, false));
        assert!(glob_match(b"*a*a*a*a", &s, false));
    }
}
