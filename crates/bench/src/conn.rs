//! Connecting to the server (TCP or a Unix socket), the handshake (AUTH, HELLO, SELECT) and
//! a blocking request/reply helper for side connections.

use crate::resp::{self, Reply};
use serde::Serialize;
use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::time::Duration;

/// Where the server is and how to log in.
#[derive(Clone, Debug, Serialize)]
pub struct Target {
    pub host: String,
    pub port: u16,
    pub unix: Option<PathBuf>,
    pub user: Option<String>,
    #[serde(skip)]
    pub auth: Option<String>,
    pub resp: u8,
}

impl Target {
    pub fn describe(&self) -> String {
        match &self.unix {
            Some(p) => format!("unix:{}", p.display()),
            None => format!("{}:{}", self.host, self.port),
        }
    }
}

/// A connected blocking socket of either kind.
pub enum Sock {
    Tcp(TcpStream),
    Unix(UnixStream),
}

impl Read for Sock {
    fn read(&mut self, b: &mut [u8]) -> io::Result<usize> {
        match self {
            Sock::Tcp(s) => s.read(b),
            Sock::Unix(s) => s.read(b),
        }
    }
}

impl Write for Sock {
    fn write(&mut self, b: &[u8]) -> io::Result<usize> {
        match self {
            Sock::Tcp(s) => s.write(b),
            Sock::Unix(s) => s.write(b),
        }
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// A blocking connection that sends a command and waits for its reply.
pub struct Blocking {
    pub sock: Sock,
    buf: Vec<u8>,
}

impl Blocking {
    pub fn connect(t: &Target) -> Result<Blocking, String> {
        let sock = match &t.unix {
            Some(p) => Sock::Unix(
                UnixStream::connect(p).map_err(|e| format!("connect {}: {e}", p.display()))?,
            ),
            None => {
                let s = TcpStream::connect((t.host.as_str(), t.port))
                    .map_err(|e| format!("connect {}: {e}", t.describe()))?;
                let _ = s.set_nodelay(true);
                Sock::Tcp(s)
            }
        };
        let mut b = Blocking {
            sock,
            buf: Vec::new(),
        };
        b.set_timeout(Some(Duration::from_secs(30)));
        Ok(b)
    }

    pub fn set_timeout(&mut self, d: Option<Duration>) {
        let _ = match &self.sock {
            Sock::Tcp(s) => s.set_read_timeout(d),
            Sock::Unix(s) => s.set_read_timeout(d),
        };
    }

    /// Sends one command; returns the raw reply bytes and its kind.
    pub fn call(&mut self, args: &[&[u8]]) -> Result<(Vec<u8>, Reply), String> {
        let mut req = Vec::new();
        resp::encode(&mut req, args.iter().copied());
        self.sock
            .write_all(&req)
            .map_err(|e| format!("send: {e}"))?;
        self.read_reply()
    }

    /// Reads the next reply (skipping RESP3 pushes).
    pub fn read_reply(&mut self) -> Result<(Vec<u8>, Reply), String> {
        let mut chunk = [0u8; 16384];
        loop {
            if let Some((end, kind)) = resp::parse(&self.buf, 0)? {
                let raw: Vec<u8> = self.buf.drain(..end).collect();
                if kind == Reply::Push {
                    continue;
                }
                return Ok((raw, kind));
            }
            match self.sock.read(&mut chunk) {
                Ok(0) => return Err("server closed the connection".into()),
                Ok(n) => self.buf.extend_from_slice(&chunk[..n]),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(format!("read: {e}")),
            }
        }
    }

    /// Like `call`, but an error reply becomes `Err` with the server's text.
    pub fn call_ok(&mut self, args: &[&[u8]]) -> Result<Vec<u8>, String> {
        let (raw, kind) = self.call(args)?;
        if kind == Reply::Error {
            return Err(error_text(&raw));
        }
        Ok(raw)
    }

    /// AUTH, HELLO (for RESP3) and SELECT, each checked.
    pub fn handshake(&mut self, t: &Target, db: u32) -> Result<(), String> {
        if let Some(pass) = &t.auth {
            let mut args: Vec<&[u8]> = vec![b"AUTH"];
            if let Some(u) = &t.user {
                args.push(u.as_bytes());
            }
            args.push(pass.as_bytes());
            self.call_ok(&args)
                .map_err(|e| format!("AUTH failed: {e}"))?;
        }
        if t.resp == 3 {
            self.call_ok(&[b"HELLO", b"3"])
                .map_err(|e| format!("HELLO 3 failed: {e}"))?;
        }
        if db != 0 {
            let n = db.to_string();
            self.call_ok(&[b"SELECT", n.as_bytes()])
                .map_err(|e| format!("SELECT {db} failed: {e}"))?;
        }
        Ok(())
    }

    /// Bytes read ahead of the last reply (none after a clean handshake).
    pub fn leftover(&self) -> usize {
        self.buf.len()
    }
}

/// The text of an error reply, without the `-` and the CRLF.
pub fn error_text(raw: &[u8]) -> String {
    String::from_utf8_lossy(raw.get(1..).unwrap_or_default())
        .trim_end()
        .to_string()
}

/// Raises the open-files limit to its hard maximum (thousands of connections need it).
pub fn raise_fd_limit() {
    use rustix::process::{getrlimit, setrlimit, Resource};
    let mut lim = getrlimit(Resource::Nofile);
    if lim.current < lim.maximum {
        lim.current = lim.maximum;
        let _ = setrlimit(Resource::Nofile, lim);
    }
}
