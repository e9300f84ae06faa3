//! An ACL user's definition (Redis's `user`): flags, password hashes and selectors, the
//! rules that change them (`ACLSetUser`) and the description ACL LIST shows.

use super::describe;
use super::selector::{RuleError, Selector};
use crate::cmd::table::CommandTable;
use sha2::Digest;

/// How RESTORE payloads of this user's clients are checked (`sanitize-dump-payload
/// clients`): unset, `sanitize-payload` or `skip-sanitize-payload`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sanitize {
    Unset,
    Yes,
    Skip,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct User {
    pub enabled: bool,
    pub nopass: bool,
    pub sanitize: Sanitize,
    /// SHA-256 hashes as 64 lowercase hex digits, in the order added.
    pub passwords: Vec<String>,
    /// The root selector first.
    pub selectors: Vec<Selector>,
}

/// ACLHashPassword: the SHA-256 of `pass` in lowercase hex.
pub fn hash_password(pass: &[u8]) -> String {
    crate::hex::to_string(&sha2::Sha256::digest(pass))
}

/// ACLCheckPasswordHash: 64 lowercase hex digits.
fn valid_hash(h: &[u8]) -> bool {
    h.len() == 64 && h.iter().all(|c| matches!(c, b'0'..=b'9' | b'a'..=b'f'))
}

/// The hash a password rule names: `clear` followed by the password, or a hash as given.
fn hash_of(op: &[u8], clear: u8) -> Result<String, RuleError> {
    if op[0] == clear {
        Ok(hash_password(&op[1..]))
    } else if valid_hash(&op[1..]) {
        Ok(String::from_utf8_lossy(&op[1..]).into_owned())
    } else {
        Err(RuleError::BadHash)
    }
}

impl User {
    /// ACLCreateUser: off, no password, nothing permitted.
    pub fn new(ncommands: usize, allchannels: bool) -> User {
        User {
            enabled: false,
            nopass: false,
            sanitize: Sanitize::Unset,
            passwords: Vec::new(),
            selectors: vec![Selector::new(true, ncommands, allchannels)],
        }
    }

    /// No selector limits anything: commands skip the check.
    pub fn unrestricted(&self) -> bool {
        self.selectors.iter().any(Selector::unrestricted)
    }

    pub fn root(&self) -> &Selector {
        &self.selectors[0]
    }

    /// Does `pass` authenticate this user (ACLCheckUserCredentials, for an enabled one)?
    pub fn password_ok(&self, pass: &[u8]) -> bool {
        if self.nopass {
            return true;
        }
        let hashed = hash_password(pass);
        // Compare every stored hash in full (time-independent of where they differ).
        self.passwords.iter().fold(false, |found, h| {
            found
                | (h.bytes()
                    .zip(hashed.bytes())
                    .fold(0, |d, (a, b)| d | (a ^ b))
                    == 0)
        })
    }

    /// ACLSetUser: apply one rule. `allchannels` is `acl-pubsub-default`'s.
    pub fn apply(
        &mut self,
        table: &CommandTable,
        op: &[u8],
        allchannels: bool,
    ) -> Result<(), RuleError> {
        if op.is_empty() {
            return Ok(());
        }
        let is = |word: &str| op.eq_ignore_ascii_case(word.as_bytes());
        if is("on") {
            self.enabled = true;
        } else if is("off") {
            self.enabled = false;
        } else if is("skip-sanitize-payload") {
            self.sanitize = Sanitize::Skip;
        } else if is("sanitize-payload") {
            self.sanitize = Sanitize::Yes;
        } else if is("nopass") {
            self.nopass = true;
            self.passwords.clear();
        } else if is("resetpass") {
            self.nopass = false;
            self.passwords.clear();
        } else if op[0] == b'>' || op[0] == b'#' {
            let hash = hash_of(op, b'>')?;
            if !self.passwords.contains(&hash) {
                self.passwords.push(hash);
            }
            self.nopass = false;
        } else if op[0] == b'<' || op[0] == b'!' {
            let hash = hash_of(op, b'<')?;
            let at = self.passwords.iter().position(|h| *h == hash);
            self.passwords.remove(at.ok_or(RuleError::NoSuchPassword)?);
        } else if op[0] == b'(' && op[op.len() - 1] == b')' {
            let inner = &op[1..op.len() - 1];
            let mut s = Selector::new(false, table.all.len(), allchannels);
            // Unbalanced quotes make Redis's sdssplitargs return nothing: an empty
            // selector.
            for rule in resp::parse::split_args(inner).unwrap_or_default() {
                s.apply(table, &rule)?;
            }
            self.selectors.push(s);
        } else if is("clearselectors") {
            self.selectors.truncate(1);
        } else if is("reset") {
            self.nopass = false;
            self.passwords.clear();
            let root = &mut self.selectors[0];
            root.apply(table, b"resetkeys")?;
            root.apply(table, b"resetchannels")?;
            if allchannels {
                root.apply(table, b"allchannels")?;
            }
            self.enabled = false;
            self.sanitize = Sanitize::Yes;
            self.selectors.truncate(1);
            self.selectors[0].apply(table, b"-@all")?;
        } else {
            self.selectors[0].apply(table, op)?;
        }
        Ok(())
    }

    /// The flag names, in Redis's order (ACLUserFlags).
    pub fn flag_names(&self) -> Vec<&'static str> {
        let mut v = vec![if self.enabled { "on" } else { "off" }];
        if self.nopass {
            v.push("nopass");
        }
        match self.sanitize {
            Sanitize::Skip => v.push("skip-sanitize-payload"),
            Sanitize::Yes => v.push("sanitize-payload"),
            Sanitize::Unset => {}
        }
        v
    }

    /// ACLDescribeUser: the rules that recreate this user, as ACL LIST shows them.
    pub fn describe(&self, table: &CommandTable) -> Vec<u8> {
        let mut out = Vec::new();
        for f in self.flag_names() {
            out.extend_from_slice(f.as_bytes());
            out.push(b' ');
        }
        for p in &self.passwords {
            out.push(b'#');
            out.extend_from_slice(p.as_bytes());
            out.push(b' ');
        }
        for s in &self.selectors {
            if s.root {
                describe::selector(table, s, &mut out);
            } else {
                out.extend_from_slice(b" (");
                describe::selector(table, s, &mut out);
                out.push(b')');
            }
        }
        out
    }
}

/// ACLMergeSelectorArguments: a selector given over several arguments (`(~a` `+get)`)
/// becomes one. Err(index of the argument opening the unclosed selector).
pub fn merge_selector_args(args: &[&[u8]]) -> Result<Vec<Vec<u8>>, usize> {
    let mut out = Vec::new();
    let mut open: Option<(usize, Vec<u8>)> = None;
    for (j, &op) in args.iter().enumerate() {
        if let Some((_, sel)) = open.as_mut() {
            sel.push(b' ');
            sel.extend_from_slice(op);
            if op.last() == Some(&b')') {
                out.push(open.take().expect("open").1);
            }
            continue;
        }
        if op.first() == Some(&b'(') && op.last() != Some(&b')') {
            open = Some((j, op.to_vec()));
            continue;
        }
        out.push(op.to_vec());
    }
    match open {
        Some((j, _)) => Err(j),
        None => Ok(out),
    }
}
