//! Access reviews: whether a caller may do something, as the API server's authorizer
//! decides (a SelfSubjectAccessReview made as that caller), cached briefly.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use k8s_openapi::api::authorization::v1::{
    ResourceAttributes, SelfSubjectAccessReview, SelfSubjectAccessReviewSpec,
};
use kube::api::{Api, PostParams};

use crate::cluster::caller::Caller;
use crate::cluster::pool::ClientPool;

/// How long an access decision is reused.
const ACCESS_TTL: Duration = Duration::from_secs(30);

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct AccessQuestion {
    pub verb: String,
    pub group: String,
    pub resource: String,
    /// E.g. `log` for `pods/log`.
    pub subresource: Option<String>,
    pub namespace: Option<String>,
    /// One object's name; `None` asks about every object of the resource.
    pub name: Option<String>,
}

/// Access reviews made through the callers' own clients.
pub struct AccessReviews {
    pool: Arc<ClientPool>,
    decisions: Mutex<HashMap<(Caller, AccessQuestion), (bool, Instant)>>,
}

impl AccessReviews {
    pub fn new(pool: Arc<ClientPool>) -> Self {
        Self {
            pool,
            decisions: Mutex::default(),
        }
    }

    /// Whether `caller` may do what `question` asks, as the API server's authorizer
    /// decides (a SelfSubjectAccessReview made as that caller), cached briefly.
    pub async fn allowed(
        &self,
        caller: &Caller,
        question: &AccessQuestion,
    ) -> Result<bool, kube::Error> {
        self.allowed_within(caller, question, ACCESS_TTL).await
    }

    /// As [`Self::allowed`], with a cached answer used only if younger than `max_age`.
    pub async fn allowed_within(
        &self,
        caller: &Caller,
        question: &AccessQuestion,
        max_age: Duration,
    ) -> Result<bool, kube::Error> {
        let max_age = max_age.min(ACCESS_TTL);
        let key = (caller.clone(), question.clone());
        if let Some((allowed, at)) = self
            .decisions
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&key)
            && at.elapsed() < max_age
        {
            return Ok(*allowed);
        }
        let review = SelfSubjectAccessReview {
            spec: SelfSubjectAccessReviewSpec {
                resource_attributes: Some(ResourceAttributes {
                    verb: Some(question.verb.clone()),
                    group: Some(question.group.clone()),
                    resource: Some(question.resource.clone()),
                    subresource: question.subresource.clone(),
                    namespace: question.namespace.clone(),
                    name: question.name.clone(),
                    ..Default::default()
                }),
                ..Default::default()
            },
            ..Default::default()
        };
        let api: Api<SelfSubjectAccessReview> = Api::all(self.pool.for_caller(caller)?);
        let answer = api.create(&PostParams::default(), &review).await?;
        let allowed = answer.status.is_some_and(|s| s.allowed);
        let mut decisions = self.decisions.lock().unwrap_or_else(|p| p.into_inner());
        if decisions.len() > 10_000 {
            decisions.retain(|_, (_, at)| at.elapsed() < ACCESS_TTL);
            if decisions.len() > 10_000 {
                // A flood of distinct questions: start over rather than grow.
                decisions.clear();
            }
        }
        decisions.insert(key, (allowed, Instant::now()));
        Ok(allowed)
    }
}
