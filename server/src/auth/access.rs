//! Access reviews: whether a caller may do something, as the API server's authorizer
//! decides (a SelfSubjectAccessReview made as that caller), cached briefly. Asked at
//! once by many (every tab of a person reconnecting after a restart), a question goes
//! to the API server once: the others wait for its answer.

use std::sync::Arc;
use std::time::{Duration, Instant};

use k8s_openapi::api::authorization::v1::{
    ResourceAttributes, SelfSubjectAccessReview, SelfSubjectAccessReviewSpec,
};
use kube::api::{Api, PostParams};

use crate::cluster::caller::Caller;
use crate::cluster::pool::ClientPool;

/// How long an access decision is reused.
const ACCESS_TTL: Duration = Duration::from_secs(30);
/// Decisions kept at most; past it the least used go first.
const MAX_DECISIONS: u64 = 10_000;

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
    /// Each answer with when the API server gave it.
    decisions: moka::future::Cache<(Caller, AccessQuestion), (bool, Instant)>,
}

impl AccessReviews {
    pub fn new(pool: Arc<ClientPool>) -> Self {
        Self {
            pool,
            decisions: moka::future::Cache::builder()
                .max_capacity(MAX_DECISIONS)
                .time_to_live(ACCESS_TTL)
                .build(),
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
        let key = (caller.clone(), question.clone());
        let fresh = |(allowed, at): (bool, Instant)| (at.elapsed() < max_age).then_some(allowed);
        if let Some(allowed) = self.decisions.get(&key).await.and_then(fresh) {
            return Ok(allowed);
        }
        // One review per question at a time: a caller that waited here finds the
        // answer the one before it got, fresh, and asks nothing.
        let answer = self
            .decisions
            .entry(key)
            .and_try_compute_with(|cached| async move {
                if cached.is_some_and(|entry| fresh(entry.into_value()).is_some()) {
                    return Ok(moka::ops::compute::Op::Nop);
                }
                let allowed = self.review(caller, question).await?;
                Ok::<_, kube::Error>(moka::ops::compute::Op::Put((allowed, Instant::now())))
            })
            .await?;
        match answer.into_entry() {
            Some(entry) => Ok(entry.into_value().0),
            // Not reachable (an answer was kept or put), but never a yes by default.
            None => Ok(false),
        }
    }

    /// The API server's answer, asked now as `caller`.
    async fn review(
        &self,
        caller: &Caller,
        question: &AccessQuestion,
    ) -> Result<bool, kube::Error> {
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
        Ok(answer.status.is_some_and(|s| s.allowed))
    }
}
