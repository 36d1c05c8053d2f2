//! The server's implementation of the UI's [`Backend`] seam.

use app::backend::{Backend, BackendError};
use app::model::CrdSummary;

use crate::discovery::CrdCatalog;

pub struct ClusterBackend {
    pub catalog: CrdCatalog,
}

#[async_trait::async_trait]
impl Backend for ClusterBackend {
    async fn list_crds(&self) -> Result<Vec<CrdSummary>, BackendError> {
        if !self.catalog.is_loaded() {
            return Err(BackendError::NotReady);
        }
        Ok(self.catalog.summaries())
    }
}
