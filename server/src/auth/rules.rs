//! What a person may do in a namespace, as a SelfSubjectRulesReview made as them says:
//! enough to tell their namespaces and kinds from the rest without an access review
//! per kind and namespace (each action is still authorized by the API server itself).

use k8s_openapi::api::authorization::v1::{
    ResourceRule, SelfSubjectRulesReview, SelfSubjectRulesReviewSpec, SubjectRulesReviewStatus,
};
use kube::Api;
use kube::api::PostParams;
use portico_core::resource::ResourceRef;

/// The rules `client`'s person has in `namespace`; `None` when the review failed.
pub async fn rules_in(client: &kube::Client, namespace: &str) -> Option<Vec<ResourceRule>> {
    Some(review_in(client, namespace).await.ok()?.resource_rules)
}

/// The API server's whole answer about `client`'s person in `namespace`.
pub async fn review_in(
    client: &kube::Client,
    namespace: &str,
) -> Result<SubjectRulesReviewStatus, kube::Error> {
    let api: Api<SelfSubjectRulesReview> = Api::all(client.clone());
    let review = SelfSubjectRulesReview {
        spec: SelfSubjectRulesReviewSpec {
            namespace: Some(namespace.to_string()),
        },
        ..Default::default()
    };
    let answer = api.create(&PostParams::default(), &review).await?;
    Ok(answer.status.unwrap_or_default())
}

/// Whether `rule` names `resource` (its group and plural, or `*`).
pub fn covers(rule: &ResourceRule, resource: &ResourceRef) -> bool {
    let names = |list: &Option<Vec<String>>, wanted: &str| {
        list.as_ref()
            .is_some_and(|list| list.iter().any(|item| item == wanted || item == "*"))
    };
    names(&rule.api_groups, &resource.group) && names(&rule.resources, &resource.plural)
}

/// Whether `rule` lets one `verb` every object of `resource` (not only some by name).
pub fn grants(rule: &ResourceRule, resource: &ResourceRef, verb: &str) -> bool {
    rule.verbs.iter().any(|have| have == verb || have == "*")
        && covers(rule, resource)
        && rule.resource_names.as_ref().is_none_or(Vec::is_empty)
}

/// A rule for tests: `names` empty means every object.
#[cfg(test)]
pub(crate) fn rule(
    groups: &[&str],
    resources: &[&str],
    verbs: &[&str],
    names: &[&str],
) -> ResourceRule {
    let owned = |items: &[&str]| items.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    ResourceRule {
        api_groups: Some(owned(groups)),
        resources: Some(owned(resources)),
        verbs: owned(verbs),
        resource_names: (!names.is_empty()).then(|| owned(names)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rule_grants_its_verbs_on_its_resources_and_wildcards() {
        let pods = ResourceRef::new("", "v1", "pods");
        assert!(grants(
            &rule(&[""], &["pods"], &["get", "list"], &[]),
            &pods,
            "list"
        ));
        assert!(grants(&rule(&["*"], &["*"], &["*"], &[]), &pods, "watch"));
        assert!(!grants(
            &rule(&[""], &["pods"], &["get"], &[]),
            &pods,
            "list"
        ));
        assert!(!grants(
            &rule(&["apps"], &["pods"], &["list"], &[]),
            &pods,
            "list"
        ));
        assert!(!grants(
            &rule(&[""], &["pods"], &["list"], &["web"]),
            &pods,
            "list"
        ));
    }
}
