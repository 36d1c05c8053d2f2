//! Who asks, for the endpoints that say what the person may do: their own client, and
//! access reviews made as them.

use crate::auth::access::{AccessQuestion, AccessReviews};
use crate::cluster::caller::Caller;
use crate::cluster::error::ApiError;

/// Who asks, and where: the person's client and access reviews.
pub struct Asker<'a> {
    pub client: &'a kube::Client,
    pub reviews: &'a AccessReviews,
    pub who: &'a Caller,
}

impl Asker<'_> {
    /// Whether the person may do what `question` asks, as the API server's authorizer says.
    pub async fn may(&self, question: AccessQuestion) -> Result<bool, ApiError> {
        Ok(self.reviews.allowed(self.who, &question).await?)
    }
}
