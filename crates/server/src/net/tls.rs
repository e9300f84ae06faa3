//! TLS (`tls-port`): the server's rustls context, built from the tls-* options as Redis's
//! tlsConfigure builds its SSL_CTX, and replaced whole by CONFIG SET (a bad file leaves
//! the old one in place).
//!
//! What rustls cannot do as OpenSSL does (see docs/compatibility.md): TLSv1 and TLSv1.1,
//! legacy encrypted PEM keys (PKCS#8 ones are read), OpenSSL's cipher-string language beyond
//! exact suite names, DH parameters (rustls offers no finite-field DH: the file is only
//! checked for readability), and `tls-session-cache-timeout`.

use crate::server::Server;
use parking_lot::RwLock;
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::{NoServerSessionStorage, ServerSessionMemoryCache, WebPkiClientVerifier};
use rustls::sign::{CertifiedKey, SingleCertAndKey};
use rustls::{client::WebPkiServerVerifier, SupportedProtocolVersion};
use rustls::{ClientConfig, RootCertStore, ServerConfig, SupportedCipherSuite};
use std::sync::Arc;

/// Options whose change rebuilds the context (Redis's applyTlsCfg), and `tls-port`
/// (applyTLSPort: configures TLS when it is not yet); a failed CONFIG SET restores them.
pub const OPTIONS: [&str; 19] = [
    "tls-port",
    "tls-cert-file",
    "tls-key-file",
    "tls-key-file-pass",
    "tls-client-cert-file",
    "tls-client-key-file",
    "tls-client-key-file-pass",
    "tls-dh-params-file",
    "tls-ca-cert-file",
    "tls-ca-cert-dir",
    "tls-protocols",
    "tls-ciphers",
    "tls-ciphersuites",
    "tls-prefer-server-ciphers",
    "tls-session-caching",
    "tls-session-cache-size",
    "tls-session-cache-timeout",
    "tls-cluster",
    "tls-replication",
];

/// The current context, when TLS is configured.
#[derive(Default)]
pub struct Tls {
    context: RwLock<Option<Arc<Context>>>,
    /// The `tls-port` listeners.
    pub listen: super::tls_listen::TlsListen,
}

/// One server configuration per `tls-auth-clients` value (Redis sets the verify mode per
/// connection; rustls per configuration). `optional` and `yes` need a CA.
struct Context {
    no: Arc<ServerConfig>,
    optional: Option<Arc<ServerConfig>>,
    yes: Option<Arc<ServerConfig>>,
    /// The replica's side of a TLS link (needs a CA to check the master).
    client: Option<Arc<ClientConfig>>,
}

impl Tls {
    /// The configuration a new connection gets under the current `tls-auth-clients`;
    /// None when TLS is not configured or client certificates cannot be checked.
    pub fn for_accept(&self, srv: &Server) -> Option<Arc<ServerConfig>> {
        let ctx = self.context.read().clone()?;
        match srv.config.get("tls-auth-clients").as_str() {
            "no" => Some(ctx.no.clone()),
            "optional" => ctx.optional.clone(),
            _ => ctx.yes.clone(),
        }
    }

    /// The configuration of the link to a TLS master (`tls-replication yes`).
    pub fn for_replication(&self) -> Option<Arc<ClientConfig>> {
        self.context.read().as_ref()?.client.clone()
    }

    pub fn is_configured(&self) -> bool {
        self.context.read().is_some()
    }
}

/// Is TLS in use (Redis configures it for any of these)?
pub fn wanted(srv: &Server) -> bool {
    let c = &srv.config;
    c.get_i64("tls-port") != 0 || c.get_bool("tls-replication") || c.get_bool("tls-cluster")
}

/// Redis's tlsConfigure: build a context from the options and install it (true); on
/// failure the reason is logged as Redis logs it and the old context stays.
pub fn configure(srv: &Server) -> bool {
    match build(srv) {
        Ok(ctx) => {
            *srv.tls.context.write() = Some(Arc::new(ctx));
            true
        }
        Err(reason) => {
            crate::log::warning(&reason);
            false
        }
    }
}

/// At start: with TLS wanted and not configurable, Redis exits.
pub fn at_startup(srv: &Server) -> Result<(), String> {
    if wanted(srv) && !configure(srv) {
        return Err("Failed to configure TLS. Check logs for more info.".into());
    }
    Ok(())
}

/// After CONFIG SET of `names`: rebuild when one of them is a TLS option (or tls-port
/// turns TLS on). The error is Redis's reply text.
pub fn config_changed(srv: &Server, names: &[String]) -> Result<(), String> {
    let port = names.iter().any(|n| n == "tls-port");
    let tls_opt = names
        .iter()
        .any(|n| n != "tls-port" && OPTIONS.contains(&n.as_str()));
    let rebuild = (tls_opt && wanted(srv)) || (port && !srv.tls.is_configured());
    if rebuild && !configure(srv) {
        return Err("Unable to update TLS configuration. Check server logs.".into());
    }
    if port {
        srv.tls.listen.follow_config()?;
    }
    Ok(())
}

fn opt(srv: &Server, name: &str) -> Option<String> {
    Some(srv.config.get(name)).filter(|v| !v.is_empty())
}

fn build(srv: &Server) -> Result<Context, String> {
    let cert_file = opt(srv, "tls-cert-file").ok_or("No tls-cert-file configured!")?;
    let key_file = opt(srv, "tls-key-file").ok_or("No tls-key-file configured!")?;
    let ca_file = opt(srv, "tls-ca-cert-file");
    let ca_dir = opt(srv, "tls-ca-cert-dir");
    let needs_ca = srv.config.get("tls-auth-clients") != "no"
        || srv.config.get_bool("tls-cluster")
        || srv.config.get_bool("tls-replication");
    if needs_ca && ca_file.is_none() && ca_dir.is_none() {
        return Err("Either tls-ca-cert-file or tls-ca-cert-dir must be specified when tls-cluster, tls-replication or tls-auth-clients are enabled!".into());
    }
    let versions = protocols(opt(srv, "tls-protocols").as_deref())?;
    let mut provider = rustls::crypto::ring::default_provider();
    provider.cipher_suites = cipher_suites(
        opt(srv, "tls-ciphers").as_deref(),
        opt(srv, "tls-ciphersuites").as_deref(),
    )?;
    let provider = Arc::new(provider);
    let key = certified_key(
        &cert_file,
        &key_file,
        opt(srv, "tls-key-file-pass").as_deref(),
        &provider,
    )?;
    let roots = match (&ca_file, &ca_dir) {
        (None, None) => None,
        _ => Some(Arc::new(
            ca_roots(ca_file.as_deref(), ca_dir.as_deref()).map_err(|e| {
                format!("Failed to configure CA certificate(s) file/directory: {e}")
            })?,
        )),
    };
    if let Some(dh) = opt(srv, "tls-dh-params-file") {
        std::fs::read(&dh).map_err(|e| format!("Failed to load {dh}: {}", strerror(&e)))?;
    }
    let make = |auth: Auth| -> Result<Option<Arc<ServerConfig>>, String> {
        let builder = ServerConfig::builder_with_provider(provider.clone())
            .with_protocol_versions(&versions)
            .map_err(|e| format!("Failed to configure ciphers: {e}"))?;
        let builder = match (auth, &roots) {
            (Auth::No, _) => builder.with_no_client_auth(),
            (_, None) => return Ok(None),
            (auth, Some(roots)) => {
                let mut v =
                    WebPkiClientVerifier::builder_with_provider(roots.clone(), provider.clone());
                if auth == Auth::Optional {
                    v = v.allow_unauthenticated();
                }
                let v = v.build().map_err(|e| {
                    format!("Failed to configure CA certificate(s) file/directory: {e}")
                })?;
                builder.with_client_cert_verifier(v)
            }
        };
        let mut config = builder.with_cert_resolver(Arc::new(SingleCertAndKey::from(key.clone())));
        config.ignore_client_order = srv.config.get_bool("tls-prefer-server-ciphers");
        config.session_storage = if srv.config.get_bool("tls-session-caching") {
            // OpenSSL reads a size of 0 as "no limit".
            let size = match srv.config.get_i64("tls-session-cache-size") {
                0 => 1 << 20,
                n => n as usize,
            };
            ServerSessionMemoryCache::new(size)
        } else {
            Arc::new(NoServerSessionStorage {})
        };
        Ok(Some(Arc::new(config)))
    };
    let client = match &roots {
        None => None,
        Some(roots) => {
            let chain =
                WebPkiServerVerifier::builder_with_provider(roots.clone(), provider.clone())
                    .build()
                    .map_err(|e| {
                        format!("Failed to configure CA certificate(s) file/directory: {e}")
                    })?;
            // Redis's client context: the client certificate when both files are set, else
            // the server's context (and certificate).
            let own = match (
                opt(srv, "tls-client-cert-file"),
                opt(srv, "tls-client-key-file"),
            ) {
                (Some(c), Some(k)) => certified_key(
                    &c,
                    &k,
                    opt(srv, "tls-client-key-file-pass").as_deref(),
                    &provider,
                )?,
                _ => key.clone(),
            };
            let config = ClientConfig::builder_with_provider(provider.clone())
                .with_protocol_versions(&versions)
                .map_err(|e| format!("Failed to configure ciphers: {e}"))?
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(super::tls_client::ChainOnly(chain)))
                .with_client_cert_resolver(Arc::new(SingleCertAndKey::from(own)));
            Some(Arc::new(config))
        }
    };
    Ok(Context {
        no: make(Auth::No)?.ok_or("no server configuration")?,
        optional: make(Auth::Optional)?,
        yes: make(Auth::Yes)?,
        client,
    })
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Auth {
    No,
    Optional,
    Yes,
}

/// Redis's parseProtocolsConfig; TLSv1 and TLSv1.1 are accepted as names but rustls does
/// not offer them, so a list of only those fails.
fn protocols(s: Option<&str>) -> Result<Vec<&'static SupportedProtocolVersion>, String> {
    let Some(s) = s else {
        return Ok(vec![&rustls::version::TLS12, &rustls::version::TLS13]);
    };
    let mut out: Vec<&'static SupportedProtocolVersion> = Vec::new();
    for word in s.split(' ').filter(|w| !w.is_empty()) {
        match word.to_ascii_lowercase().as_str() {
            "tlsv1" | "tlsv1.1" => {}
            "tlsv1.2" => out.push(&rustls::version::TLS12),
            "tlsv1.3" => out.push(&rustls::version::TLS13),
            _ => {
                return Err("Invalid tls-protocols specified. Use a combination of 'TLSv1', 'TLSv1.1', 'TLSv1.2' and 'TLSv1.3'.".into())
            }
        }
    }
    if out.is_empty() {
        return Err(format!(
            "Invalid tls-protocols specified: '{s}' has neither TLSv1.2 nor TLSv1.3, the versions this server offers."
        ));
    }
    Ok(out)
}

/// OpenSSL's names of the suites rustls (ring) offers.
fn suite_names() -> Vec<(&'static str, SupportedCipherSuite)> {
    use rustls::crypto::ring::cipher_suite as cs;
    vec![
        ("TLS_AES_256_GCM_SHA384", cs::TLS13_AES_256_GCM_SHA384),
        ("TLS_AES_128_GCM_SHA256", cs::TLS13_AES_128_GCM_SHA256),
        (
            "TLS_CHACHA20_POLY1305_SHA256",
            cs::TLS13_CHACHA20_POLY1305_SHA256,
        ),
        (
            "ECDHE-ECDSA-AES256-GCM-SHA384",
            cs::TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
        ),
        (
            "ECDHE-ECDSA-AES128-GCM-SHA256",
            cs::TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
        ),
        (
            "ECDHE-ECDSA-CHACHA20-POLY1305",
            cs::TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,
        ),
        (
            "ECDHE-RSA-AES256-GCM-SHA384",
            cs::TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
        ),
        (
            "ECDHE-RSA-AES128-GCM-SHA256",
            cs::TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
        ),
        (
            "ECDHE-RSA-CHACHA20-POLY1305",
            cs::TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,
        ),
    ]
}

/// OpenSSL cipher-string words that select groups of suites: a list made of these (and
/// `!`/`-`/`+` modifiers) keeps every TLSv1.2 suite rustls has.
const CIPHER_KEYWORDS: &[&str] = &[
    "DEFAULT",
    "ALL",
    "HIGH",
    "ECDHE",
    "EECDH",
    "ECDSA",
    "aECDSA",
    "RSA",
    "aRSA",
    "kECDHE",
    "AESGCM",
    "AES",
    "AES128",
    "AES256",
    "CHACHA20",
    "SHA256",
    "SHA384",
    "TLSv1.2",
    "@STRENGTH",
];

/// `tls-ciphers` (TLSv1.2) and `tls-ciphersuites` (TLSv1.3): exact OpenSSL suite names
/// select those suites, in order; keyword-only lists keep rustls's own; a list that names
/// nothing rustls knows fails as OpenSSL's does when it matches no cipher.
fn cipher_suites(
    ciphers: Option<&str>,
    ciphersuites: Option<&str>,
) -> Result<Vec<SupportedCipherSuite>, String> {
    let names = suite_names();
    let is13 = |s: &SupportedCipherSuite| s.version() == &rustls::version::TLS13;
    let all = |tls13: bool| -> Vec<SupportedCipherSuite> {
        names
            .iter()
            .map(|(_, s)| *s)
            .filter(|s| is13(s) == tls13)
            .collect()
    };
    let pick = |list: &str, tls13: bool| -> Option<Vec<SupportedCipherSuite>> {
        let mut named = Vec::new();
        let mut keyword = false;
        for word in list.split([':', ',', ' ']).filter(|w| !w.is_empty()) {
            if let Some((_, s)) = names.iter().find(|(n, _)| n.eq_ignore_ascii_case(word)) {
                if is13(s) == tls13 && !named.contains(s) {
                    named.push(*s);
                }
            } else if word.starts_with(['!', '-', '+', '@'])
                || CIPHER_KEYWORDS.iter().any(|k| k.eq_ignore_ascii_case(word))
            {
                keyword = true;
            }
        }
        match (named.is_empty(), keyword) {
            (false, _) => Some(named),
            (true, true) if !tls13 => Some(all(false)),
            _ => None,
        }
    };
    let tls12 = match ciphers {
        None => all(false),
        Some(c) => pick(c, false).ok_or_else(|| format!("Failed to configure ciphers: {c}"))?,
    };
    let tls13 = match ciphersuites {
        None => all(true),
        Some(c) => pick(c, true).ok_or_else(|| format!("Failed to configure ciphersuites: {c}"))?,
    };
    Ok(tls13.into_iter().chain(tls12).collect())
}

fn certified_key(
    cert_file: &str,
    key_file: &str,
    pass: Option<&str>,
    provider: &CryptoProvider,
) -> Result<Arc<CertifiedKey>, String> {
    let cert_err = |e: String| format!("Failed to load certificate: {cert_file}: {e}");
    let certs = CertificateDer::pem_file_iter(cert_file)
        .map_err(|e| cert_err(pem_error(&e)))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| cert_err(pem_error(&e)))?;
    if certs.is_empty() {
        return Err(cert_err("no certificate found".into()));
    }
    let key_err = |e: String| format!("Failed to load private key: {key_file}: {e}");
    let pem = std::fs::read(key_file).map_err(|e| key_err(os_error(&e)))?;
    let key = private_key(&pem, pass).map_err(key_err)?;
    let signing = provider
        .key_provider
        .load_private_key(key)
        .map_err(|e| key_err(e.to_string()))?;
    // The key must be the certificate's (OpenSSL's "key values mismatch"). Checked on the
    // SubjectPublicKeyInfo read from the DER here: rustls's own check parses the
    // certificate with webpki, which refuses X.509 v1 certificates (what `openssl x509
    // -req` makes without extensions), and OpenSSL, hence Redis, serves those.
    if let (Some(key_spki), Some(cert_spki)) = (signing.public_key(), cert_spki(&certs[0])) {
        if der_content(key_spki.as_ref()) != Some(cert_spki) {
            return Err(key_err("key values mismatch".into()));
        }
    }
    Ok(Arc::new(CertifiedKey::new(certs, signing)))
}

/// The first DER element of `der`: (tag, content, rest).
fn der_element(der: &[u8]) -> Option<(u8, &[u8], &[u8])> {
    let (&tag, rest) = der.split_first()?;
    let (&first, rest) = rest.split_first()?;
    let (len, rest) = if first < 0x80 {
        (usize::from(first), rest)
    } else {
        let n = usize::from(first & 0x7f);
        if n == 0 || n > 4 || rest.len() < n {
            return None;
        }
        let len = rest[..n]
            .iter()
            .fold(0usize, |l, &b| (l << 8) | usize::from(b));
        (len, &rest[n..])
    };
    (rest.len() >= len).then(|| (tag, &rest[..len], &rest[len..]))
}

/// The content of the outer SEQUENCE of `der`.
fn der_content(der: &[u8]) -> Option<&[u8]> {
    der_element(der).and_then(|(tag, content, _)| (tag == 0x30).then_some(content))
}

/// The content of a certificate's SubjectPublicKeyInfo, whatever its X.509 version:
/// tbsCertificate's [0] version (absent in v1), serial, signature algorithm, issuer,
/// validity, subject, then the key.
fn cert_spki<'a>(cert: &'a CertificateDer<'_>) -> Option<&'a [u8]> {
    let tbs = der_content(der_content(cert.as_ref())?)?;
    let mut rest = tbs;
    if rest.first() == Some(&0xa0) {
        rest = der_element(rest)?.2;
    }
    for _ in 0..5 {
        rest = der_element(rest)?.2;
    }
    let (tag, spki, _) = der_element(rest)?;
    (tag == 0x30).then_some(spki)
}

const ENCRYPTED_BEGIN: &str = "-----BEGIN ENCRYPTED PRIVATE KEY-----";
const ENCRYPTED_END: &str = "-----END ENCRYPTED PRIVATE KEY-----";

/// The first private key of a PEM file: PKCS#8, PKCS#1 or SEC1, or PKCS#8 encrypted with
/// `tls-key-file-pass` (PBES2, as `openssl genpkey -aes256` writes it). OpenSSL's legacy
/// encrypted PEM (`Proc-Type: 4,ENCRYPTED`) is not read.
fn private_key(pem: &[u8], pass: Option<&str>) -> Result<PrivateKeyDer<'static>, String> {
    let text = String::from_utf8_lossy(pem);
    let encrypted = text.find(ENCRYPTED_BEGIN).and_then(|start| {
        let end = start + text[start..].find(ENCRYPTED_END)? + ENCRYPTED_END.len();
        Some(&text[start..end])
    });
    let Some(block) = encrypted else {
        return PrivateKeyDer::from_pem_slice(pem).map_err(|e| pem_error(&e));
    };
    // OpenSSL's texts: its password callback fails without a password.
    let pass = pass.ok_or("error:07880109:common libcrypto routines::interrupted or cancelled")?;
    let (_, der) = pkcs8::der::pem::decode_vec(block.as_bytes()).map_err(|e| e.to_string())?;
    let info =
        pkcs8::EncryptedPrivateKeyInfo::try_from(der.as_slice()).map_err(|e| e.to_string())?;
    let plain = info
        .decrypt(pass)
        .map_err(|_| "error:1C800064:Provider routines::bad decrypt")?;
    Ok(PrivateKeyDer::Pkcs8(plain.as_bytes().to_vec().into()))
}

/// The CA file's certificates, and those of every file in the CA directory (OpenSSL looks
/// up hashed names there; every PEM certificate found is trusted here).
fn ca_roots(file: Option<&str>, dir: Option<&str>) -> Result<RootCertStore, String> {
    let mut roots = RootCertStore::empty();
    let mut add = |certs: Vec<CertificateDer<'static>>| -> Result<(), String> {
        for c in certs {
            roots.add(c).map_err(|e| e.to_string())?;
        }
        Ok(())
    };
    if let Some(f) = file {
        let certs = CertificateDer::pem_file_iter(f)
            .map_err(|e| pem_error(&e))?
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| pem_error(&e))?;
        if certs.is_empty() {
            return Err("no certificate found".into());
        }
        add(certs)?;
    }
    if let Some(d) = dir {
        let entries = std::fs::read_dir(d).map_err(|e| os_error(&e))?;
        for entry in entries.flatten() {
            let Ok(iter) = CertificateDer::pem_file_iter(entry.path()) else {
                continue;
            };
            add(iter.flatten().collect())?;
        }
    }
    Ok(roots)
}

fn pem_error(e: &rustls::pki_types::pem::Error) -> String {
    match e {
        rustls::pki_types::pem::Error::Io(io) => os_error(io),
        rustls::pki_types::pem::Error::NoItemsFound => "no start line".into(),
        other => format!("{other:?}"),
    }
}

/// An I/O error as OpenSSL 3 words it ("error:80000002:system library::No such file or
/// directory").
fn os_error(e: &std::io::Error) -> String {
    let text = strerror(e);
    match e.raw_os_error() {
        Some(n) => format!(
            "error:{:08X}:system library::{text}",
            0x8000_0000u32 | n as u32
        ),
        None => text.to_string(),
    }
}

/// An I/O error's text without Rust's " (os error N)".
fn strerror(e: &std::io::Error) -> String {
    let s = e.to_string();
    s.find(" (os error")
        .map_or(s.clone(), |i| s[..i].to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn protocols_as_redis_parses_them() {
        assert_eq!(protocols(None).unwrap().len(), 2);
        assert_eq!(protocols(Some("TLSv1.2")).unwrap().len(), 1);
        assert_eq!(protocols(Some("tlsv1.2 TLSv1.3")).unwrap().len(), 2);
        assert!(protocols(Some("TLSv1.1")).is_err());
        assert!(protocols(Some("SSLv3")).is_err());
    }

    #[test]
    fn cipher_lists() {
        assert_eq!(cipher_suites(None, None).unwrap().len(), 9);
        let one = cipher_suites(Some("ECDHE-RSA-AES128-GCM-SHA256"), None).unwrap();
        assert_eq!(one.len(), 4);
        assert_eq!(
            cipher_suites(Some("DEFAULT:!MEDIUM"), None).unwrap().len(),
            9
        );
        assert!(cipher_suites(Some("NOPE"), None).is_err());
        let s13 = cipher_suites(None, Some("TLS_CHACHA20_POLY1305_SHA256")).unwrap();
        assert_eq!(s13.len(), 7);
        assert!(cipher_suites(None, Some("TLS_NOPE")).is_err());
    }
}
