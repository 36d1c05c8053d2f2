//! A Stack's version or plan changed from its page: what the change would do to its
//! workload, shown before it is applied, and the change itself, both as the person.
//!
//! The preview dry-runs the changed Stack against the API server as the person (its
//! schema and admission policies speak), checks the catalog's downgrade rule, and
//! diffs the workload the reconciler would apply before and after, computed by the
//! same pure function the reconciler uses: the person need not be allowed to write
//! the children (the reconciler does that), and the portal never borrows its rights.

use kube::api::{Api, Patch, PatchParams, PostParams};
use portico_core::payload::{DiffLine, StackChangePreview};
use serde_json::json;
use similar::{ChangeTag, TextDiff};

use crate::cluster::error::ApiError;
use crate::reconcile::catalog::{Catalog, CatalogEntry, version_order};
use crate::reconcile::desired::{self, Workload};
use crate::reconcile::plan::Blocked;
use crate::reconcile::stack::Stack;

/// Lines of context kept around each change.
const CONTEXT: usize = 3;

/// Why the page refuses a change before asking the API server.
#[derive(Debug, thiserror::Error)]
pub enum ChangeError {
    #[error(transparent)]
    Api(#[from] ApiError),
    #[error("{0}")]
    Refused(String),
}

impl From<kube::Error> for ChangeError {
    fn from(e: kube::Error) -> Self {
        ChangeError::Api(e.into())
    }
}

/// `stack` with `version` and `plan` where they are given.
fn changed(stack: &Stack, version: Option<String>, plan: Option<String>) -> Stack {
    let mut changed = stack.clone();
    if let Some(version) = version {
        changed.spec.version = Some(version);
    }
    if let Some(plan) = plan {
        changed.spec.plan = Some(plan);
    }
    changed
}

/// The catalog's refusal of going from what runs to `to`, in the reconciler's words.
fn downgrade(stack: &Stack, entry: &CatalogEntry, to: &Stack) -> Option<String> {
    if entry.allow_downgrade {
        return None;
    }
    let running = stack.status.as_ref()?.version.clone()?;
    let image = entry.image_for(to.spec.version.as_deref())?;
    let asked = entry.version_of(image)?;
    (version_order(asked, &running) == std::cmp::Ordering::Less).then(|| {
        Blocked::DowngradeRefused {
            choice: stack.spec.choice.clone(),
            running,
            asked: asked.to_string(),
        }
        .to_string()
    })
}

/// The workload the reconciler would apply for `stack`, as YAML (a placeholder for
/// the password, which only the Secret holds).
fn workload_yaml(stack: &Stack, entry: &CatalogEntry) -> Result<String, String> {
    let children = desired::desired(stack, entry, desired::Passwords::placeholder("********"))
        .map_err(|e| e.to_string())?;
    let yaml = match children.workload {
        Workload::Stateful(set) => serde_yaml::to_string(&set),
        Workload::Stateless(deployment) => serde_yaml::to_string(&deployment),
    };
    yaml.map_err(|e| e.to_string())
}

/// `before` against `after`, line by line, changes with [`CONTEXT`] lines around them.
pub fn diff(before: &str, after: &str) -> Vec<DiffLine> {
    let text = TextDiff::from_lines(before, after);
    let mut lines = Vec::new();
    for (i, group) in text.grouped_ops(CONTEXT).iter().enumerate() {
        if i > 0 {
            lines.push(DiffLine {
                tag: '…',
                text: String::new(),
            });
        }
        for op in group {
            for change in text.iter_changes(op) {
                let tag = match change.tag() {
                    ChangeTag::Delete => '-',
                    ChangeTag::Insert => '+',
                    ChangeTag::Equal => ' ',
                };
                lines.push(DiffLine {
                    tag,
                    text: change.value().trim_end_matches('\n').to_string(),
                });
            }
        }
    }
    lines
}

pub async fn preview(
    client: &kube::Client,
    catalog: &Catalog,
    (namespace, name): (&str, &str),
    version: Option<String>,
    plan: Option<String>,
) -> Result<StackChangePreview, ChangeError> {
    let api = Api::<Stack>::namespaced(client.clone(), namespace);
    let stack = api.get(name).await?;
    let entry = catalog.get(&stack.spec.choice).ok_or_else(|| {
        ChangeError::Refused(format!(
            "The catalog offers no {:?} any more.",
            stack.spec.choice
        ))
    })?;
    let mut versions: Vec<String> = entry.versions.keys().cloned().collect();
    versions.sort_by(|a, b| version_order(a, b));
    let current_version = stack
        .spec
        .version
        .clone()
        .or_else(|| entry.version_of(&entry.image).map(str::to_string));
    let current_plan = stack.spec.plan.clone().or(entry.default_plan.clone());
    let to = changed(&stack, version, plan);
    let mut preview = StackChangePreview {
        versions,
        plans: entry.plans.iter().map(|p| p.name.clone()).collect(),
        version: current_version,
        plan: current_plan,
        running: stack.status.as_ref().and_then(|s| s.version.clone()),
        diff: Vec::new(),
        refused: None,
    };
    if to.spec == stack.spec {
        return Ok(preview);
    }
    if let Some(refusal) = downgrade(&stack, entry, &to) {
        preview.refused = Some(refusal);
        return Ok(preview);
    }
    let dry_run = PostParams {
        dry_run: true,
        ..PostParams::default()
    };
    match api.replace(name, &dry_run, &to).await {
        Ok(_) => {}
        Err(kube::Error::Api(status)) => {
            preview.refused = Some(status.message);
            return Ok(preview);
        }
        Err(other) => return Err(other.into()),
    }
    match (workload_yaml(&stack, entry), workload_yaml(&to, entry)) {
        (Ok(before), Ok(after)) => preview.diff = diff(&before, &after),
        (_, Err(why)) | (Err(why), _) => preview.refused = Some(why),
    }
    Ok(preview)
}

pub async fn change(
    client: &kube::Client,
    catalog: &Catalog,
    (namespace, name): (&str, &str),
    version: Option<String>,
    plan: Option<String>,
) -> Result<(), ChangeError> {
    let api = Api::<Stack>::namespaced(client.clone(), namespace);
    let stack = api.get(name).await?;
    let to = changed(&stack, version, plan);
    if let Some(entry) = catalog.get(&stack.spec.choice)
        && let Some(refusal) = downgrade(&stack, entry, &to)
    {
        return Err(ChangeError::Refused(refusal));
    }
    // Only what changes, under the resourceVersion read: a change made meanwhile is a
    // conflict, never overwritten.
    let patch = json!({
        "metadata": {"resourceVersion": stack.metadata.resource_version},
        "spec": {"version": to.spec.version, "plan": to.spec.plan},
    });
    api.patch(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_diff_keeps_context_around_changes_and_marks_what_it_skips() {
        let before = "a\nb\nc\nd\ne\nf\ng\nh\ni\nj\nk\nl\n";
        let after = "a\nB\nc\nd\ne\nf\ng\nh\ni\nj\nK\nl\n";
        let lines: Vec<String> = diff(before, after)
            .into_iter()
            .map(|l| format!("{}{}", l.tag, l.text))
            .collect();
        assert_eq!(
            lines,
            [
                " a", "-b", "+B", " c", " d", " e", "…", " h", " i", " j", "-k", "+K", " l"
            ]
        );
        assert!(diff("same\n", "same\n").is_empty());
    }

    #[test]
    fn a_downgrade_is_refused_only_where_the_catalog_says_so() {
        let catalog = Catalog::load(None).expect("catalog");
        let mysql = catalog.get("mysql").expect("mysql");
        let mut stack = Stack::new("db", Default::default());
        stack.spec.choice = "mysql".into();
        stack.status = Some(crate::reconcile::stack::StackStatus {
            version: Some("8.4".into()),
            ..Default::default()
        });
        let back = changed(&stack, Some("8.0".into()), None);
        let refusal = downgrade(&stack, mysql, &back).expect("refused");
        assert!(
            refusal.starts_with("mysql 8.4 cannot go back to 8.0: "),
            "{refusal}"
        );
        assert_eq!(
            downgrade(&stack, mysql, &changed(&stack, Some("8.4".into()), None)),
            None
        );
        let mut tomcat = stack.clone();
        tomcat.spec.choice = "tomcat".into();
        tomcat.status = Some(crate::reconcile::stack::StackStatus {
            version: Some("11.0".into()),
            ..Default::default()
        });
        let entry = catalog.get("tomcat").expect("tomcat");
        assert_eq!(
            downgrade(&tomcat, entry, &changed(&tomcat, Some("10.1".into()), None)),
            None,
            "Tomcat may go back"
        );
    }
}
