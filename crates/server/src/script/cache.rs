//! The script cache: one for the whole server, so a script loaded through one connection
//! runs by SHA on every worker. Each worker compiles a script into its own Lua state the
//! first time it runs it there ([`super::state`]); SCRIPT FLUSH bumps the generation, and
//! each worker starts a fresh Lua state when it next sees the new one.

use super::flags::{self, ScriptFlags};
use parking_lot::RwLock;
use sha1::{Digest, Sha1};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicIsize, AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::sync::Arc;

/// A SHA1 as 40 lowercase hex digits.
pub type Sha = [u8; 40];

/// One cached script.
pub struct Script {
    pub sha: Sha,
    /// The body as given (shebang included).
    pub body: Vec<u8>,
    pub flags: ScriptFlags,
    /// Where the code starts (after the shebang line, its line feed kept).
    pub code_start: usize,
    /// A run of this script reached a key it did not declare while another client held
    /// it: later runs hold the script's whole database from the start.
    pub whole_db: AtomicBool,
}

impl Script {
    pub fn code(&self) -> &[u8] {
        &self.body[self.code_start..]
    }

    pub fn sha_str(&self) -> &str {
        std::str::from_utf8(&self.sha).unwrap_or("")
    }
}

#[derive(Default)]
pub struct Scripts {
    map: RwLock<HashMap<Sha, Arc<Script>>>,
    generation: AtomicU64,
    /// How many cached scripts hold their whole database (0: the lock planner skips
    /// hashing EVAL bodies).
    whole_db_count: AtomicUsize,
    /// Bytes of cached bodies (INFO's used_memory_scripts_eval).
    bytes: AtomicUsize,
    /// Memory of every worker's Lua state (INFO's used_memory_lua), as last reported.
    vm: AtomicIsize,
    /// Runs past busy-reply-threshold (shared with each worker's Lua hook).
    pub busy: Arc<super::busy::Busy>,
    /// The function libraries (FUNCTION LOAD).
    pub functions: super::functions::Functions,
}

impl Scripts {
    /// The script with this SHA (any case), if cached.
    pub fn get(&self, sha: &[u8]) -> Option<Arc<Script>> {
        let key = lower_sha(sha)?;
        self.map.read().get(&key).cloned()
    }

    /// The cached script with this body's SHA, or the body parsed (its shebang) and
    /// cached after `compile` accepted it. The error is the reply text.
    pub fn get_or_add(
        &self,
        body: &[u8],
        compile: impl FnOnce(&Script) -> Result<(), String>,
    ) -> Result<Arc<Script>, Vec<u8>> {
        let sha = sha1_hex(body);
        if let Some(s) = self.map.read().get(&sha) {
            return Ok(s.clone());
        }
        let (flags, code_start) =
            flags::parse(body).map_err(|e| [b"ERR ".as_slice(), &e].concat())?;
        let script = Script {
            sha,
            body: body.to_vec(),
            flags,
            code_start,
            whole_db: AtomicBool::new(false),
        };
        compile(&script)?;
        let mut map = self.map.write();
        let s = map.entry(sha).or_insert_with(|| {
            self.bytes.fetch_add(body.len() + 40, Relaxed);
            Arc::new(script)
        });
        Ok(s.clone())
    }

    /// Remember that `script` holds its whole database from now on.
    pub fn mark_whole_db(&self, script: &Script) {
        if !script.whole_db.swap(true, Relaxed) {
            self.whole_db_count.fetch_add(1, Relaxed);
        }
    }

    /// Some function holds its whole database (the planner then looks FCALLs up).
    pub fn mark_any_whole_db(&self) {
        self.whole_db_count.fetch_add(1, Relaxed);
    }

    /// Is any script or function marked to hold its whole database?
    pub fn any_whole_db(&self) -> bool {
        self.whole_db_count.load(Relaxed) > 0
    }

    /// Does the script EVAL (`by_sha` false: `arg` is the body) or EVALSHA (`arg` is
    /// the SHA) would run hold its whole database?
    pub fn wants_whole_db(&self, by_sha: bool, arg: &[u8]) -> bool {
        if self.whole_db_count.load(Relaxed) == 0 {
            return false;
        }
        let script = if by_sha {
            self.get(arg)
        } else {
            self.map.read().get(&sha1_hex(arg)).cloned()
        };
        script.is_some_and(|s| s.whole_db.load(Relaxed))
    }

    /// SCRIPT FLUSH: empty the cache (freed on another thread when `background`).
    pub fn flush(&self, background: bool) {
        let old = std::mem::take(&mut *self.map.write());
        self.generation.fetch_add(1, Relaxed);
        self.whole_db_count.store(0, Relaxed);
        self.bytes.store(0, Relaxed);
        if background {
            std::thread::spawn(move || drop(old));
        }
    }

    /// Changes on every SCRIPT FLUSH.
    pub fn generation(&self) -> u64 {
        self.generation.load(Relaxed)
    }

    pub fn len(&self) -> usize {
        self.map.read().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn bytes(&self) -> usize {
        self.bytes.load(Relaxed)
    }

    /// A worker's Lua state grew (or shrank) by `delta` bytes.
    pub fn vm_changed(&self, delta: isize) {
        if delta != 0 {
            self.vm.fetch_add(delta, Relaxed);
        }
    }

    pub fn vm_bytes(&self) -> usize {
        self.vm.load(Relaxed).max(0) as usize
    }
}

/// `sha` as the cache's key: 40 bytes, lowercased (Redis compares SHAs ignoring case).
fn lower_sha(sha: &[u8]) -> Option<Sha> {
    let mut key: Sha = sha.try_into().ok()?;
    key.make_ascii_lowercase();
    Some(key)
}

/// Redis's sha1hex: the SHA1 of `data` in lowercase hex.
pub fn sha1_hex(data: &[u8]) -> Sha {
    crate::hex::to_array(&Sha1::digest(data))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sha1_of_known_inputs() {
        assert_eq!(&sha1_hex(b""), b"da39a3ee5e6b4b0d3255bfef95601890afd80709");
        assert_eq!(
            &sha1_hex(b"return 1"),
            b"e0e1f9fabfc9d4800c877a703b823ac0578ff8db"
        );
    }

    #[test]
    fn cache_is_case_insensitive_and_flushes() {
        let s = Scripts::default();
        let a = s.get_or_add(b"return 1", |_| Ok(())).unwrap();
        assert!(s.get(b"E0E1F9FABFC9D4800C877A703B823AC0578FF8DB").is_some());
        assert_eq!(a.code(), b"return 1");
        let g = s.generation();
        s.flush(false);
        assert!(s.is_empty() && s.generation() != g);
        assert!(s.get_or_add(b"#!x\n", |_| Ok(())).is_err());
    }
}
