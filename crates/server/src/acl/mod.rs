//! Access control lists (Redis 6+'s ACL): users, their passwords and what each may run.
//!
//! A connection holds its user's [`UserSlot`]. The dispatcher checks a command against
//! it only when the slot says it is restricted (one relaxed load otherwise, as for the
//! default user's `+@all ~* &*`). ACL SETUSER changes a user in place, so its connected
//! clients see the new rules with their next command, as in Redis.

pub mod describe;
pub mod file;
pub mod log;
pub mod selector;
pub mod user;

use crate::cmd::table::{CommandDef, CommandTable};
use parking_lot::{Mutex, RwLock, RwLockReadGuard};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::Arc;
use user::User;

/// Why a command was refused (ACL_DENIED_*), with the refused argument's index.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Denied {
    Command,
    Key(usize),
    Channel(usize),
}

impl Denied {
    /// Redis's ACL_DENIED_* value order, then the argument index: which of several
    /// selectors' refusals is reported.
    fn rank(self) -> (u8, usize) {
        match self {
            Denied::Command => (1, 0),
            Denied::Key(i) => (2, i),
            Denied::Channel(i) => (4, i),
        }
    }

    /// The -NOPERM error of a refused command.
    pub fn noperm(self, cmd: &CommandDef) -> String {
        match self {
            Denied::Command => format!(
                "NOPERM this user has no permissions to run the '{}' command",
                cmd.fullname
            ),
            Denied::Key(_) => {
                "NOPERM this user has no permissions to access one of the keys used as arguments"
                    .into()
            }
            Denied::Channel(_) => "NOPERM this user has no permissions to access one of the channels used as arguments".into(),
        }
    }

    /// getAclErrorMessage (scripts' refusals).
    pub fn message(self) -> &'static str {
        match self {
            Denied::Command => "can't run this command or subcommand",
            Denied::Key(_) => {
                "can't access at least one of the keys mentioned in the command arguments"
            }
            Denied::Channel(_) => "can't publish to the channel mentioned in the command",
        }
    }

    /// EXEC's reason when the rules changed after the command was queued.
    pub fn exec_reason(self) -> &'static str {
        match self {
            Denied::Command => "no permission to execute the command or subcommand",
            Denied::Key(_) => "no permission to touch the specified keys",
            Denied::Channel(_) => "no permission to access one of the channels used as arguments",
        }
    }

    pub fn reason(self) -> log::Reason {
        match self {
            Denied::Command => log::Reason::Command,
            Denied::Key(_) => log::Reason::Key,
            Denied::Channel(_) => log::Reason::Channel,
        }
    }

    /// The ACL LOG object: the command's full name, or the refused key or channel.
    pub fn object(self, cmd: &CommandDef, argv: &[&[u8]]) -> Vec<u8> {
        match self {
            Denied::Command => cmd.fullname.as_bytes().to_vec(),
            Denied::Key(i) | Denied::Channel(i) => argv.get(i).map_or(Vec::new(), |a| a.to_vec()),
        }
    }
}

/// One user as connections reference it: its name and its current definition.
pub struct UserSlot {
    pub name: Vec<u8>,
    def: RwLock<User>,
    /// Some selector permits every command, key and channel.
    unrestricted: AtomicBool,
}

impl UserSlot {
    fn new(name: &[u8], def: User) -> Arc<UserSlot> {
        Arc::new(UserSlot {
            name: name.to_vec(),
            unrestricted: AtomicBool::new(def.unrestricted()),
            def: RwLock::new(def),
        })
    }

    pub fn unrestricted(&self) -> bool {
        self.unrestricted.load(Relaxed)
    }

    pub fn read(&self) -> RwLockReadGuard<'_, User> {
        self.def.read()
    }

    fn replace(&self, def: User) {
        let mut cur = self.def.write();
        self.unrestricted.store(def.unrestricted(), Relaxed);
        *cur = def;
    }

    /// ACLCheckAllUserCommandPerm.
    pub fn check(&self, cmd: &CommandDef, argv: &[&[u8]]) -> Result<(), Denied> {
        let def = self.def.read();
        let mut keys = None;
        let mut worst: Option<Denied> = None;
        for s in &def.selectors {
            match s.check(cmd, argv, &mut keys) {
                Ok(()) => return Ok(()),
                Err(d) => {
                    if worst.is_none_or(|w| d.rank() > w.rank()) {
                        worst = Some(d);
                    }
                }
            }
        }
        Err(worst.unwrap_or(Denied::Command))
    }

    /// ACLUserCheckCmdWithUnrestrictedKeyAccess for reads (SORT's BY and GET).
    pub fn may_read_every_key(&self, cmd: &CommandDef, argv: &[&[u8]]) -> bool {
        let def = self.def.read();
        let mut keys = None;
        def.selectors.iter().any(|s| {
            s.check(cmd, argv, &mut keys).is_ok() && s.every_key_ok(crate::cmd::keyspec::KEY_ACCESS)
        })
    }
}

/// Every user, the default one, and the log.
pub struct Acl {
    users: RwLock<BTreeMap<Vec<u8>, Arc<UserSlot>>>,
    pub default: Arc<UserSlot>,
    /// The default user needs a password, or is off: new connections start
    /// unauthenticated (Redis's authRequired).
    auth_required: AtomicBool,
    pub log: Mutex<log::AclLog>,
}

impl Acl {
    /// ACLInit: the default user `on nopass ~* &* +@all`, then `requirepass`.
    pub fn new(table: &CommandTable, requirepass: &str) -> Acl {
        let default = UserSlot::new(b"default", Acl::fresh_default(table));
        let acl = Acl {
            users: RwLock::new(BTreeMap::from([(b"default".to_vec(), default.clone())])),
            default,
            auth_required: AtomicBool::new(false),
            log: Mutex::new(log::AclLog::default()),
        };
        acl.set_default_password(table, requirepass);
        acl
    }

    /// ACLUpdateDefaultUserPassword (`requirepass`): the default user's passwords become
    /// this one, or none needed when empty.
    pub fn set_default_password(&self, table: &CommandTable, pass: &str) {
        let mut def = self.default.read().clone();
        let _ = def.apply(table, b"resetpass", false);
        if pass.is_empty() {
            let _ = def.apply(table, b"nopass", false);
        } else {
            let _ = def.apply(table, format!(">{pass}").as_bytes(), false);
        }
        self.store(&self.default, def);
    }

    fn store(&self, slot: &UserSlot, def: User) {
        if std::ptr::eq(slot, &*self.default) {
            self.auth_required
                .store(!(def.nopass && def.enabled), Relaxed);
        }
        slot.replace(def);
    }

    pub fn auth_required(&self) -> bool {
        self.auth_required.load(Relaxed)
    }

    /// The default user needs no password (protected mode applies).
    pub fn default_nopass(&self) -> bool {
        self.default.read().nopass
    }

    pub fn get(&self, name: &[u8]) -> Option<Arc<UserSlot>> {
        self.users.read().get(name).cloned()
    }

    /// Every user, by name.
    pub fn all(&self) -> Vec<Arc<UserSlot>> {
        self.users.read().values().cloned().collect()
    }

    /// ACLCheckUserCredentials: the user `name` authenticates with `pass`.
    pub fn authenticate(&self, name: &[u8], pass: &[u8]) -> Option<Arc<UserSlot>> {
        let slot = self.get(name)?;
        let ok = {
            let def = slot.read();
            def.enabled && def.password_ok(pass)
        };
        ok.then_some(slot)
    }

    /// ACLStringSetUser: apply `rules` to user `name` (created when missing), all or
    /// nothing. Returns the error text, and the user's old and new definitions.
    pub fn set_user(
        &self,
        table: &CommandTable,
        name: &[u8],
        rules: &[&[u8]],
        allchannels: bool,
    ) -> Result<(Option<User>, User), Vec<u8>> {
        let merged = user::merge_selector_args(rules).map_err(|j| {
            crate::cmd::args::error_text(&[
                b"ERR Unmatched parenthesis in acl selector starting at '",
                crate::cmd::args::c_str(rules[j]),
                b"'.",
            ])
        })?;
        let mut users = self.users.write();
        let old = users.get(name).map(|s| s.read().clone());
        let mut def = old
            .clone()
            .unwrap_or_else(|| User::new(table.all.len(), allchannels));
        for op in &merged {
            if let Err(e) = def.apply(table, op, allchannels) {
                return Err(crate::cmd::args::error_text(&[
                    b"ERR Error in ACL SETUSER modifier '",
                    crate::cmd::args::c_str(op),
                    b"': ",
                    e.text().as_bytes(),
                ]));
            }
        }
        // Stored under the users' lock, so that concurrent changes of one user apply in
        // turn (each on the other's result).
        match users.get(name) {
            Some(slot) => self.store(slot, def.clone()),
            None => {
                users.insert(name.to_vec(), UserSlot::new(name, def.clone()));
            }
        }
        Ok((old, def))
    }

    /// Remove users (never `default`); the removed ones.
    pub fn delete(&self, names: &[&[u8]]) -> Vec<Arc<UserSlot>> {
        let mut users = self.users.write();
        names
            .iter()
            .filter(|n| **n != b"default")
            .filter_map(|n| users.remove(*n))
            .collect()
    }
}

/// addACLLogEntry: one denial or failed authentication of the client `info`.
pub fn log_event(
    srv: &crate::server::Server,
    info: &crate::clients::ClientInfo,
    reason: log::Reason,
    context: log::Context,
    object: Vec<u8>,
    username: Vec<u8>,
) {
    let e = log::Entry {
        count: 1,
        reason,
        context,
        object,
        username,
        ctime_ms: engine::wall_ms(),
        client_info: srv.client_line(info),
    };
    let max = srv.config.get_i64("acllog-max-len").max(0) as usize;
    srv.acl.log.lock().add(e, max);
}

/// The dispatcher's check of a client's command (ACLCheckAllPerm): `Err` with the
/// refusal, logged in the client's context, when its user may not run it.
pub fn check_client(
    srv: &crate::server::Server,
    client: &crate::cmd::ClientState,
    cmd: &CommandDef,
    argv: &[&[u8]],
    context: log::Context,
) -> Result<(), Denied> {
    let Some(user) = &client.user else {
        return Ok(());
    };
    if user.unrestricted() {
        return Ok(());
    }
    user.check(cmd, argv).inspect_err(|d| {
        log_event(
            srv,
            &client.info,
            d.reason(),
            context,
            d.object(cmd, argv),
            user.name.clone(),
        )
    })
}

/// Is the client `c` authenticated as user `name`? Never the master's link on a replica:
/// it has no ACL user (Redis's NULL user, shown as "(superuser)"), so no ACL change closes
/// it.
pub fn authenticated_as(c: &crate::clients::ClientInfo, name: &[u8]) -> bool {
    !c.has(crate::clients::flag::MASTER) && c.user.lock().as_slice() == name
}

/// `acl-pubsub-default allchannels`: new users and selectors may use every channel.
pub fn pubsub_default_all(srv: &crate::server::Server) -> bool {
    srv.config.get("acl-pubsub-default") == "allchannels"
}

/// ACLFreeUserAndKillClients for one client `c` of a user that is gone (ACL DELUSER,
/// ACL LOAD): closed; the caller `me` once its reply is written, running meanwhile as the
/// default user, unauthenticated.
pub fn close_client_of_removed_user(
    srv: &crate::server::Server,
    me: &mut crate::cmd::ClientState,
    c: &crate::clients::ClientInfo,
) {
    if c.id == me.id {
        me.authenticated = false;
        me.set_user(srv.acl.default.clone());
        me.close_after_reply = true;
    } else {
        srv.clients.kill(c);
    }
}
