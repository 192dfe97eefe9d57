//! TLS for servers that listen beyond loopback and the clients that reach them (rustls; ring as
//! the crypto provider). Certificates and keys come as PEM.

use crate::error::NetError;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use std::path::Path;
use std::sync::Arc;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio_rustls::rustls;

/// A byte stream a connection runs over: plain TCP on loopback, TLS anywhere.
pub(crate) trait Stream: AsyncRead + AsyncWrite + Send + Unpin + 'static {}
impl<T: AsyncRead + AsyncWrite + Send + Unpin + 'static> Stream for T {}

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

fn tls_error(what: &'static str) -> impl FnOnce(rustls::Error) -> NetError {
    move |e| NetError::Tls { what, why: e.to_string() }
}

fn pem_error(what: &'static str) -> impl FnOnce(rustls_pki_types::pem::Error) -> NetError {
    move |e| NetError::Tls { what, why: e.to_string() }
}

/// A server's certificate chain and private key.
#[derive(Clone)]
pub struct TlsServer {
    acceptor: tokio_rustls::TlsAcceptor,
}

impl std::fmt::Debug for TlsServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TlsServer { .. }")
    }
}

impl TlsServer {
    /// From PEM: the certificate chain (the server's first) and its private key (PKCS#8, PKCS#1
    /// or SEC1).
    pub fn from_pem(chain: &[u8], key: &[u8]) -> Result<Self, NetError> {
        let certs = CertificateDer::pem_slice_iter(chain)
            .collect::<Result<Vec<_>, _>>()
            .map_err(pem_error("the certificate chain"))?;
        if certs.is_empty() {
            return Err(NetError::Tls { what: "the certificate chain", why: "no certificate in it".into() });
        }
        let key = PrivateKeyDer::from_pem_slice(key).map_err(pem_error("the private key"))?;
        let config = rustls::ServerConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .map_err(tls_error("the protocol versions"))?
            .with_no_client_auth()
            .with_single_cert(certs, key)
            .map_err(tls_error("the certificate and key"))?;
        Ok(TlsServer { acceptor: tokio_rustls::TlsAcceptor::from(Arc::new(config)) })
    }

    /// [`from_pem`](Self::from_pem) from two files.
    pub fn from_pem_files(chain: &Path, key: &Path) -> Result<Self, NetError> {
        Self::from_pem(&std::fs::read(chain)?, &std::fs::read(key)?)
    }

    pub(crate) async fn accept(&self, tcp: tokio::net::TcpStream) -> Result<Box<dyn Stream>, NetError> {
        Ok(Box::new(self.acceptor.accept(tcp).await?))
    }
}

/// What a client trusts: the roots that sign the server's certificate, and the name it must carry.
#[derive(Clone)]
pub struct TlsClient {
    connector: tokio_rustls::TlsConnector,
    name: ServerName<'static>,
}

impl std::fmt::Debug for TlsClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TlsClient").field("name", &self.name).finish_non_exhaustive()
    }
}

impl TlsClient {
    /// Trusting the certificates in `roots` (PEM; a self-signed server's own certificate will do)
    /// for a server named `name` (a DNS name or an IP address, as its certificate says).
    pub fn from_pem(roots: &[u8], name: &str) -> Result<Self, NetError> {
        let mut store = rustls::RootCertStore::empty();
        for cert in CertificateDer::pem_slice_iter(roots) {
            store.add(cert.map_err(pem_error("the trusted roots"))?).map_err(tls_error("a trusted root"))?;
        }
        if store.is_empty() {
            return Err(NetError::Tls { what: "the trusted roots", why: "no certificate in them".into() });
        }
        let name = ServerName::try_from(name.to_owned())
            .map_err(|e| NetError::Tls { what: "the server name", why: e.to_string() })?;
        let config = rustls::ClientConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .map_err(tls_error("the protocol versions"))?
            .with_root_certificates(store)
            .with_no_client_auth();
        Ok(TlsClient { connector: tokio_rustls::TlsConnector::from(Arc::new(config)), name })
    }

    /// [`from_pem`](Self::from_pem) from a file.
    pub fn from_pem_file(roots: &Path, name: &str) -> Result<Self, NetError> {
        Self::from_pem(&std::fs::read(roots)?, name)
    }

    pub(crate) async fn connect(&self, tcp: tokio::net::TcpStream) -> Result<Box<dyn Stream>, NetError> {
        Ok(Box::new(self.connector.connect(self.name.clone(), tcp).await?))
    }
}
