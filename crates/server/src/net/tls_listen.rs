//! The TLS listeners, which CONFIG SET tls-port moves at run time (Redis's
//! changeListenPort): the new port is bound first, then the old listeners are shut down,
//! which wakes their acceptor threads out of `accept` to end. Connections already open
//! stay.

use super::listener::{bind_tcp, spawn_tcp};
use super::worker::WorkerHandle;
use crate::server::Server;
use parking_lot::Mutex;
use std::net::{Shutdown, TcpListener};
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::{Arc, OnceLock, Weak};

#[derive(Default)]
pub struct TlsListen {
    /// The server and its workers, for listeners started later (set at start).
    server: OnceLock<Weak<Server>>,
    workers: OnceLock<Vec<Arc<WorkerHandle>>>,
    running: Mutex<Option<Running>>,
}

struct Running {
    port: u16,
    listeners: Vec<Arc<TcpListener>>,
    stop: Arc<AtomicBool>,
}

impl Running {
    fn stop(self) {
        self.stop.store(true, Relaxed);
        for l in &self.listeners {
            // Linux answers the blocked accept with an error.
            let _ = socket2::SockRef::from(&**l).shutdown(Shutdown::Both);
        }
    }
}

impl TlsListen {
    /// At start: the workers new listeners hand connections to, and the listeners bound.
    pub fn start(
        &self,
        srv: &Arc<Server>,
        port: u16,
        listeners: Vec<TcpListener>,
        workers: &[Arc<WorkerHandle>],
    ) {
        let _ = self.server.set(Arc::downgrade(srv));
        let _ = self.workers.set(workers.to_vec());
        if !listeners.is_empty() {
            *self.running.lock() = Some(serve(srv, port, listeners, workers));
        }
    }

    /// After CONFIG SET tls-port: listen on the new port (0: none). The error is
    /// Redis's reply text.
    pub fn follow_config(&self) -> Result<(), String> {
        let (Some(srv), Some(workers)) = (
            self.server.get().and_then(Weak::upgrade),
            self.workers.get(),
        ) else {
            return Ok(());
        };
        let srv = &srv;
        let port = srv.config.get_i64("tls-port") as u16;
        let mut running = self.running.lock();
        if running.as_ref().map_or(0, |r| r.port) == port {
            return Ok(());
        }
        let next = if port > 0 {
            let bind = srv.config.get("bind");
            let backlog = srv.config.get_i64("tcp-backlog") as i32;
            let ls = bind_tcp(&bind, port, backlog).map_err(|e| {
                crate::log::warning(&e);
                "Unable to listen on this port. Check server logs.".to_string()
            })?;
            Some(serve(srv, port, ls, workers))
        } else {
            None
        };
        if let Some(old) = running.take() {
            old.stop();
        }
        *running = next;
        // INFO's tcp_port is the TLS port when there is no plain one.
        if srv.config.get_i64("port") == 0 {
            srv.tcp_port.store(port as u64, Relaxed);
        }
        Ok(())
    }
}

fn serve(
    srv: &Arc<Server>,
    port: u16,
    listeners: Vec<TcpListener>,
    workers: &[Arc<WorkerHandle>],
) -> Running {
    let stop = Arc::new(AtomicBool::new(false));
    let listeners: Vec<Arc<TcpListener>> = listeners.into_iter().map(Arc::new).collect();
    for l in &listeners {
        spawn_tcp(srv.clone(), l.clone(), workers.to_vec(), true, stop.clone());
    }
    Running {
        port,
        listeners,
        stop,
    }
}
