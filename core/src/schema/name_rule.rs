//! A kind's own rule for the names of its objects, checked as they are typed: CRDs
//! say it with a CEL rule at the object's root (`self.metadata.name.size() <= 52 &&
//! self.metadata.name.matches('^[a-z]...')`), which the API server reports without a
//! field. The common shape is read here; any other rule is left to the API server.

use super::openapi::Schema;
use super::validate::pattern_matches;

/// One clause of a name rule this module understands.
enum Clause {
    AtMost(usize),
    Matches(String),
}

/// The clauses of `rule` joined by `&&`, if every one is about the name in a shape
/// understood here.
fn clauses(rule: &str) -> Option<Vec<Clause>> {
    const NAME: &str = "self.metadata.name";
    rule.split("&&")
        .map(|clause| {
            let clause = clause.trim().strip_prefix(NAME)?;
            if let Some(limit) = clause.strip_prefix(".size()") {
                let limit = limit.trim();
                if let Some(n) = limit.strip_prefix("<=") {
                    return n.trim().parse().ok().map(Clause::AtMost);
                }
                let n: usize = limit.strip_prefix('<')?.trim().parse().ok()?;
                return n.checked_sub(1).map(Clause::AtMost);
            }
            let quoted = clause.strip_prefix(".matches(")?.strip_suffix(')')?.trim();
            let pattern = quoted
                .strip_prefix('\'')
                .and_then(|p| p.strip_suffix('\''))
                .or_else(|| quoted.strip_prefix('"').and_then(|p| p.strip_suffix('"')))?;
            // A quote or backslash inside would need CEL's own unescaping: left to the
            // API server.
            (!pattern.contains(['\'', '"', '\\'])).then(|| Clause::Matches(pattern.to_string()))
        })
        .collect()
}

/// The messages of the root rules of `schema` that `name` breaks, in the CRD's own
/// words; none for a rule not understood here (the API server still checks it).
pub fn name_rule_problems(schema: &Schema, name: &str) -> Vec<String> {
    schema
        .validations
        .iter()
        .filter(|rule| rule.field_path.is_empty())
        .filter_map(|rule| {
            let clauses = clauses(&rule.rule)?;
            let broken = clauses.iter().any(|clause| match clause {
                Clause::AtMost(n) => name.chars().count() > *n,
                Clause::Matches(pattern) => pattern_matches(pattern, name) == Some(false),
            });
            broken.then(|| {
                if rule.message.is_empty() {
                    format!("The name breaks the rule {}.", rule.rule)
                } else {
                    rule.message.clone()
                }
            })
        })
        .collect()
}

/// The kind's name rules as its CRD says them (the messages of the rules understood
/// here), to show beside the name before anything is typed.
pub fn name_rules_said(schema: &Schema) -> Vec<String> {
    schema
        .validations
        .iter()
        .filter(|rule| rule.field_path.is_empty() && !rule.message.is_empty())
        .filter(|rule| clauses(&rule.rule).is_some())
        .map(|rule| rule.message.clone())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::openapi::CelRule;

    fn schema(rule: &str) -> Schema {
        Schema {
            validations: vec![CelRule {
                rule: rule.into(),
                message: "a Stack's name starts with a letter".into(),
                ..Default::default()
            }],
            ..Default::default()
        }
    }

    #[test]
    fn a_stacks_name_rule_is_checked_as_typed() {
        let stack = schema(
            "self.metadata.name.size() <= 52 && self.metadata.name.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$')",
        );
        assert_eq!(
            name_rule_problems(&stack, "shop.db"),
            ["a Stack's name starts with a letter"]
        );
        assert_eq!(name_rule_problems(&stack, "9db").len(), 1);
        assert_eq!(name_rule_problems(&stack, &"a".repeat(53)).len(), 1);
        assert!(name_rule_problems(&stack, &"a".repeat(52)).is_empty());
        assert!(name_rule_problems(&stack, "shop-db").is_empty());
        assert_eq!(
            name_rules_said(&stack),
            ["a Stack's name starts with a letter"]
        );
        assert!(name_rules_said(&schema("self.spec.min <= self.spec.max")).is_empty());
    }

    #[test]
    fn any_other_rule_is_left_to_the_api_server() {
        for rule in [
            "self.spec.min <= self.spec.max",
            "self.metadata.name.size() <= 52 && self.spec.x == 1",
            "self.metadata.name.startsWith('a')",
            r"self.metadata.name.matches('a\'b')",
        ] {
            assert!(
                name_rule_problems(&schema(rule), "shop.db").is_empty(),
                "{rule}"
            );
        }
        assert_eq!(
            name_rule_problems(&schema("self.metadata.name.size() < 4"), "abcd").len(),
            1
        );
    }
}
