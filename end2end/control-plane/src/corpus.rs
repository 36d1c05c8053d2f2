//! The real-world CRD corpus (`end2end/crd-corpus`): CRD manifests read from the
//! projects' own Go modules in the module cache (fetched through the module proxy by
//! `fetch.sh`, never committed), each with a sample object written for Portico.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use kube::api::DynamicObject;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::apply::{self, ApplyError};

#[derive(Debug, thiserror::Error)]
pub enum CorpusError {
    #[error("running {script} (it downloads the corpus modules with `go mod download`): {detail}")]
    Fetch { script: PathBuf, detail: String },
    #[error(transparent)]
    Manifest(#[from] ApplyError),
    #[error("{module} is in corpus.yaml but not in go.mod")]
    UnknownModule { module: String },
    #[error("{file}: has no CRD named {crd}")]
    MissingCrd { file: PathBuf, crd: String },
    #[error("samples/{crd}.yaml: expected one object of that CRD's kind")]
    Sample { crd: String },
}

#[derive(Deserialize)]
struct Project {
    project: String,
    module: String,
    files: Vec<FileEntry>,
}

#[derive(Deserialize)]
struct FileEntry {
    path: String,
    #[serde(default)]
    crds: Vec<String>,
}

/// One CRD of the corpus, with where it came from and its sample object.
#[derive(Debug, Clone, Serialize)]
pub struct Entry {
    pub project: String,
    pub module: String,
    pub version: String,
    /// The manifest's path inside the module.
    pub path: String,
    pub name: String,
    pub group: String,
    pub kind: String,
    pub plural: String,
    pub namespaced: bool,
    /// Served versions, the storage version first.
    pub versions: Vec<String>,
    pub sample_name: String,
    pub sample_namespace: Option<String>,
    #[serde(skip)]
    pub crd: DynamicObject,
    #[serde(skip)]
    pub sample: DynamicObject,
}

impl Entry {
    /// The CRD's openAPIV3Schema for `version` (null when it has none).
    pub fn schema(&self, version: &str) -> Value {
        field(&self.crd.data, "/spec/versions")
            .as_array()
            .into_iter()
            .flatten()
            .find(|v| *field(v, "/name") == version)
            .map(|v| field(v, "/schema/openAPIV3Schema").clone())
            .unwrap_or(Value::Null)
    }
}

/// The whole corpus: CRDs in corpus.yaml's order, plus objects every sample needs
/// (its namespace).
pub struct Corpus {
    pub entries: Vec<Entry>,
    pub support: Vec<DynamicObject>,
}

impl Corpus {
    /// Everything to apply: CRDs, then namespaces, then samples.
    pub fn objects(&self) -> Vec<DynamicObject> {
        let crds = self.entries.iter().map(|e| e.crd.clone());
        let samples = self.entries.iter().map(|e| e.sample.clone());
        crds.chain(self.support.iter().cloned())
            .chain(samples)
            .collect()
    }
}

/// Module path → directory in the module cache, downloading what is missing.
fn module_dirs(dir: &Path) -> Result<HashMap<String, (String, PathBuf)>, CorpusError> {
    let script = dir.join("fetch.sh");
    let out = Command::new("bash")
        .arg(&script)
        .output()
        .map_err(|e| CorpusError::Fetch {
            script: script.clone(),
            detail: e.to_string(),
        })?;
    if !out.status.success() {
        return Err(CorpusError::Fetch {
            script,
            detail: String::from_utf8_lossy(&out.stderr).into_owned(),
        });
    }
    Ok(String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|line| {
            let mut parts = line.splitn(3, ' ');
            let (module, version, path) = (parts.next()?, parts.next()?, parts.next()?);
            Some((
                module.to_string(),
                (version.to_string(), PathBuf::from(path)),
            ))
        })
        .collect())
}

/// Reads a YAML file, failing the way manifest reads fail.
fn read_yaml<T: for<'de> Deserialize<'de>>(path: &Path) -> Result<T, ApplyError> {
    let text = std::fs::read_to_string(path).map_err(|source| ApplyError::Read {
        path: path.into(),
        source,
    })?;
    serde_yaml::from_str(&text).map_err(|source| ApplyError::Parse {
        path: path.into(),
        source,
    })
}

fn entry(
    project: &Project,
    version: &str,
    path: &str,
    crd: DynamicObject,
    samples: &Path,
) -> Result<Entry, CorpusError> {
    let name = crd.metadata.name.clone().unwrap_or_default();
    let spec = field(&crd.data, "/spec");
    let text = |v: &Value| v.as_str().unwrap_or_default().to_string();
    let all: Vec<&Value> = field(spec, "/versions")
        .as_array()
        .into_iter()
        .flatten()
        .collect();
    let mut versions: Vec<String> = all
        .iter()
        .filter(|v| *field(v, "/storage") == true)
        .chain(
            all.iter()
                .filter(|v| *field(v, "/storage") != true && *field(v, "/served") == true),
        )
        .map(|v| text(field(v, "/name")))
        .collect();
    versions.dedup();
    let kind = text(field(spec, "/names/kind"));
    let sample_file = samples.join(format!("{name}.yaml"));
    let mut docs = apply::read_documents(&sample_file)?;
    let sample = match (docs.pop(), docs.is_empty()) {
        (Some(s), true) if s.types.as_ref().is_some_and(|t| t.kind == kind) => s,
        _ => return Err(CorpusError::Sample { crd: name }),
    };
    Ok(Entry {
        project: project.project.clone(),
        module: project.module.clone(),
        version: version.to_string(),
        path: path.to_string(),
        group: text(field(spec, "/group")),
        plural: text(field(spec, "/names/plural")),
        namespaced: *field(spec, "/scope") == "Namespaced",
        versions,
        sample_name: sample.metadata.name.clone().unwrap_or_default(),
        sample_namespace: sample.metadata.namespace.clone(),
        kind,
        name,
        crd,
        sample,
    })
}

/// Loads the corpus described in `dir` (end2end/crd-corpus), downloading its modules
/// through the Go module proxy when the module cache lacks them.
pub fn load(dir: &Path) -> Result<Corpus, CorpusError> {
    let modules = module_dirs(dir)?;
    let projects: Vec<Project> = read_yaml(&dir.join("corpus.yaml"))?;
    let samples = dir.join("samples");
    let mut entries = Vec::new();
    for project in &projects {
        let (version, root) =
            modules
                .get(&project.module)
                .ok_or_else(|| CorpusError::UnknownModule {
                    module: project.module.clone(),
                })?;
        for file in &project.files {
            let full = root.join(&file.path);
            let crds: Vec<DynamicObject> = apply::read_documents(&full)?
                .into_iter()
                .filter(|d| {
                    d.types
                        .as_ref()
                        .is_some_and(|t| t.kind == "CustomResourceDefinition")
                })
                .collect();
            let picked: Vec<DynamicObject> = if file.crds.is_empty() {
                crds
            } else {
                let mut picked = Vec::new();
                for wanted in &file.crds {
                    let found = crds
                        .iter()
                        .find(|c| c.metadata.name.as_deref() == Some(wanted.as_str()))
                        .ok_or_else(|| CorpusError::MissingCrd {
                            file: full.clone(),
                            crd: wanted.clone(),
                        })?;
                    picked.push(found.clone());
                }
                picked
            };
            for crd in picked {
                entries.push(entry(project, version, &file.path, crd, &samples)?);
            }
        }
    }
    let support = apply::read_documents(&samples.join("00-namespace.yaml"))?;
    Ok(Corpus { entries, support })
}

/// The value at a JSON pointer, or null: reading a CRD never panics on its shape.
fn field<'a>(v: &'a Value, pointer: &str) -> &'a Value {
    v.pointer(pointer).unwrap_or(&Value::Null)
}
