//! How other threads reach a worker: new connections, and connections that need
//! attention (killed, MONITOR output waiting, clients unpaused).
//!
//! Wakes are coalesced: a producer only writes the worker's eventfd when the worker has
//! not already been woken since it last emptied the mailbox.

use super::stream::NewConn;
use parking_lot::Mutex;
use std::sync::atomic::{AtomicBool, Ordering::SeqCst};

pub struct Mailbox {
    waker: mio::Waker,
    woken: AtomicBool,
    /// Tokens of connections the worker must service.
    tokens: Mutex<Vec<usize>>,
    /// Connections accepted for this worker.
    conns: Mutex<Vec<NewConn>>,
}

impl Mailbox {
    pub fn new(registry: &mio::Registry, token: mio::Token) -> std::io::Result<Mailbox> {
        Ok(Mailbox {
            waker: mio::Waker::new(registry, token)?,
            woken: AtomicBool::new(false),
            tokens: Mutex::new(Vec::new()),
            conns: Mutex::new(Vec::new()),
        })
    }

    /// Wake the worker (at most one eventfd write until it drains the mailbox).
    pub fn wake(&self) {
        if !self.woken.swap(true, SeqCst) {
            let _ = self.waker.wake();
        }
    }

    /// Ask the worker to service connection `token`.
    pub fn notify(&self, token: usize) {
        self.tokens.lock().push(token);
        self.wake();
    }

    /// Hand a new connection to the worker.
    pub fn deliver(&self, nc: NewConn) {
        self.conns.lock().push(nc);
        self.wake();
    }

    /// Worker side: take everything queued. Clearing `woken` first means a producer that
    /// queues after this point wakes the worker again.
    pub fn drain(&self, tokens: &mut Vec<usize>, conns: &mut Vec<NewConn>) {
        self.woken.store(false, SeqCst);
        std::mem::swap(&mut *self.tokens.lock(), tokens);
        std::mem::swap(&mut *self.conns.lock(), conns);
    }
}
