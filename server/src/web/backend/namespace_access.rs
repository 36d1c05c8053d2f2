//! The "What may I do here" page's answer: a person's SelfSubjectRulesReview in a
//! namespace, read against every kind Portico lists there.

use k8s_openapi::api::authorization::v1::{ResourceRule, SubjectRulesReviewStatus};
use portico_core::access::{KindAccess, NamespaceAccess, VERBS};
use portico_core::resource::ResourceKind;

use crate::auth::rules::{covers, grants};

/// `status` (the person's rules in `namespace`) for each namespaced kind of `kinds`,
/// sorted by kind.
pub fn summarize(
    namespace: &str,
    status: &SubjectRulesReviewStatus,
    kinds: &[ResourceKind],
) -> NamespaceAccess {
    let rules = &status.resource_rules;
    let mut listed: Vec<KindAccess> = kinds
        .iter()
        .filter(|k| k.namespaced)
        .map(|k| {
            let resource = k.resource(None);
            KindAccess {
                allowed: VERBS
                    .iter()
                    .map(|verb| rules.iter().any(|rule| grants(rule, &resource, verb)))
                    .collect(),
                by_name: rules
                    .iter()
                    .filter(|rule| covers(rule, &resource))
                    .filter_map(by_name)
                    .collect(),
                kind: k.kind.clone(),
                resource,
            }
        })
        .collect();
    listed.sort_by(|a, b| {
        (a.kind.as_str(), a.resource.group.as_str())
            .cmp(&(b.kind.as_str(), b.resource.group.as_str()))
    });
    let mut subresources: Vec<String> = rules.iter().flat_map(subresources_of).collect();
    subresources.sort();
    subresources.dedup();
    NamespaceAccess {
        namespace: namespace.to_string(),
        kinds: listed,
        subresources,
        incomplete: status.incomplete,
        note: status.evaluation_error.clone().filter(|e| !e.is_empty()),
    }
}

/// "get, update: web, db" for a rule limited to some names.
fn by_name(rule: &ResourceRule) -> Option<String> {
    let names = rule.resource_names.as_ref().filter(|n| !n.is_empty())?;
    Some(format!("{}: {}", rule.verbs.join(", "), names.join(", ")))
}

/// "create pods/exec" for each subresource `rule` names.
fn subresources_of(rule: &ResourceRule) -> Vec<String> {
    // The core group is the empty name: said as nothing.
    let groups: Vec<&str> = rule
        .api_groups
        .iter()
        .flatten()
        .map(String::as_str)
        .filter(|g| !g.is_empty())
        .collect();
    let group = if groups.is_empty() {
        String::new()
    } else {
        format!(" ({})", groups.join(", "))
    };
    let names = match rule.resource_names.as_ref().filter(|n| !n.is_empty()) {
        Some(names) => format!(" on {}", names.join(", ")),
        None => String::new(),
    };
    rule.resources
        .iter()
        .flatten()
        .filter(|r| r.contains('/'))
        .map(|r| format!("{} {r}{group}{names}", rule.verbs.join(", ")))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::rules::rule;
    use portico_core::resource::KindFlags;

    fn kind(group: &str, kind: &str, plural: &str, namespaced: bool) -> ResourceKind {
        ResourceKind {
            group: group.into(),
            kind: kind.into(),
            plural: plural.into(),
            short_names: vec![],
            namespaced,
            versions: vec!["v1".into()],
            flags: KindFlags::default(),
        }
    }

    #[test]
    fn each_kind_by_verb_names_and_subresources_apart() {
        let status = SubjectRulesReviewStatus {
            resource_rules: vec![
                rule(&[""], &["pods", "pods/log"], &["get", "list", "watch"], &[]),
                rule(&[""], &["pods/exec"], &["create"], &[]),
                rule(&["apps"], &["deployments"], &["get", "update"], &["web"]),
            ],
            incomplete: true,
            evaluation_error: Some("webhook authorizer not asked".into()),
            non_resource_rules: vec![],
        };
        let kinds = [
            kind("", "Pod", "pods", true),
            kind("apps", "Deployment", "deployments", true),
            kind("", "Node", "nodes", false),
        ];
        let access = summarize("team", &status, &kinds);
        let shown: Vec<(&str, Vec<bool>, Vec<String>)> = access
            .kinds
            .iter()
            .map(|k| (k.kind.as_str(), k.allowed.clone(), k.by_name.clone()))
            .collect();
        assert_eq!(
            shown,
            [
                (
                    "Deployment",
                    vec![false; 7],
                    vec!["get, update: web".to_string()]
                ),
                (
                    "Pod",
                    vec![true, true, true, false, false, false, false],
                    vec![]
                ),
            ]
        );
        assert_eq!(
            access.subresources,
            ["create pods/exec", "get, list, watch pods/log"]
        );
        assert!(access.incomplete);
        assert_eq!(access.note.as_deref(), Some("webhook authorizer not asked"));
    }
}
