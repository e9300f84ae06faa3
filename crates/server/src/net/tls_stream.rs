//! A client's TLS connection: the mio socket and its rustls session.
//!
//! The worker's loop is edge-triggered, and `Conn::fill` stops reading at a short read,
//! trusting the next segment to raise a new edge. So `read` returns fewer bytes than asked
//! only once the socket itself said WouldBlock (or ended): plaintext rustls still holds
//! is never left behind without a socket edge to come. Handshake messages and alerts are
//! written as they are made; what the socket does not take waits in rustls
//! (`wants_write`), and the connection counts it as pending output, so the next writable
//! edge sends it.

use mio::net::TcpStream;
use rustls::ServerConnection;
use std::io::{self, ErrorKind, Read, Write};

/// Plaintext handed to rustls per write: within its default 64 KB of buffered records.
const WRITE_CHUNK: usize = 32 * 1024;

pub struct TlsStream {
    pub sock: TcpStream,
    tls: ServerConnection,
    /// The socket reached its end.
    sock_eof: bool,
}

impl TlsStream {
    pub fn new(sock: TcpStream, tls: ServerConnection) -> TlsStream {
        TlsStream {
            sock,
            tls,
            sock_eof: false,
        }
    }

    /// Encrypted bytes wait for the socket.
    pub fn wants_write(&self) -> bool {
        self.tls.wants_write()
    }

    /// Write what rustls holds until done or the socket is full.
    #[cold]
    #[inline(never)]
    pub fn send_pending(&mut self) -> io::Result<()> {
        while self.tls.wants_write() {
            match self.tls.write_tls(&mut self.sock) {
                Ok(0) => return Err(ErrorKind::WriteZero.into()),
                Ok(_) => {}
                Err(e) if e.kind() == ErrorKind::WouldBlock => return Ok(()),
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// Best effort on close: tell the peer (Redis calls SSL_shutdown).
    pub fn close_notify(&mut self) {
        self.tls.send_close_notify();
        let _ = self.send_pending();
    }

    /// Take the socket's bytes into rustls and process them. Ok(false): the socket
    /// has nothing more now.
    fn take_in(&mut self) -> io::Result<bool> {
        if self.sock_eof {
            return Ok(false);
        }
        loop {
            match self.tls.read_tls(&mut self.sock) {
                Ok(0) => {
                    self.sock_eof = true;
                    break;
                }
                Ok(_) => break,
                Err(e) if e.kind() == ErrorKind::WouldBlock => return Ok(false),
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        if let Err(e) = self.tls.process_new_packets() {
            if self.tls.is_handshaking() {
                // Redis logs a failed handshake as a warning.
                crate::log::warning(&format!("Error accepting a client connection: {e}"));
            }
            // The alert rustls queued for the peer goes out before the close.
            let _ = self.send_pending();
            return Err(io::Error::new(ErrorKind::InvalidData, e));
        }
        // Handshake replies (and key updates) leave now.
        self.send_pending()?;
        Ok(true)
    }
}

// Cold and never inlined: the plain sockets' read and write, which share
// `Stream`'s match, stay as small as they were without TLS.
impl Read for TlsStream {
    #[cold]
    #[inline(never)]
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let mut n = 0;
        let done = |n: usize, e: io::Error| if n > 0 { Ok(n) } else { Err(e) };
        loop {
            match self.tls.reader().read(&mut buf[n..]) {
                // The peer's close_notify (`buf[n..]` is never empty here).
                Ok(0) => return Ok(n),
                Ok(k) => n += k,
                Err(e) if e.kind() == ErrorKind::WouldBlock => {}
                Err(e) => return done(n, e),
            }
            if n == buf.len() {
                return Ok(n);
            }
            match self.take_in() {
                Ok(true) => {}
                // (Once the socket ended, rustls's reader says so itself.)
                Ok(false) if self.sock_eof => return done(n, ErrorKind::UnexpectedEof.into()),
                Ok(false) => return done(n, ErrorKind::WouldBlock.into()),
                Err(e) => return done(n, e),
            }
        }
    }
}

impl Write for TlsStream {
    #[cold]
    #[inline(never)]
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        // Records already made go first; rustls takes no more while the socket is full.
        self.send_pending()?;
        if self.tls.wants_write() {
            return Err(ErrorKind::WouldBlock.into());
        }
        let n = self
            .tls
            .writer()
            .write(&buf[..buf.len().min(WRITE_CHUNK)])?;
        if n == 0 && !buf.is_empty() {
            return Err(ErrorKind::WouldBlock.into());
        }
        self.send_pending()?;
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.send_pending()
    }
}
