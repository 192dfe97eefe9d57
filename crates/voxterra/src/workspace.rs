//! One scratch workspace per thread for the terrain's queries (contact buffers, and meshing
//! buffers for the chunks a query builds), so steady-state queries allocate nothing.

use std::cell::RefCell;
use voxterra_mesher::MeshWorkspace;
use voxterra_narrowphase::ContactWorkspace;

/// A query's scratch: contact buffers and meshing buffers for chunks it builds.
#[derive(Default)]
pub(crate) struct QueryWorkspace {
    pub(crate) contact: ContactWorkspace,
    pub(crate) mesh: MeshWorkspace,
}

thread_local! {
    /// One workspace per thread: queries come from any thread (physics engines, rayon tasks).
    static WORKSPACE: RefCell<QueryWorkspace> = RefCell::new(QueryWorkspace::default());
}

/// Runs `f` with this thread's workspace (a fresh one for a query made inside another, which
/// holds the thread's).
pub(crate) fn with_workspace<R>(f: impl FnOnce(&mut QueryWorkspace) -> R) -> R {
    WORKSPACE.with(|cell| match cell.try_borrow_mut() {
        Ok(mut ws) => f(&mut ws),
        Err(_) => f(&mut QueryWorkspace::default()),
    })
}
