//! What the viewers' connections share.

use super::http::Assets;
use super::owner::ViewCmd;
use crate::config::{ServerConfig, ServerEvent, ViewConfig};
use std::sync::atomic::AtomicUsize;
use tokio::sync::mpsc;

/// What the viewers' connections share.
pub(crate) struct ViewShared {
    pub(crate) server: ServerConfig,
    pub(crate) view: ViewConfig,
    pub(crate) assets: Assets,
    pub(crate) cmds: mpsc::Sender<ViewCmd>,
    pub(crate) events: mpsc::Sender<ServerEvent>,
    pub(crate) live: AtomicUsize,
}
