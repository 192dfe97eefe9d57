//! The viewer's HTTP side: one request per connection, its head read within a deadline and a
//! size cap; `GET /ws` upgrades to the viewer's WebSocket, any other `GET` is answered from the
//! page's assets, looked up by exact name, so no request reaches another file: paths with `..`,
//! percent-encoding, backslashes or an absolute form are refused before the lookup.

use crate::error::NetError;
use std::collections::BTreeMap;
use std::path::Path;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// A request head's size cap.
pub(crate) const HEAD_MAX: usize = 8 * 1024;
/// Files in the bundle at most, and each file's size cap.
const MAX_ASSETS: usize = 256;
const ASSET_MAX: u64 = 32 << 20;

/// The page and its assets, read once when the server starts: URL path → (content type, bytes).
#[derive(Debug, Default)]
pub(crate) struct Assets {
    files: BTreeMap<String, (&'static str, Vec<u8>)>,
}

/// A name the asset table may hold: letters, digits, `.`, `_` and `-`, not starting with a dot.
fn plain_name(name: &str) -> bool {
    !name.is_empty()
        && !name.starts_with('.')
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'_' || b == b'-')
}

fn content_type(name: &str) -> &'static str {
    match name.rsplit('.').next() {
        Some("html") => "text/html; charset=utf-8",
        Some("js" | "mjs") => "text/javascript; charset=utf-8",
        Some("css") => "text/css; charset=utf-8",
        Some("json" | "map") => "application/json",
        Some("png") => "image/png",
        Some("svg") => "image/svg+xml",
        Some("wasm") => "application/wasm",
        _ => "application/octet-stream",
    }
}

impl Assets {
    /// Reads the bundle's files (the directory's own regular files with plain names; not its
    /// subdirectories). Fails when the directory or its `index.html` is missing.
    pub(crate) fn load(dir: &Path) -> Result<Self, NetError> {
        let missing = || NetError::MissingBundle(dir.to_path_buf());
        let mut files = BTreeMap::new();
        for entry in std::fs::read_dir(dir).map_err(|_| missing())? {
            let entry = entry?;
            let meta = entry.metadata()?;
            let Some(name) = entry.file_name().to_str().map(str::to_owned) else { continue };
            if !meta.is_file() || !plain_name(&name) || meta.len() > ASSET_MAX {
                continue;
            }
            if files.len() == MAX_ASSETS {
                break;
            }
            let bytes = std::fs::read(entry.path())?;
            files.insert(format!("/{name}"), (content_type(&name), bytes));
        }
        let index = files.get("/index.html").cloned().ok_or_else(missing)?;
        files.insert("/".into(), index);
        Ok(Assets { files })
    }

    /// The asset at `path` (a request target), if it is one.
    pub(crate) fn get(&self, path: &str) -> Option<&(&'static str, Vec<u8>)> {
        self.files.get(path)
    }
}

/// What a request asks for.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Route {
    /// The viewer's WebSocket, with the client's key.
    Socket(String),
    /// An asset by its path; `head`: without the body.
    Asset { path: String, head: bool },
    /// Refused with this status and reason.
    Refuse(u16, &'static str),
}

/// Routes a parsed request head.
pub(crate) fn route(req: &httparse::Request<'_, '_>) -> Route {
    let (Some(method), Some(target)) = (req.method, req.path) else {
        return Route::Refuse(400, "Bad Request");
    };
    let head = match method {
        "GET" => false,
        "HEAD" => true,
        _ => return Route::Refuse(405, "Method Not Allowed"),
    };
    // Origin form only: no absolute URL, no `*`; the query (the page takes none) is ignored.
    let path = target.split(['?', '#']).next().unwrap_or("");
    if !path.starts_with('/')
        || path.contains("..")
        || path.contains('%')
        || path.contains('\\')
        || path.contains("//")
        || path.contains(':')
        || path.bytes().any(|b| b.is_ascii_control())
    {
        return Route::Refuse(400, "Bad Request");
    }
    if path == "/ws" {
        let header = |name: &str| {
            req.headers
                .iter()
                .find(|h| h.name.eq_ignore_ascii_case(name))
                .and_then(|h| std::str::from_utf8(h.value).ok())
        };
        let upgrade = header("upgrade").is_some_and(|v| v.eq_ignore_ascii_case("websocket"));
        let connection = header("connection")
            .is_some_and(|v| v.split(',').any(|t| t.trim().eq_ignore_ascii_case("upgrade")));
        let version = header("sec-websocket-version") == Some("13");
        return match header("sec-websocket-key") {
            Some(key) if upgrade && connection && version && !head => Route::Socket(key.trim().to_owned()),
            _ => Route::Refuse(400, "Bad Request"),
        };
    }
    Route::Asset { path: path.to_owned(), head }
}

/// Reads a request head (through the blank line) within [`HEAD_MAX`] bytes; `None` when the
/// connection closed first or the head is too long. Bytes past the head are not expected (one
/// request per connection; a WebSocket client waits for the upgrade before sending).
pub(crate) async fn read_head(tcp: &mut TcpStream) -> Result<Option<Vec<u8>>, NetError> {
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 1024];
    loop {
        let n = tcp.read(&mut chunk).await?;
        if n == 0 {
            return Ok(None);
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            buf.truncate(end + 4);
            return Ok(Some(buf));
        }
        if buf.len() > HEAD_MAX {
            return Ok(None);
        }
    }
}

/// Writes a whole response and closes: `status`, headers, and `body` (its length announced even
/// for a `HEAD`).
pub(crate) async fn respond(
    tcp: &mut TcpStream,
    status: u16,
    reason: &str,
    content_type: &str,
    body: &[u8],
    head: bool,
) -> Result<(), NetError> {
    let header = format!(
        "HTTP/1.1 {status} {reason}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\n\
         Cache-Control: no-cache\r\nX-Content-Type-Options: nosniff\r\nReferrer-Policy: no-referrer\r\n\
         Content-Security-Policy: default-src 'self'; connect-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'\r\n\
         Connection: close\r\n\r\n",
        body.len()
    );
    tcp.write_all(header.as_bytes()).await?;
    if !head {
        tcp.write_all(body).await?;
    }
    tcp.flush().await?;
    let _ = tcp.shutdown().await;
    Ok(())
}

/// The `101 Switching Protocols` answer to a WebSocket request with `key`.
pub(crate) fn upgrade_response(key: &str) -> String {
    let accept = tokio_tungstenite::tungstenite::handshake::derive_accept_key(key.as_bytes());
    format!(
        "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
         Sec-WebSocket-Accept: {accept}\r\n\r\n"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn routed(head: &str) -> Route {
        let mut headers = [httparse::EMPTY_HEADER; 32];
        let mut req = httparse::Request::new(&mut headers);
        assert!(req.parse(head.as_bytes()).unwrap().is_complete());
        route(&req)
    }

    #[test]
    fn paths_outside_the_assets_are_refused() {
        for bad in [
            "/../etc/passwd",
            "/..%2fetc%2fpasswd",
            "/%2e%2e/secret",
            "/a/../../b",
            "/..\\windows",
            "//etc/passwd",
            "http://host/index.html",
            "*",
            "/C:/x",
            "/index.html/..",
        ] {
            let got = routed(&format!("GET {bad} HTTP/1.1\r\nHost: x\r\n\r\n"));
            assert_eq!(got, Route::Refuse(400, "Bad Request"), "{bad}");
        }
        assert_eq!(routed("POST / HTTP/1.1\r\n\r\n"), Route::Refuse(405, "Method Not Allowed"));
        assert_eq!(
            routed("GET /app.js?v=1 HTTP/1.1\r\n\r\n"),
            Route::Asset { path: "/app.js".into(), head: false }
        );
        // A WebSocket request needs the whole upgrade.
        assert_eq!(
            routed("GET /ws HTTP/1.1\r\nUpgrade: websocket\r\n\r\n"),
            Route::Refuse(400, "Bad Request")
        );
        let ws = "GET /ws HTTP/1.1\r\nUpgrade: websocket\r\nConnection: keep-alive, Upgrade\r\n\
                  Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n";
        assert_eq!(routed(ws), Route::Socket("dGhlIHNhbXBsZSBub25jZQ==".into()));
    }

    #[test]
    fn the_upgrade_answers_the_rfc_example() {
        // RFC 6455, section 1.3.
        assert!(upgrade_response("dGhlIHNhbXBsZSBub25jZQ==").contains("s3pPLMBiTxaQ9kYGzzhZRbK+xOo="));
    }

    #[test]
    fn the_table_holds_only_plain_names_of_the_directory() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("index.html"), b"<html></html>").unwrap();
        std::fs::write(dir.path().join("app.js"), b"1").unwrap();
        std::fs::write(dir.path().join(".secret"), b"no").unwrap();
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        std::fs::write(dir.path().join("sub/inner.js"), b"no").unwrap();
        let a = Assets::load(dir.path()).unwrap();
        let names: Vec<&str> = a.files.keys().map(String::as_str).collect();
        assert_eq!(names, ["/", "/app.js", "/index.html"]);
        assert!(matches!(Assets::load(&dir.path().join("sub")), Err(NetError::MissingBundle(_))));
    }
}
