//! Script flags declared in a shebang (`#!lua flags=no-writes,allow-oom`), parsed as
//! Redis's evalExtractShebangFlags does.

use crate::cmd::table::{CommandDef, LockRule};
use crate::server::Server;

/// What a script declared. A script without a shebang runs in compatibility mode (as
/// before Redis 7.0: it may write, and its flags come from EVAL's own).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ScriptFlags {
    pub compat: bool,
    pub no_writes: bool,
    pub allow_oom: bool,
    pub allow_stale: bool,
    pub no_cluster: bool,
    pub allow_cross_slot: bool,
}

impl ScriptFlags {
    /// Set the flag named `name` (Redis's scripts_flags_def); false if unknown.
    pub fn set(&mut self, name: &[u8]) -> bool {
        let f = match name {
            b"no-writes" => &mut self.no_writes,
            b"allow-oom" => &mut self.allow_oom,
            b"allow-stale" => &mut self.allow_stale,
            b"no-cluster" => &mut self.no_cluster,
            b"allow-cross-slot-keys" => &mut self.allow_cross_slot,
            _ => return false,
        };
        *f = true;
        true
    }

    /// The run may not write: an `_RO` command, or a script declaring `no-writes`.
    pub fn read_only(&self, ro_command: bool) -> bool {
        ro_command || (!self.compat && self.no_writes)
    }
}

/// The flags a script run by `argv` (EVAL, EVALSHA, FCALL and their `_RO` forms) declared,
/// which stand for the command's own `denyoom`/`write` flags when the server decides
/// whether to run it (Redis's evalGetCommandFlags / fcallGetCommandFlags); `None` for any
/// other command, a script without a shebang, or one not known yet.
pub fn declared(srv: &Server, cmd: &CommandDef, argv: &[&[u8]]) -> Option<ScriptFlags> {
    if !matches!(cmd.lock, LockRule::Script) {
        return None;
    }
    let name = *argv.get(1)?;
    let flags = match cmd.fullname.as_str() {
        "eval" | "eval_ro" => parse(name).ok()?.0,
        "evalsha" | "evalsha_ro" if name.len() == 40 => srv.scripts.get(name)?.flags,
        "fcall" | "fcall_ro" => {
            let lib = srv.scripts.functions.library_of(name)?;
            return lib.function(name).map(|f| f.flags);
        }
        _ => return None,
    };
    (!flags.compat).then_some(flags)
}

/// Is `argv` refused when memory is over `maxmemory` (denyoom)? A script that declared
/// flags is unless it declared `allow-oom` or `no-writes`.
pub fn denyoom(srv: &Server, cmd: &CommandDef, argv: &[&[u8]]) -> bool {
    match declared(srv, cmd, argv) {
        Some(f) => !(f.allow_oom || f.no_writes),
        None => cmd.flags.denyoom,
    }
}

/// Does `argv` count as a write (refused when writes are denied)? A script that declared
/// flags does unless it declared `no-writes`.
pub fn writes(srv: &Server, cmd: &CommandDef, argv: &[&[u8]]) -> bool {
    match declared(srv, cmd, argv) {
        Some(f) => !f.no_writes,
        None => cmd.flags.write,
    }
}

/// The flags of a script body and the length of its shebang line (0 without one; the
/// code runs from there, keeping the line feed so line numbers stay the user's). The error
/// quotes the body's bytes as Redis does (sdscatfmt's `%s`: up to a NUL).
pub fn parse(body: &[u8]) -> Result<(ScriptFlags, usize), Vec<u8>> {
    use crate::cmd::args::c_str;
    let quote = |what: &str, part: &[u8]| [what.as_bytes(), c_str(part)].concat();
    let mut flags = ScriptFlags {
        compat: true,
        ..Default::default()
    };
    if !body.starts_with(b"#!") {
        return Ok((flags, 0));
    }
    // strchr(body, '\n'): a NUL before the line feed ends the search.
    let Some(end) = body
        .iter()
        .position(|&b| b == b'\n' || b == 0)
        .filter(|&i| body[i] != 0)
    else {
        return Err("Invalid script shebang".into());
    };
    let parts = match resp::parse::split_args(&body[..end]) {
        Some(p) if !p.is_empty() => p,
        _ => return Err("Invalid engine in script shebang".into()),
    };
    // strcmp: the engine and the flag names are read as C strings.
    if c_str(&parts[0]) != b"#!lua" {
        return Err(quote("Unexpected engine in script shebang: ", &parts[0]));
    }
    flags.compat = false;
    for part in &parts[1..] {
        let Some(list) = part.strip_prefix(b"flags=") else {
            return Err(quote("Unknown lua shebang option: ", part));
        };
        if list.is_empty() {
            continue;
        }
        for name in list.split(|&b| b == b',') {
            if !flags.set(c_str(name)) {
                return Err(quote("Unexpected flag in script shebang: ", name));
            }
        }
    }
    Ok((flags, end))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shebangs() {
        assert!(parse(b"return 1").unwrap().0.compat);
        let (f, n) = parse(b"#!lua flags=no-writes,allow-oom\nreturn 1").unwrap();
        assert!(f.no_writes && f.allow_oom && !f.compat);
        assert_eq!(n, 31);
        assert!(!parse(b"#!lua\nx").unwrap().0.compat);
        assert_eq!(parse(b"#!lua").unwrap_err(), b"Invalid script shebang");
        assert_eq!(parse(b"#!lua\0\nx").unwrap_err(), b"Invalid script shebang");
        assert_eq!(
            parse(b"#!foo\n").unwrap_err(),
            b"Unexpected engine in script shebang: #!foo"
        );
        assert_eq!(
            parse(b"#!lua x=y\n").unwrap_err(),
            b"Unknown lua shebang option: x=y"
        );
        assert_eq!(
            parse(b"#!lua flags=bad\n").unwrap_err(),
            b"Unexpected flag in script shebang: bad"
        );
    }
}
