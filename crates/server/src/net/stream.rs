//! A client socket: TCP, Unix domain, or TLS over TCP (`tls_stream`).

use super::tls_stream::TlsStream;
use mio::event::Source;
use mio::{Interest, Registry, Token};
use std::io::{self, Read, Write};

pub enum Stream {
    Tcp(mio::net::TcpStream),
    Unix(mio::net::UnixStream),
    /// Boxed: the rustls session is large, and the plain variants stay small.
    Tls(Box<TlsStream>),
}

/// A connection handed from the acceptor to a worker.
pub struct NewConn {
    pub stream: Stream,
    pub addr: String,
    pub laddr: String,
    pub fd: i32,
}

impl Read for Stream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.read(buf),
            Stream::Unix(s) => s.read(buf),
            Stream::Tls(s) => s.read(buf),
        }
    }
}

impl Write for Stream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.write(buf),
            Stream::Unix(s) => s.write(buf),
            Stream::Tls(s) => s.write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Stream {
    pub fn shutdown(&mut self) {
        let _ = match self {
            Stream::Tcp(s) => s.shutdown(std::net::Shutdown::Both),
            Stream::Unix(s) => s.shutdown(std::net::Shutdown::Both),
            Stream::Tls(s) => {
                s.close_notify();
                s.sock.shutdown(std::net::Shutdown::Both)
            }
        };
    }

    /// TLS records made but not yet taken by the socket (plain sockets hold none).
    #[inline]
    pub fn tls_pending(&self) -> bool {
        match self {
            Stream::Tls(s) => s.wants_write(),
            _ => false,
        }
    }

    /// Send those records; false if the socket failed.
    pub fn send_tls_pending(&mut self) -> bool {
        match self {
            Stream::Tls(s) => s.send_pending().is_ok(),
            _ => true,
        }
    }
}

impl Source for Stream {
    fn register(&mut self, r: &Registry, t: Token, i: Interest) -> io::Result<()> {
        match self {
            Stream::Tcp(s) => s.register(r, t, i),
            Stream::Unix(s) => s.register(r, t, i),
            Stream::Tls(s) => s.sock.register(r, t, i),
        }
    }

    fn reregister(&mut self, r: &Registry, t: Token, i: Interest) -> io::Result<()> {
        match self {
            Stream::Tcp(s) => s.reregister(r, t, i),
            Stream::Unix(s) => s.reregister(r, t, i),
            Stream::Tls(s) => s.sock.reregister(r, t, i),
        }
    }

    fn deregister(&mut self, r: &Registry) -> io::Result<()> {
        match self {
            Stream::Tcp(s) => s.deregister(r),
            Stream::Unix(s) => s.deregister(r),
            Stream::Tls(s) => s.sock.deregister(r),
        }
    }
}
