//! The master's link as a client of the replica (Redis's `server.master`): listed by
//! CLIENT LIST with flag M and counted in `connected_clients` while the stream runs, and
//! closed by CLIENT KILL (the link is made again, with PSYNC); its id and age carry over a
//! partial resync, as Redis's cached master's do.

use crate::clients::{flag, ClientAddr, ClientInfo};
use crate::net::tls_client::LinkStream;
use crate::server::Server;
use parking_lot::Mutex;
use std::os::fd::AsRawFd;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

/// The master's client, in the client list until dropped.
pub struct Listed<'a> {
    srv: &'a Server,
    pub info: Arc<ClientInfo>,
}

/// List the master's client for the link on `link`, in database `db`; `like` lends its
/// mailbox (an internal client's, which no worker serves). `cached`: the id and creation
/// time it had on this master's last link, if any, else new ones (kept there).
pub fn list<'a>(
    srv: &'a Server,
    link: &LinkStream,
    db: usize,
    like: &ClientInfo,
    cached: &Mutex<Option<(u64, i64)>>,
) -> Listed<'a> {
    let (id, created_ms) = *cached
        .lock()
        .get_or_insert_with(|| (srv.next_client_id.fetch_add(1, Relaxed), engine::wall_ms()));
    let s = match link {
        LinkStream::Plain(s) => s,
        LinkStream::Tls(t) => &t.sock,
    };
    let addr = |a: std::io::Result<std::net::SocketAddr>| a.map(|a| a.to_string());
    let mut info = ClientInfo::new(
        id,
        ClientAddr {
            addr: addr(s.peer_addr()).unwrap_or_default(),
            laddr: addr(s.local_addr()).unwrap_or_default(),
            fd: s.as_raw_fd(),
            is_unix: false,
        },
        0,
        0,
        like.mailbox.clone(),
    );
    info.created_ms = created_ms;
    let info = Arc::new(info);
    info.set_flag(flag::MASTER, true);
    info.db.store(db, Relaxed);
    // It can do everything: no ACL user (Redis shows "(superuser)").
    *info.user.lock() = b"(superuser)".to_vec();
    srv.clients.add(info.clone());
    Listed { srv, info }
}

impl Drop for Listed<'_> {
    fn drop(&mut self) {
        self.srv.clients.remove(self.info.id);
    }
}
