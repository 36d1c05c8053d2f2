//! What each Stack choice provisions (image, port, probes, environment), read from a
//! YAML file (in a cluster: a mounted ConfigMap) so that offering another choice or
//! version needs no code change. The built-in default is `deploy/catalog/stacks.yaml`.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

/// The catalog Portico ships with (official MySQL 8.4 and Tomcat 10.1 images).
pub const DEFAULT_CATALOG: &str = include_str!("../../../deploy/catalog/stacks.yaml");

#[derive(Debug, thiserror::Error)]
pub enum CatalogError {
    #[error("cannot read the stack catalog {path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("the stack catalog is not valid: {0}")]
    Parse(#[from] serde_yaml::Error),
    #[error("the stack catalog entry {0:?} has no image")]
    NoImage(String),
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CatalogEntry {
    #[serde(default)]
    pub title: String,
    #[serde(default)]
    pub description: String,
    /// The image used when a Stack names no version.
    pub image: String,
    /// Version → image.
    #[serde(default)]
    pub versions: BTreeMap<String, String>,
    pub port: i32,
    #[serde(default = "default_port_name")]
    pub port_name: String,
    /// A StatefulSet with a volume per replica and a headless Service; otherwise a
    /// Deployment.
    #[serde(default)]
    pub stateful: bool,
    #[serde(default)]
    pub default_storage: Option<String>,
    /// Where the workload mounts its volume (stateful entries).
    #[serde(default)]
    pub data_path: Option<String>,
    /// The environment variable that receives the generated password; entries
    /// without one get no credentials Secret.
    #[serde(default)]
    pub password_env: Option<String>,
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    #[serde(default)]
    pub readiness: Option<ProbeSpec>,
    #[serde(default)]
    pub liveness: Option<ProbeSpec>,
    /// The unprivileged user the image can run as (its processes then run as it, with
    /// its group owning the volume); an image that needs root at start names none.
    #[serde(default)]
    pub run_as_user: Option<i64>,
}

fn default_port_name() -> String {
    "main".into()
}

/// One way of probing the container; `tcp` checks the main port.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProbeSpec {
    #[serde(default)]
    pub exec: Option<Vec<String>>,
    #[serde(default)]
    pub http_get: Option<String>,
    #[serde(default)]
    pub tcp: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Catalog {
    pub entries: BTreeMap<String, CatalogEntry>,
}

impl CatalogEntry {
    /// The image for `version` (the default image when none is asked for), or `None`
    /// when the catalog does not offer that version.
    pub fn image_for(&self, version: Option<&str>) -> Option<&str> {
        match version {
            None | Some("") => Some(&self.image),
            Some(v) => self.versions.get(v).map(String::as_str),
        }
    }
}

impl Catalog {
    pub fn parse(text: &str) -> Result<Self, CatalogError> {
        let entries: BTreeMap<String, CatalogEntry> = serde_yaml::from_str(text)?;
        if let Some((name, _)) = entries.iter().find(|(_, e)| e.image.is_empty()) {
            return Err(CatalogError::NoImage(name.clone()));
        }
        Ok(Self { entries })
    }

    /// The catalog at `path`, or the built-in one.
    pub fn load(path: Option<&Path>) -> Result<Self, CatalogError> {
        match path {
            None => Self::parse(DEFAULT_CATALOG),
            Some(p) => {
                let text = std::fs::read_to_string(p).map_err(|source| CatalogError::Read {
                    path: p.display().to_string(),
                    source,
                })?;
                Self::parse(&text)
            }
        }
    }

    pub fn get(&self, choice: &str) -> Option<&CatalogEntry> {
        self.entries.get(choice)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_catalog_offers_mysql_8_4_and_tomcat_10_1() {
        let catalog = Catalog::load(None).expect("default catalog");
        let mysql = catalog.get("mysql").expect("mysql");
        assert!(mysql.stateful);
        assert_eq!(mysql.image_for(None), Some("docker.io/library/mysql:8.4"));
        assert_eq!(mysql.password_env.as_deref(), Some("MYSQL_ROOT_PASSWORD"));
        let tomcat = catalog.get("tomcat").expect("tomcat");
        assert!(!tomcat.stateful);
        assert_eq!(
            tomcat.image_for(None),
            Some("docker.io/library/tomcat:10.1")
        );
        assert_eq!(tomcat.image_for(Some("9")), None);
    }

    #[test]
    fn a_catalog_entry_without_image_is_refused() {
        let err = Catalog::parse("x:\n  image: ''\n  port: 1\n").expect_err("no image");
        assert!(err.to_string().contains("\"x\""));
    }
}
