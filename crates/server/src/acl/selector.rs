//! One ACL selector (Redis's `aclSelector`): the commands, keys and channels it permits,
//! the rules that change them (`ACLSetSelector`) and the check of one command against it
//! (`ACLSelectorCheckCmd`).

use super::Denied;
use crate::cmd::keyspec::{KeyRef, KEY_ACCESS, KEY_DELETE, KEY_INSERT, KEY_UPDATE};
use crate::cmd::table::{acl_category_bit, CommandDef, CommandTable};
use engine::glob::glob_match;

/// A key pattern's permission bits.
pub const READ: u8 = 1;
pub const WRITE: u8 = 2;
pub const ALL: u8 = READ | WRITE;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyPattern {
    pub pattern: Vec<u8>,
    pub perm: u8,
}

impl KeyPattern {
    /// `~pat`, `%R~pat` or `%W~pat`, as ACL LIST writes it.
    pub fn describe(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(match self.perm {
            READ => &b"%R~"[..],
            WRITE => b"%W~",
            _ => b"~",
        });
        out.extend_from_slice(&self.pattern);
    }
}

/// Why a rule was refused (Redis's errno values of ACLSetUser, in its texts).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RuleError {
    Syntax,
    Unknown,
    KeysAfterAll,
    ChannelsAfterAll,
    NoSuchPassword,
    BadHash,
    Duplicate,
    SubcommandFirstArg,
}

impl RuleError {
    /// ACLSetUserStringError.
    pub fn text(self) -> &'static str {
        match self {
            RuleError::Unknown => "Unknown command or category name in ACL",
            RuleError::Syntax => "Syntax error",
            RuleError::KeysAfterAll => "Adding a pattern after the * pattern (or the 'allkeys' flag) is not valid and does not have any effect. Try 'resetkeys' to start with an empty list of patterns",
            RuleError::ChannelsAfterAll => "Adding a pattern after the * pattern (or the 'allchannels' flag) is not valid and does not have any effect. Try 'resetchannels' to start with an empty list of channels",
            RuleError::NoSuchPassword => {
                "The password you are trying to remove from the user does not exist"
            }
            RuleError::BadHash => "The password hash must be exactly 64 characters and contain only lowercase hexadecimal characters",
            RuleError::Duplicate => "Duplicate user found. A user can only be defined once in config files",
            RuleError::SubcommandFirstArg => "Allowing first-arg of a subcommand is not supported",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Selector {
    pub root: bool,
    pub allkeys: bool,
    pub allchannels: bool,
    /// Every command, without looking at the bits (set by `+@all`, cleared by any removal).
    pub allcommands: bool,
    /// One bit per command id ([`CommandTable::all`]).
    bits: Vec<u64>,
    /// Redis's reserved last bit: set only by `+@all`, so that the rules describe as
    /// "+@all minus ..." (future commands permitted) rather than "-@all plus ...".
    future: bool,
    /// First arguments permitted for a command whose bit is off (`+select|0`), by id.
    firstargs: Vec<(usize, Vec<Vec<u8>>)>,
    pub patterns: Vec<KeyPattern>,
    pub channels: Vec<Vec<u8>>,
}

/// ACLStringHasSpaces: whitespace or NUL.
pub fn has_spaces(s: &[u8]) -> bool {
    s.iter()
        .any(|&c| c == 0 || c == b' ' || (b'\t'..=b'\r').contains(&c))
}

/// ACLLookupCommand: `name` or `container|sub`, any case.
pub fn lookup<'t>(table: &'t CommandTable, name: &[u8]) -> Option<&'t CommandDef> {
    let mut parts = name.split(|&c| c == b'|');
    let base = table.get(parts.next()?)?;
    match (parts.next(), parts.next()) {
        (None, _) => Some(base),
        (Some(sub), None) if base.is_container() => base
            .subcommands
            .get(&String::from_utf8_lossy(sub).to_ascii_lowercase())
            .map(|d| &**d),
        _ => None,
    }
}

impl Selector {
    /// ACLCreateSelector: nothing permitted (channels per `acl-pubsub-default`).
    pub fn new(root: bool, ncommands: usize, allchannels: bool) -> Selector {
        Selector {
            root,
            allkeys: false,
            allchannels,
            allcommands: false,
            bits: vec![0; ncommands.div_ceil(64)],
            future: false,
            firstargs: Vec::new(),
            patterns: Vec::new(),
            channels: Vec::new(),
        }
    }

    /// Every command, key and channel: no check needed.
    pub fn unrestricted(&self) -> bool {
        self.allcommands && self.allkeys && self.allchannels
    }

    pub fn bit(&self, id: usize) -> bool {
        self.bits
            .get(id / 64)
            .is_some_and(|w| w & (1 << (id % 64)) != 0)
    }

    pub fn future(&self) -> bool {
        self.future
    }

    fn set_bit(&mut self, id: usize, on: bool) {
        if let Some(w) = self.bits.get_mut(id / 64) {
            if on {
                *w |= 1 << (id % 64);
            } else {
                *w &= !(1 << (id % 64));
            }
        }
        if !on {
            self.allcommands = false;
        }
    }

    pub fn same_bits(&self, other: &Selector) -> bool {
        self.bits == other.bits
    }

    /// The first arguments permitted for command `id` while its bit is off.
    pub fn firstargs(&self, id: usize) -> &[Vec<u8>] {
        self.firstargs
            .iter()
            .find(|(i, _)| *i == id)
            .map_or(&[], |(_, v)| v.as_slice())
    }

    /// ACLChangeSelectorPerm: a command, and every subcommand of a container.
    pub fn change_perm(&mut self, cmd: &CommandDef, allow: bool) {
        self.set_bit(cmd.id, allow);
        self.firstargs.retain(|(i, _)| *i != cmd.id);
        for sub in cmd.subcommands.values() {
            self.set_bit(sub.id, allow);
        }
    }

    /// ACLSetSelectorCommandBitsForCategory.
    pub fn set_category(&mut self, table: &CommandTable, flag: u64, allow: bool) {
        for cmd in table.top_level() {
            if cmd.acl_categories & flag != 0 {
                self.change_perm(cmd, allow);
            }
            for sub in cmd.sorted_subcommands() {
                if sub.acl_categories & flag != 0 {
                    self.change_perm(sub, allow);
                }
            }
        }
    }

    /// ACLCountCategoryBitsForSelector: commands of the category permitted and not.
    pub fn count_category(&self, table: &CommandTable, flag: u64) -> (usize, usize) {
        let (mut on, mut off) = (0, 0);
        for cmd in &table.all {
            if cmd.acl_categories & flag != 0 {
                if self.bit(cmd.id) {
                    on += 1;
                } else {
                    off += 1;
                }
            }
        }
        (on, off)
    }

    fn all_commands(&mut self, on: bool) {
        let fill = if on { u64::MAX } else { 0 };
        self.bits.iter_mut().for_each(|w| *w = fill);
        self.future = on;
        self.allcommands = on;
        self.firstargs.clear();
    }

    /// ACLSetSelector: apply one rule.
    pub fn apply(&mut self, table: &CommandTable, op: &[u8]) -> Result<(), RuleError> {
        if op.is_empty() {
            return Err(RuleError::Syntax);
        }
        let is = |word: &str| op.eq_ignore_ascii_case(word.as_bytes());
        if is("allkeys") || is("~*") {
            self.allkeys = true;
            self.patterns.clear();
        } else if is("resetkeys") {
            self.allkeys = false;
            self.patterns.clear();
        } else if is("allchannels") || is("&*") {
            self.allchannels = true;
            self.channels.clear();
        } else if is("resetchannels") {
            self.allchannels = false;
            self.channels.clear();
        } else if is("allcommands") || is("+@all") {
            self.all_commands(true);
        } else if is("nocommands") || is("-@all") {
            self.all_commands(false);
        } else if op[0] == b'~' || op[0] == b'%' {
            self.add_key_pattern(op)?;
        } else if op[0] == b'&' {
            if self.allchannels {
                return Err(RuleError::ChannelsAfterAll);
            }
            if has_spaces(&op[1..]) {
                return Err(RuleError::Syntax);
            }
            if !self.channels.iter().any(|c| c == &op[1..]) {
                self.channels.push(op[1..].to_vec());
            }
            self.allchannels = false;
        } else if (op[0] == b'+' || op[0] == b'-') && op.get(1) == Some(&b'@') {
            let flag = std::str::from_utf8(&op[2..]).map_or(0, acl_category_bit);
            if flag == 0 {
                return Err(RuleError::Unknown);
            }
            self.set_category(table, flag, op[0] == b'+');
        } else if op[0] == b'+' {
            self.allow_command(table, &op[1..])?;
        } else if op[0] == b'-' {
            let cmd = lookup(table, &op[1..]).ok_or(RuleError::Unknown)?;
            self.change_perm(cmd, false);
        } else {
            return Err(RuleError::Syntax);
        }
        Ok(())
    }

    /// `~pattern`, `%R~pattern`, `%W~pattern`, `%RW~pattern`.
    fn add_key_pattern(&mut self, op: &[u8]) -> Result<(), RuleError> {
        if self.allkeys {
            return Err(RuleError::KeysAfterAll);
        }
        let (perm, offset) = if op[0] == b'%' {
            let mut perm = 0;
            let mut offset = 1;
            while offset < op.len() {
                match op[offset].to_ascii_uppercase() {
                    b'R' if perm & READ == 0 => perm |= READ,
                    b'W' if perm & WRITE == 0 => perm |= WRITE,
                    b'~' => {
                        offset += 1;
                        break;
                    }
                    _ => return Err(RuleError::Syntax),
                }
                offset += 1;
            }
            // Redis 7.0.15 takes `%~pattern` (no permission) and then fails an assertion
            // describing it; refused here (docs/compatibility.md).
            if perm == 0 {
                return Err(RuleError::Syntax);
            }
            (perm, offset)
        } else {
            (ALL, 1)
        };
        let pattern = &op[offset.min(op.len())..];
        if has_spaces(pattern) {
            return Err(RuleError::Syntax);
        }
        match self.patterns.iter_mut().find(|p| p.pattern == pattern) {
            Some(p) => p.perm |= perm,
            None => self.patterns.push(KeyPattern {
                pattern: pattern.to_vec(),
                perm,
            }),
        }
        self.allkeys = false;
        Ok(())
    }

    /// `+command`, `+container|sub`, or `+command|first-arg`.
    fn allow_command(&mut self, table: &CommandTable, name: &[u8]) -> Result<(), RuleError> {
        let Some(bar) = name.iter().rposition(|&c| c == b'|') else {
            let cmd = lookup(table, name).ok_or(RuleError::Unknown)?;
            self.change_perm(cmd, true);
            return Ok(());
        };
        let (base, sub) = (&name[..bar], &name[bar + 1..]);
        let cmd = lookup(table, base).ok_or(RuleError::Unknown)?;
        if cmd.fullname.contains('|') {
            return Err(RuleError::SubcommandFirstArg);
        }
        if sub.is_empty() {
            return Err(RuleError::Syntax);
        }
        if cmd.is_container() {
            let sub = lookup(table, name).ok_or(RuleError::Unknown)?;
            self.change_perm(sub, true);
        } else {
            crate::log::warning(&format!(
                "Deprecation warning: Allowing a first arg of an otherwise blocked command is a misuse of ACL and may get disabled in the future (offender: +{})",
                String::from_utf8_lossy(name)
            ));
            let id = cmd.id;
            let list = match self.firstargs.iter_mut().find(|(i, _)| *i == id) {
                Some((_, l)) => l,
                None => {
                    self.firstargs.push((id, Vec::new()));
                    &mut self.firstargs.last_mut().expect("pushed").1
                }
            };
            if !list.iter().any(|a| a.eq_ignore_ascii_case(sub)) {
                list.push(sub.to_vec());
            }
        }
        Ok(())
    }

    /// ACLSelectorCheckKey: may `key` be touched with key-spec `flags`?
    pub fn key_ok(&self, key: &[u8], flags: u64) -> bool {
        if self.allkeys {
            return true;
        }
        let want = needed_perm(flags);
        self.patterns
            .iter()
            .any(|p| p.perm & want == want && glob_match(&p.pattern, key, false))
    }

    /// ACLSelectorHasUnrestrictedKeyAccess.
    pub fn every_key_ok(&self, flags: u64) -> bool {
        if self.allkeys {
            return true;
        }
        let want = needed_perm(flags);
        self.patterns
            .iter()
            .any(|p| p.perm & want == want && p.pattern == b"*")
    }

    /// ACLCheckChannelAgainstList: a pattern subscription must name an allowed pattern
    /// literally; a channel is matched against the patterns.
    pub fn channel_ok(&self, channel: &[u8], is_pattern: bool) -> bool {
        self.allchannels
            || self.channels.iter().any(|p| {
                if is_pattern {
                    p == channel
                } else {
                    glob_match(p, channel, false)
                }
            })
    }

    /// ACLSelectorCheckCmd. `keys` caches the command's keys across selectors.
    pub fn check(
        &self,
        cmd: &CommandDef,
        argv: &[&[u8]],
        keys: &mut Option<Vec<KeyRef>>,
    ) -> Result<(), Denied> {
        if !self.allcommands && !cmd.flags.no_auth && !self.bit(cmd.id) {
            let firstargs = self.firstargs(cmd.id);
            let idx = if cmd.fullname.contains('|') { 2 } else { 1 };
            let permitted = argv.len() >= 2
                && argv
                    .get(idx)
                    .is_some_and(|a| firstargs.iter().any(|f| f.eq_ignore_ascii_case(a)));
            if !permitted {
                return Err(Denied::Command);
            }
        }
        if !self.allkeys && cmd.has_keys() {
            let keys = keys.get_or_insert_with(|| cmd.keys(argv));
            for &(pos, flags) in keys.iter() {
                if !self.key_ok(argv[pos], flags) {
                    return Err(Denied::Key(pos));
                }
            }
        }
        if !self.allchannels {
            if let Some((from, to, is_pattern)) = channel_args(cmd, argv.len()) {
                for (pos, channel) in argv.iter().enumerate().take(to).skip(from) {
                    if !self.channel_ok(channel, is_pattern) {
                        return Err(Denied::Channel(pos));
                    }
                }
            }
        }
        Ok(())
    }
}

/// The permission a key with key-spec `flags` needs.
fn needed_perm(flags: u64) -> u8 {
    let mut want = 0;
    if flags & KEY_ACCESS != 0 {
        want |= READ;
    }
    if flags & (KEY_INSERT | KEY_DELETE | KEY_UPDATE) != 0 {
        want |= WRITE;
    }
    want
}

/// The channels a publish or subscribe command names, as Redis's commandChannelsTable:
/// (first index, end index, pattern). Unsubscribing is never checked.
pub fn channel_args(cmd: &CommandDef, argc: usize) -> Option<(usize, usize, bool)> {
    match cmd.fullname.as_str() {
        "publish" | "spublish" => Some((1, 2.min(argc), false)),
        "subscribe" | "ssubscribe" => Some((1, argc, false)),
        "psubscribe" => Some((1, argc, true)),
        _ => None,
    }
}
