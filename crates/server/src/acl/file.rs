//! Users from the outside: `user` lines of the configuration and the `aclfile` (read at
//! start and by ACL LOAD, written by ACL SAVE), as Redis's ACLLoadUsersAtStartup,
//! ACLLoadFromFile and ACLSaveToFile.

use super::user::{merge_selector_args, User};
use super::{pubsub_default_all, selector, Acl, UserSlot};
use crate::server::Server;
use std::collections::BTreeMap;
use std::sync::Arc;

/// The users of the configuration's `user` lines, then the `aclfile`: Err(the log line)
/// stops the start.
pub fn load_at_startup(srv: &Server) -> Result<(), String> {
    let lines: Vec<String> = srv.config.users.lock().clone();
    let aclfile = srv.config.get("aclfile");
    if !aclfile.is_empty() && !lines.is_empty() {
        return Err("Configuring Redis with users defined in redis.conf and at the same setting an ACL file path is invalid. This setup is very likely to lead to configuration errors and security holes, please define either an ACL file or declare users directly in your redis.conf, but not both.".into());
    }
    let table = &srv.commands;
    let all = pubsub_default_all(srv);
    let mut seen: Vec<Vec<u8>> = Vec::new();
    for line in &lines {
        let argv = resp::parse::split_args(line.as_bytes()).unwrap_or_default();
        let Some(name) = argv.get(1) else { continue };
        if selector::has_spaces(name) {
            return Err("Spaces not allowed in ACL usernames".into());
        }
        if seen.contains(name) {
            return Err(format!(
                "Error in user declaration '{}': {}",
                String::from_utf8_lossy(name),
                selector::RuleError::Duplicate.text()
            ));
        }
        seen.push(name.clone());
        let rules: Vec<&[u8]> = argv[2..].iter().map(Vec::as_slice).collect();
        let merged = merge_selector_args(&rules)
            .map_err(|_| "Unmatched parenthesis in acl selector".to_string())?;
        // A configured default user starts from `reset`, as Redis's.
        let mut def = User::new(table.all.len(), all);
        if name == b"default" {
            let _ = def.apply(table, b"reset", all);
        }
        for op in &merged {
            def.apply(table, op, all).map_err(|e| {
                format!(
                    "Error loading ACL rule '{}' for the user named '{}': {}",
                    String::from_utf8_lossy(op),
                    String::from_utf8_lossy(name),
                    e.text()
                )
            })?;
        }
        if !def.enabled {
            crate::log::notice(&format!("The user '{}' is disabled (there is no 'on' modifier in the user description). Make sure this is not a configuration error.", String::from_utf8_lossy(name)));
        }
        srv.acl.put(name, def);
    }
    if !aclfile.is_empty() {
        load(srv, &aclfile)
            .map_err(|e| format!("Aborting Redis startup because of ACL errors: {e}"))?;
    }
    Ok(())
}

/// ACLLoadFromFile: every user of the file replaces every user now defined, or, on any
/// error, nothing changes (Err: every problem found, on one line).
pub fn load(srv: &Server, path: &str) -> Result<(), String> {
    let text = std::fs::read(path).map_err(|e| {
        format!(
            "Error loading ACLs, opening file '{path}': {}",
            crate::config::value::strerror(&e)
        )
    })?;
    let table = &srv.commands;
    let all = pubsub_default_all(srv);
    let mut errors = String::new();
    let mut users: BTreeMap<Vec<u8>, User> = BTreeMap::new();
    for (i, raw) in text.split(|&c| c == b'\n').enumerate() {
        let linenum = i + 1;
        let line = trim(raw, b" \t\r\n");
        if line.is_empty() {
            continue;
        }
        let argv: Vec<&[u8]> = line.split(|&c| c == b' ').collect();
        if argv[0] != b"user" || argv.len() < 2 {
            errors.push_str(&format!(
                "{path}:{linenum} should start with user keyword followed by the username. "
            ));
            continue;
        }
        let name = argv[1];
        if selector::has_spaces(name) {
            errors.push_str(&format!(
                "'{path}:{linenum}: username '{}' contains invalid characters. ",
                String::from_utf8_lossy(name)
            ));
            continue;
        }
        if users.contains_key(name) {
            errors.push_str(&format!(
                "WARNING: Duplicate user '{}' found on line {linenum}. ",
                String::from_utf8_lossy(name)
            ));
            continue;
        }
        let mut def = User::new(table.all.len(), all);
        let merged = match merge_selector_args(&argv[2..]) {
            Ok(m) => m,
            Err(_) => {
                errors.push_str(&format!(
                    "{path}:{linenum}: Unmatched parenthesis in selector definition."
                ));
                Vec::new()
            }
        };
        let mut syntax_error = false;
        for op in &merged {
            let op = trim(op, b"\t\r\n");
            if let Err(e) = def.apply(table, op, all) {
                if e == selector::RuleError::Unknown {
                    errors.push_str(&format!(
                        "{path}:{linenum}: Error in applying operation '{}': {}. ",
                        String::from_utf8_lossy(op),
                        e.text()
                    ));
                } else if !syntax_error {
                    errors.push_str(&format!("{path}:{linenum}: {}. ", e.text()));
                    syntax_error = true;
                }
            }
        }
        users.insert(name.to_vec(), def);
    }
    if !errors.is_empty() {
        errors.push_str("WARNING: ACL errors detected, no change to the previously active ACL rules was performed");
        return Err(errors);
    }
    let default = users
        .remove(&b"default"[..])
        .unwrap_or_else(|| Acl::fresh_default(table));
    srv.acl.replace_all(default, users);
    Ok(())
}

fn trim<'a>(mut s: &'a [u8], chars: &[u8]) -> &'a [u8] {
    while let [first, rest @ ..] = s {
        if !chars.contains(first) {
            break;
        }
        s = rest;
    }
    while let [rest @ .., last] = s {
        if !chars.contains(last) {
            break;
        }
        s = rest;
    }
    s
}

/// `user <name> <rules>`: how ACL LIST, ACL SAVE and CONFIG REWRITE write a user.
pub fn user_line(srv: &Server, slot: &UserSlot) -> Vec<u8> {
    let mut line = b"user ".to_vec();
    line.extend_from_slice(&slot.name);
    line.push(b' ');
    line.extend_from_slice(&slot.read().describe(&srv.commands));
    line
}

/// ACLSaveToFile: every user, through a temporary file renamed over `path`.
pub fn save(srv: &Server, path: &str) -> Result<(), String> {
    let mut content = Vec::new();
    for u in srv.acl.all() {
        content.extend_from_slice(&user_line(srv, &u));
        content.push(b'\n');
    }
    let tmp = format!("{path}.tmp-{}-{}", std::process::id(), engine::wall_ms());
    let result = std::fs::write(&tmp, &content)
        .map_err(|e| format!("Writing ACL file for ACL SAVE: {e}"))
        .and_then(|()| {
            std::fs::rename(&tmp, path).map_err(|e| format!("Renaming ACL file for ACL SAVE: {e}"))
        });
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

/// After ACL LOAD: every client of a user other than `default` is closed (its user was
/// replaced), the caller once its reply is written.
pub fn kill_clients_of_replaced_users(srv: &Server, me: &mut crate::cmd::ClientState) {
    for c in srv.clients.all() {
        if c.has(crate::clients::flag::MASTER) || c.user.lock().as_slice() == b"default" {
            continue;
        }
        super::close_client_of_removed_user(srv, me, &c);
    }
}

impl Acl {
    /// ACLCreateDefaultUser.
    pub fn fresh_default(table: &crate::cmd::table::CommandTable) -> User {
        let mut def = User::new(table.all.len(), false);
        for op in ["+@all", "~*", "&*", "on", "nopass"] {
            let _ = def.apply(table, op.as_bytes(), false);
        }
        def
    }

    /// Define user `name` (replacing any definition).
    pub fn put(&self, name: &[u8], def: User) {
        let slot = self.get(name);
        match slot {
            Some(slot) => self.store(&slot, def),
            None => {
                self.users
                    .write()
                    .insert(name.to_vec(), UserSlot::new(name, def));
            }
        }
    }

    /// ACL LOAD's swap: the default user's slot keeps its connections; every other user
    /// is new.
    fn replace_all(&self, default: User, users: BTreeMap<Vec<u8>, User>) {
        self.store(&self.default, default);
        let mut map: BTreeMap<Vec<u8>, Arc<UserSlot>> = users
            .into_iter()
            .map(|(n, d)| (n.clone(), UserSlot::new(&n, d)))
            .collect();
        map.insert(b"default".to_vec(), self.default.clone());
        *self.users.write() = map;
    }
}
