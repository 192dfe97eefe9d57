//! Reading and writing frames on a stream: the length prefix checked against the cap before the
//! body is allocated.

use crate::error::NetError;
use crate::protocol::ProtocolError;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// Reads one frame's body (after its length prefix), refusing a prefix over `cap` before
/// allocating. `Ok(None)` when the stream ended cleanly before a frame.
pub(crate) async fn read_frame<R: AsyncRead + Unpin>(
    r: &mut R,
    cap: u32,
) -> Result<Option<Vec<u8>>, NetError> {
    let mut len = [0u8; 4];
    match r.read_exact(&mut len).await {
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(e) => return Err(e.into()),
    }
    let len = u32::from_le_bytes(len);
    if len > cap {
        return Err(ProtocolError::TooLarge { len, cap }.into());
    }
    let mut body = vec![0u8; len as usize];
    r.read_exact(&mut body).await?;
    Ok(Some(body))
}

/// Writes `bytes` (whole frames) and flushes.
pub(crate) async fn write_all<W: AsyncWrite + Unpin>(w: &mut W, bytes: &[u8]) -> Result<(), NetError> {
    w.write_all(bytes).await?;
    w.flush().await?;
    Ok(())
}
