//! The network side's errors.

use crate::protocol::{ProtocolError, RefusedWhy};

/// Why a server or client operation failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum NetError {
    /// The socket failed.
    #[error("I/O: {0}")]
    Io(#[from] std::io::Error),
    /// A frame that does not decode, or over its size cap.
    #[error(transparent)]
    Protocol(#[from] ProtocolError),
    /// The server refused this client.
    #[error("the server refused the connection ({why:?}; its protocol version is {version})")]
    Refused {
        /// Why.
        why: RefusedWhy,
        /// The server's protocol version.
        version: u16,
    },
    /// The peer sent a frame out of turn (anything but a hello first, a welcome not first).
    #[error("unexpected frame: {0}")]
    Unexpected(&'static str),
    /// The peer closed the connection.
    #[error("the connection closed")]
    Closed,
    /// Nothing arrived in time (the handshake's deadline, the idle timeout).
    #[error("timed out: {0}")]
    Timeout(&'static str),
    /// An address other than loopback without TLS: plaintext TCP serves and reaches loopback
    /// only.
    #[error("{0} is not a loopback address: plaintext TCP serves loopback only; give TLS")]
    NotLoopback(std::net::SocketAddr),
    /// A certificate, key or name that TLS cannot use.
    #[error("TLS, {what}: {why}")]
    Tls {
        /// Which input.
        what: &'static str,
        /// What is wrong with it.
        why: String,
    },
    /// The server's material table did not decode.
    #[error("the server's material table: {0}")]
    Table(#[from] serde_json::Error),
    /// The client's terrain refused the voxel size.
    #[error(transparent)]
    Config(#[from] voxterra::ConfigError),
    /// The replica refused a message.
    #[error(transparent)]
    Replication(#[from] voxterra::replication::ReplicationError),
    /// The viewer's page is not built: its bundle directory or `index.html` is missing.
    #[error("the viewer's page is not built ({0} has no index.html): run `cargo xtask web`")]
    MissingBundle(std::path::PathBuf),
    /// A WebSocket error on a viewer's connection.
    #[error("WebSocket: {0}")]
    WebSocket(#[from] tokio_tungstenite::tungstenite::Error),
}
