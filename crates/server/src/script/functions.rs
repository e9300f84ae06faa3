//! Functions (FUNCTION LOAD, FCALL): the server's libraries, one registry for every
//! worker. Each worker compiles a library into its own Lua state the first time it runs
//! one of its functions (`super::state::LuaState::library`), running the library's code
//! with only `redis.register_function`, `redis.log` and the version fields in reach, as
//! Redis's library loading does.

use super::flags::ScriptFlags;
use parking_lot::RwLock;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

/// One registered function of a library.
pub struct Function {
    pub name: Vec<u8>,
    pub description: Option<Vec<u8>>,
    pub flags: ScriptFlags,
    /// A run reached a key it did not declare while another client held it (see
    /// `super::cache::Script::whole_db`).
    pub whole_db: AtomicBool,
}

/// One library: its code (shebang included) and its functions.
pub struct Library {
    /// Unique per load (a replaced library gets a new id, so workers recompile it).
    pub id: u64,
    pub name: Vec<u8>,
    pub code: Vec<u8>,
    /// Where the code after the shebang line starts (its line feed kept).
    pub body_start: usize,
    pub functions: Vec<Function>,
}

impl Library {
    pub fn body(&self) -> &[u8] {
        &self.code[self.body_start..]
    }

    pub fn function(&self, name: &[u8]) -> Option<&Function> {
        self.functions.iter().find(|f| f.name == name)
    }
}

/// What a library's shebang says (Redis's functionExtractLibMetaData).
pub struct Metadata {
    pub engine: Vec<u8>,
    pub name: Vec<u8>,
    pub body_start: usize,
}

/// The error text quotes the code's bytes as Redis does.
pub fn metadata(code: &[u8]) -> Result<Metadata, Vec<u8>> {
    if !code.starts_with(b"#!") {
        return Err("Missing library metadata".into());
    }
    // strchr(payload, '\n'): a NUL before the line feed ends the search.
    let Some(end) = code
        .iter()
        .position(|&b| b == b'\n' || b == 0)
        .filter(|&i| code[i] != 0)
    else {
        return Err("Invalid library metadata".into());
    };
    let parts = match resp::parse::split_args(&code[..end]) {
        Some(p) if !p.is_empty() => p,
        _ => return Err("Invalid library metadata".into()),
    };
    let engine = parts[0][2..].to_vec();
    let mut name = None;
    for part in &parts[1..] {
        if part.len() >= 5 && part[..5].eq_ignore_ascii_case(b"name=") {
            if name.is_some() {
                return Err(
                    "Invalid metadata value, name argument was given multiple times".into(),
                );
            }
            name = Some(part[5..].to_vec());
            continue;
        }
        // sdscatfmt's %s: up to a NUL.
        let part = crate::cmd::args::c_str(part);
        return Err([b"Invalid metadata value given: ".as_slice(), part].concat());
    }
    let Some(name) = name else {
        return Err("Library name was not given".into());
    };
    Ok(Metadata {
        engine,
        name,
        body_start: end,
    })
}

/// Redis's functionsVerifyName: letters, digits and underscores, at least one.
pub fn valid_name(name: &[u8]) -> bool {
    !name.is_empty() && name.iter().all(|&b| b.is_ascii_alphanumeric() || b == b'_')
}

pub const BAD_NAME: &str = "Library names can only contain letters, numbers, or \
                            underscores(_) and must be at least one character long";

#[derive(Default)]
struct Registry {
    libraries: HashMap<Vec<u8>, Arc<Library>>,
    /// Function name -> its library.
    functions: HashMap<Vec<u8>, Arc<Library>>,
}

/// The server's libraries.
#[derive(Default)]
pub struct Functions {
    registry: RwLock<Registry>,
    next_id: AtomicU64,
}

impl Functions {
    pub fn next_id(&self) -> u64 {
        self.next_id.fetch_add(1, Relaxed) + 1
    }

    /// The library holding function `name`.
    pub fn library_of(&self, name: &[u8]) -> Option<Arc<Library>> {
        self.registry.read().functions.get(name).cloned()
    }

    /// Add `lib` (replacing the library of the same name when `replace`). The error is
    /// the reply's text.
    pub fn add(&self, lib: Library, replace: bool) -> Result<(), String> {
        let mut r = self.registry.write();
        let old = r.libraries.get(&lib.name).cloned();
        if old.is_some() && !replace {
            return Err(format!(
                "Library '{}' already exists",
                String::from_utf8_lossy(&lib.name)
            ));
        }
        for f in &lib.functions {
            if let Some(owner) = r.functions.get(&f.name) {
                if owner.name != lib.name {
                    return Err(format!(
                        "Function {} already exists",
                        String::from_utf8_lossy(&f.name)
                    ));
                }
            }
        }
        if let Some(old) = old {
            for f in &old.functions {
                r.functions.remove(&f.name);
            }
        }
        let lib = Arc::new(lib);
        for f in &lib.functions {
            r.functions.insert(f.name.clone(), lib.clone());
        }
        r.libraries.insert(lib.name.clone(), lib);
        Ok(())
    }

    pub fn exists(&self, library: &[u8]) -> bool {
        self.registry.read().libraries.contains_key(library)
    }

    /// FUNCTION RESTORE: add `libs` with Redis's policy (`flush` first, or on a name
    /// collision `replace` or fail), all or nothing. The error is the reply's text.
    pub fn restore(&self, libs: Vec<Library>, flush: bool, replace: bool) -> Result<(), String> {
        let mut r = self.registry.write();
        let mut next = if flush {
            Registry::default()
        } else {
            Registry {
                libraries: r.libraries.clone(),
                functions: r.functions.clone(),
            }
        };
        for lib in libs {
            if let Some(old) = next.libraries.get(&lib.name).cloned() {
                if !replace {
                    return Err(format!(
                        "Library {} already exists",
                        String::from_utf8_lossy(&lib.name)
                    ));
                }
                for f in &old.functions {
                    next.functions.remove(&f.name);
                }
            }
            for f in &lib.functions {
                if next.functions.contains_key(&f.name) {
                    return Err(format!(
                        "Function {} already exists",
                        String::from_utf8_lossy(&f.name)
                    ));
                }
            }
            let lib = Arc::new(lib);
            for f in &lib.functions {
                next.functions.insert(f.name.clone(), lib.clone());
            }
            next.libraries.insert(lib.name.clone(), lib);
        }
        *r = next;
        Ok(())
    }

    /// FUNCTION DELETE: false if there is no such library.
    pub fn delete(&self, name: &[u8]) -> bool {
        let mut r = self.registry.write();
        let Some(lib) = r.libraries.remove(name) else {
            return false;
        };
        for f in &lib.functions {
            r.functions.remove(&f.name);
        }
        true
    }

    /// FUNCTION FLUSH.
    pub fn flush(&self) {
        *self.registry.write() = Registry::default();
    }

    /// Every library, sorted by name.
    pub fn libraries(&self) -> Vec<Arc<Library>> {
        let mut v: Vec<_> = self.registry.read().libraries.values().cloned().collect();
        v.sort_by(|a, b| a.name.cmp(&b.name));
        v
    }

    /// (libraries, functions) counts.
    pub fn counts(&self) -> (usize, usize) {
        let r = self.registry.read();
        (r.libraries.len(), r.functions.len())
    }

    /// MEMORY STATS `functions.caches`, INFO `used_memory_functions`: Redis's
    /// functionsMemoryOverhead over the same libraries (its structures at the allocator's
    /// size classes: each library's record, name and code, each function's record, name,
    /// description and Lua reference, the function-name dict), plus the Lua engine's
    /// registration, which Redis counts even with no library loaded.
    pub fn memory_overhead(&self) -> usize {
        const ENGINE: usize = 200;
        let class = engine::mem::size_class;
        // An sds string's allocation: its header (3, 5 or 9 bytes), the bytes, the NUL.
        let sds = |len: usize| {
            let header = match len {
                0..=255 => 3,
                256..=65535 => 5,
                _ => 9,
            };
            class(header + len + 1)
        };
        let r = self.registry.read();
        let mut bytes = ENGINE;
        for lib in r.libraries.values() {
            bytes += class(32) + sds(lib.name.len()) + sds(lib.code.len());
            for f in &lib.functions {
                let desc = f.description.as_ref().map_or(0, |d| sds(d.len()));
                bytes += class(40) + sds(f.name.len()) + desc + class(4);
            }
        }
        let n = r.functions.len();
        if n > 0 {
            // dictMemUsage: an entry per function and a pointer per slot.
            bytes += 24 * n + 8 * n.next_power_of_two().max(4);
        }
        bytes
    }

    /// Does FCALL of `name` hold its whole database (see `Function::whole_db`)?
    pub fn wants_whole_db(&self, name: &[u8]) -> bool {
        self.library_of(name)
            .and_then(|l| l.function(name).map(|f| f.whole_db.load(Relaxed)))
            .unwrap_or(false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn library_metadata() {
        let m = metadata(b"#!lua name=mylib\nreturn 1").unwrap();
        assert_eq!(
            (m.engine.as_slice(), m.name.as_slice(), m.body_start),
            (&b"lua"[..], &b"mylib"[..], 16)
        );
        assert_eq!(
            metadata(b"return 1").err().unwrap(),
            b"Missing library metadata"
        );
        assert_eq!(
            metadata(b"#!lua name=x").err().unwrap(),
            b"Invalid library metadata"
        );
        assert_eq!(
            metadata(b"#!lua name=x\0\n").err().unwrap(),
            b"Invalid library metadata"
        );
        assert_eq!(
            metadata(b"#!lua\n").err().unwrap(),
            b"Library name was not given"
        );
        assert_eq!(
            metadata(b"#!lua name=a name=b\n").err().unwrap(),
            b"Invalid metadata value, name argument was given multiple times"
        );
        assert_eq!(
            metadata(b"#!lua foo=bar\n").err().unwrap(),
            b"Invalid metadata value given: foo=bar"
        );
        assert!(valid_name(b"a_1") && !valid_name(b"") && !valid_name(b"a-b"));
    }
}
