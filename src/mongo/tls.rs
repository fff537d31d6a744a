//! TLS on the MongoDB listener: builds the rustls server configuration from the settings
//! (certificate chain and private key from PEM files, the ring crypto provider) and secures
//! each accepted connection according to the mode — a handshake on every connection
//! (`required`), a handshake only for clients whose first bytes open a TLS handshake record
//! (`allowed`), or none (`disabled`). Negotiation is bounded by [`NEGOTIATION_TIMEOUT`], so
//! a client that connects and stays silent cannot hold a connection slot.
//!
//! Not for: accepting sockets (see `listener`) or reading messages (see `connection`).

use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpStream;
use tokio_rustls::rustls::pki_types::pem::{self, PemObject};
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio_rustls::rustls::{self, ServerConfig};
use tokio_rustls::server::TlsStream;
use tokio_rustls::TlsAcceptor;

use super::settings::{TlsIdentityFiles, TlsMode, TlsSettings};

/// How long a new connection gets to finish its TLS handshake (or, in `allowed` mode, to
/// send its first byte).
pub const NEGOTIATION_TIMEOUT: Duration = Duration::from_secs(10);

/// The first bytes of every ClientHello: a TLS record of content type handshake (0x16)
/// with a record version 3.1 to 3.4 (TLS 1.3 hellos carry the legacy 3.1). A MongoDB
/// message starts with its little-endian length instead; read as a length these three bytes
/// are at least 66,326, far beyond any driver's opening `hello`.
const TLS_HANDSHAKE_RECORD: u8 = 0x16;
const TLS_RECORD_VERSION_MAJOR: u8 = 0x03;
const TLS_RECORD_VERSION_MINORS: std::ops::RangeInclusive<u8> = 0x01..=0x04;
/// How long to wait before peeking again when only part of the record header has arrived.
const PEEK_RETRY: Duration = Duration::from_millis(5);

/// Why the TLS configuration could not be built at start-up, naming the file at fault.
#[derive(Debug, thiserror::Error)]
pub enum TlsSetupError {
    #[error("cannot read TLS certificate file {}: {source}", path.display())]
    Certificate { path: PathBuf, source: pem::Error },
    #[error("TLS certificate file {} holds no PEM certificate", path.display())]
    NoCertificate { path: PathBuf },
    #[error("cannot read TLS private key file {}: {source}", path.display())]
    PrivateKey { path: PathBuf, source: pem::Error },
    #[error(
        "TLS certificate {} and private key {} are not a usable pair: {source}",
        cert.display(),
        key.display()
    )]
    Identity {
        cert: PathBuf,
        key: PathBuf,
        source: rustls::Error,
    },
    #[error("TLS mode {0} needs a certificate and a private key")]
    MissingIdentity(TlsMode),
    #[error("the TLS crypto provider refuses the default protocol versions: {0}")]
    ProtocolVersions(rustls::Error),
}

/// How the listener secures each accepted connection.
#[derive(Clone)]
pub enum ListenerTls {
    /// Plain TCP.
    Disabled,
    /// TLS when the client opens with a ClientHello, plain otherwise.
    Allowed(TlsAcceptor),
    /// TLS always; anything but a successful handshake closes the connection.
    Required(TlsAcceptor),
}

/// An accepted connection, secured or not.
pub enum ClientStream {
    Plain(TcpStream),
    Tls(Box<TlsStream<TcpStream>>),
}

impl ListenerTls {
    /// Loads the certificate and key named in `settings` (nothing for `disabled`).
    pub fn from_settings(settings: &TlsSettings) -> Result<ListenerTls, TlsSetupError> {
        let acceptor = match (settings.mode, &settings.identity) {
            (TlsMode::Disabled, _) => return Ok(ListenerTls::Disabled),
            (mode, None) => return Err(TlsSetupError::MissingIdentity(mode)),
            (_, Some(identity)) => TlsAcceptor::from(Arc::new(server_config(identity)?)),
        };
        Ok(match settings.mode {
            TlsMode::Allowed => ListenerTls::Allowed(acceptor),
            _ => ListenerTls::Required(acceptor),
        })
    }

    /// Secures a freshly accepted connection: a TLS handshake when the mode asks for one,
    /// within [`NEGOTIATION_TIMEOUT`]. An error means the connection is to be closed.
    pub async fn secure(&self, stream: TcpStream) -> io::Result<ClientStream> {
        let acceptor = match self {
            ListenerTls::Disabled => return Ok(ClientStream::Plain(stream)),
            ListenerTls::Allowed(acceptor) | ListenerTls::Required(acceptor) => acceptor,
        };
        let negotiation = async {
            if let ListenerTls::Allowed(_) = self {
                if !opens_with_tls(&stream).await? {
                    return Ok(ClientStream::Plain(stream));
                }
            }
            let secured = acceptor.accept(stream).await?;
            Ok(ClientStream::Tls(Box::new(secured)))
        };
        match tokio::time::timeout(NEGOTIATION_TIMEOUT, negotiation).await {
            Ok(result) => result,
            Err(_) => Err(io::Error::new(
                io::ErrorKind::TimedOut,
                format!("no TLS handshake within {NEGOTIATION_TIMEOUT:?}"),
            )),
        }
    }
}

/// Waits for the client's first bytes without consuming them and tells whether they open
/// a TLS handshake. A client that closes at once counts as plain (the connection code sees
/// the end of the stream).
async fn opens_with_tls(stream: &TcpStream) -> io::Result<bool> {
    let mut head = [0u8; 3];
    loop {
        let seen = stream.peek(&mut head).await?;
        match &head[..seen] {
            [TLS_HANDSHAKE_RECORD, TLS_RECORD_VERSION_MAJOR, minor] => {
                return Ok(TLS_RECORD_VERSION_MINORS.contains(minor))
            }
            // Only part of the record header is here: `peek` would return at once with
            // the same bytes, so wait a moment for the rest.
            [TLS_HANDSHAKE_RECORD] | [TLS_HANDSHAKE_RECORD, TLS_RECORD_VERSION_MAJOR] => {
                tokio::time::sleep(PEEK_RETRY).await
            }
            _ => return Ok(false),
        }
    }
}

/// The rustls configuration for one certificate chain and key, with the ring provider
/// (explicit, so that no other provider compiled into the process can make the choice
/// ambiguous) and its safe default protocol versions (TLS 1.2 and 1.3).
fn server_config(identity: &TlsIdentityFiles) -> Result<ServerConfig, TlsSetupError> {
    let chain = read_certificate_chain(&identity.cert)?;
    let key = PrivateKeyDer::from_pem_file(&identity.key).map_err(|source| {
        TlsSetupError::PrivateKey {
            path: identity.key.clone(),
            source,
        }
    })?;
    let identity_error = |source| TlsSetupError::Identity {
        cert: identity.cert.clone(),
        key: identity.key.clone(),
        source,
    };
    ServerConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .map_err(TlsSetupError::ProtocolVersions)?
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .map_err(identity_error)
}

/// Every certificate in a PEM file, in file order (leaf first).
fn read_certificate_chain(path: &Path) -> Result<Vec<CertificateDer<'static>>, TlsSetupError> {
    let certificate_error = |source| TlsSetupError::Certificate {
        path: path.to_path_buf(),
        source,
    };
    let chain = CertificateDer::pem_file_iter(path)
        .map_err(certificate_error)?
        .collect::<Result<Vec<_>, _>>()
        .map_err(certificate_error)?;
    if chain.is_empty() {
        return Err(TlsSetupError::NoCertificate {
            path: path.to_path_buf(),
        });
    }
    Ok(chain)
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncWriteExt;
    use tokio::net::TcpListener;

    /// Writes `chunks` from a client, one after the other with a pause in between, and
    /// classifies what the server side sees first.
    async fn classify(chunks: &[&[u8]]) -> bool {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let mut client = TcpStream::connect(listener.local_addr().unwrap())
            .await
            .unwrap();
        let (server, _) = listener.accept().await.unwrap();
        for chunk in chunks {
            client.write_all(chunk).await.unwrap();
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        if chunks.is_empty() {
            drop(client);
        }
        opens_with_tls(&server).await.unwrap()
    }

    #[tokio::test]
    async fn a_client_hello_is_told_from_a_mongodb_message() {
        assert!(classify(&[&[0x16, 0x03, 0x01, 0x02, 0x00]]).await);
        // The record header in pieces, as a slow client may send it.
        assert!(classify(&[&[0x16], &[0x03], &[0x03, 0x00]]).await);
        // MongoDB messages of 278 and 790 bytes start with 0x16 too.
        assert!(!classify(&[&[0x16, 0x01, 0x00, 0x00]]).await);
        assert!(!classify(&[&[0x16, 0x03, 0x00, 0x00]]).await);
        assert!(!classify(&[&[0x3f, 0x00, 0x00, 0x00]]).await);
        // A client that closes at once is left to the plain path.
        assert!(!classify(&[]).await);
    }
}
