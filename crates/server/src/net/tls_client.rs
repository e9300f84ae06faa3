//! The replica's link to its master over TLS (`tls-replication yes`): a blocking rustls
//! client stream over the link's TCP socket. As Redis 7.0, the master's certificate chain
//! is checked against the CA (`tls-ca-cert-file` / `tls-ca-cert-dir`) but not its host
//! name, and the client certificate is `tls-client-cert-file` / `tls-client-key-file`
//! when both are set, else the server's own.

use crate::server::Server;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{CertificateError, ClientConnection, DigitallySignedStruct, SignatureScheme};
use rustls::{Error, StreamOwned};
use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::time::Duration;

/// The link's socket: plain, or TLS over it.
pub enum LinkStream {
    Plain(TcpStream),
    Tls(Box<StreamOwned<ClientConnection, TcpStream>>),
}

impl LinkStream {
    fn tcp(&self) -> &TcpStream {
        match self {
            LinkStream::Plain(s) => s,
            LinkStream::Tls(t) => &t.sock,
        }
    }

    pub fn set_read_timeout(&self, d: Option<Duration>) -> io::Result<()> {
        self.tcp().set_read_timeout(d)
    }
}

impl Read for LinkStream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            LinkStream::Plain(s) => s.read(buf),
            LinkStream::Tls(t) => t.read(buf),
        }
    }
}

impl Write for LinkStream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            LinkStream::Plain(s) => s.write(buf),
            LinkStream::Tls(t) => t.write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            LinkStream::Plain(s) => s.flush(),
            LinkStream::Tls(t) => t.flush(),
        }
    }
}

/// The link's stream to the master at `ip`: TLS with `tls-replication yes` (the
/// handshake done here, under the socket's timeouts, so a refusal shows at connect).
pub fn connect(srv: &Server, s: TcpStream, ip: std::net::IpAddr) -> io::Result<LinkStream> {
    if !srv.config.get_bool("tls-replication") {
        return Ok(LinkStream::Plain(s));
    }
    let config = srv
        .tls
        .for_replication()
        .ok_or_else(|| io::Error::other("TLS is not configured for replication"))?;
    let conn = ClientConnection::new(config, ServerName::IpAddress(ip.into()))
        .map_err(io::Error::other)?;
    let mut tls = StreamOwned::new(conn, s);
    while tls.conn.is_handshaking() {
        tls.conn.complete_io(&mut tls.sock)?;
    }
    Ok(LinkStream::Tls(Box::new(tls)))
}

/// WebPKI's check of the chain, without the host name (Redis sets none).
#[derive(Debug)]
pub struct ChainOnly(pub Arc<WebPkiServerVerifier>);

impl ServerCertVerifier for ChainOnly {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, Error> {
        // The name is checked last, once the chain is good.
        match self
            .0
            .verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now)
        {
            Err(Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        self.0.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}
