//! The registry of connected clients, shared by all workers for CLIENT LIST/KILL/INFO.
//!
//! A connection's worker owns its socket and buffers; what other threads may read or ask
//! for lives in [`ClientInfo`]: atomics and small locks touched only when a client's
//! state changes, never a lock on the command path of other clients.

use parking_lot::Mutex;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::sync::Arc;

/// What the rest of the server may see of one client.
pub struct ClientInfo {
    pub id: u64,
    pub addr: String,
    pub laddr: String,
    pub fd: i32,
    pub worker: usize,
    pub created_ms: i64,
    pub name: Mutex<Vec<u8>>,
    pub lib_name: Mutex<String>,
    pub db: AtomicUsize,
    pub last_interaction_ms: AtomicI64,
    pub last_cmd: Mutex<String>,
    pub qbuf: AtomicU64,
    pub obuf: AtomicU64,
    pub resp: AtomicU64,
    /// Set by CLIENT KILL (or shutdown): the owning worker closes the connection.
    pub kill: AtomicBool,
    pub user: String,
    pub is_unix: bool,
    /// Flag letters as CLIENT LIST shows them (e.g. "N", "M" for MONITOR).
    pub flags: Mutex<String>,
    pub no_evict: AtomicBool,
}

impl ClientInfo {
    pub fn new(
        id: u64,
        addr: String,
        laddr: String,
        fd: i32,
        worker: usize,
        is_unix: bool,
    ) -> Self {
        let now = engine::now_ms();
        ClientInfo {
            id,
            addr,
            laddr,
            fd,
            worker,
            created_ms: now,
            name: Mutex::new(Vec::new()),
            lib_name: Mutex::new(String::new()),
            db: AtomicUsize::new(0),
            last_interaction_ms: AtomicI64::new(now),
            last_cmd: Mutex::new("NULL".to_string()),
            qbuf: AtomicU64::new(0),
            obuf: AtomicU64::new(0),
            resp: AtomicU64::new(2),
            kill: AtomicBool::new(false),
            user: "default".to_string(),
            is_unix,
            flags: Mutex::new("N".to_string()),
            no_evict: AtomicBool::new(false),
        }
    }

    /// One line of CLIENT LIST / CLIENT INFO, with Redis 7.0's fields in Redis's order.
    pub fn describe(&self, now_ms: i64) -> String {
        let name = String::from_utf8_lossy(&self.name.lock()).into_owned();
        let age = (now_ms - self.created_ms).max(0) / 1000;
        let idle = (now_ms - self.last_interaction_ms.load(Relaxed)).max(0) / 1000;
        format!(
            "id={} addr={} laddr={} fd={} name={} age={} idle={} flags={} db={} sub=0 psub=0 ssub=0 multi=-1 qbuf={} qbuf-free=0 argv-mem=0 multi-mem=0 rbs=0 rbp=0 obl=0 oll=0 omem={} tot-mem=0 events=r cmd={} user={} redir=-1 resp={}",
            self.id,
            self.addr,
            self.laddr,
            self.fd,
            name,
            age,
            idle,
            self.flags.lock(),
            self.db.load(Relaxed),
            self.qbuf.load(Relaxed),
            self.obuf.load(Relaxed),
            self.last_cmd.lock(),
            self.user,
            self.resp.load(Relaxed),
        )
    }
}

#[derive(Default)]
pub struct ClientRegistry {
    clients: Mutex<BTreeMap<u64, Arc<ClientInfo>>>,
}

impl ClientRegistry {
    pub fn add(&self, c: Arc<ClientInfo>) {
        self.clients.lock().insert(c.id, c);
    }

    pub fn remove(&self, id: u64) {
        self.clients.lock().remove(&id);
    }

    pub fn len(&self) -> usize {
        self.clients.lock().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// A snapshot of all clients, ordered by id.
    pub fn all(&self) -> Vec<Arc<ClientInfo>> {
        self.clients.lock().values().cloned().collect()
    }

    pub fn get(&self, id: u64) -> Option<Arc<ClientInfo>> {
        self.clients.lock().get(&id).cloned()
    }
}
