//! The map for newcomers stays whole: every source file of the workspace is named, by
//! its path from the repository's root, in README.md or docs/architecture.md. A file
//! added, moved or renamed without a line there fails here. Needs no cluster.
use std::path::{Path, PathBuf};

/// Where a workspace member keeps its Rust sources (tests and benchmarks included).
const SOURCE_DIRS: [&str; 3] = ["src", "tests", "benches"];

/// The workspace's members, as the root Cargo.toml lists them (`members = [...]` on
/// one line): a crate added to the workspace is covered without a change here.
fn members(root: &Path) -> Vec<String> {
    let manifest = std::fs::read_to_string(root.join("Cargo.toml")).expect("Cargo.toml");
    let line = manifest
        .lines()
        .find(|l| l.starts_with("members = ["))
        .expect("the workspace's members on one line");
    line.split('"')
        .skip(1)
        .step_by(2)
        .map(str::to_string)
        .collect()
}

fn repository() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Every `.rs` file under `dir`, as paths relative to `root`, sorted.
fn rust_files(root: &Path, dir: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut pending = vec![root.join(dir)];
    while let Some(next) = pending.pop() {
        let entries = std::fs::read_dir(&next).unwrap_or_else(|e| panic!("{next:?}: {e}"));
        for entry in entries {
            let path = entry.expect("a directory entry").path();
            if path.is_dir() {
                pending.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let relative = path.strip_prefix(root).expect("under the repository");
                found.push(relative.to_string_lossy().into_owned());
            }
        }
    }
    found.sort();
    found
}

#[test]
fn every_source_file_is_named_in_the_readme_or_the_architecture_page() {
    let root = repository();
    let read = |name: &str| {
        std::fs::read_to_string(root.join(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
    };
    let maps = format!("{}\n{}", read("README.md"), read("docs/architecture.md"));
    let members = members(&root);
    assert!(members.len() >= 6, "members: {members:?}");
    let files: Vec<String> = members
        .iter()
        .flat_map(|member| SOURCE_DIRS.map(|dir| format!("{member}/{dir}")))
        .filter(|dir| root.join(dir).is_dir())
        .flat_map(|dir| rust_files(&root, &dir))
        .collect();
    // Something to check, or the check proves nothing.
    assert!(files.len() > 200, "only {} source files found", files.len());
    let unnamed: Vec<&String> = files
        .iter()
        .filter(|file| !maps.contains(&format!("`{file}`")))
        .collect();
    assert!(
        unnamed.is_empty(),
        "named in neither README.md nor docs/architecture.md (as `path`): {unnamed:#?}"
    );
}

/// The live layer's folders (`server/src/live/*/`) that each folder's code names
/// (`crate::live::FOLDER`, comments aside).
fn live_folder_arrows(root: &Path) -> std::collections::BTreeMap<String, Vec<String>> {
    let live = root.join("server/src/live");
    let folders: Vec<String> = std::fs::read_dir(&live)
        .expect("server/src/live")
        .filter_map(|entry| {
            let path = entry.ok()?.path();
            path.is_dir()
                .then(|| path.file_name()?.to_str().map(str::to_string))
                .flatten()
        })
        .collect();
    folders
        .iter()
        .map(|folder| {
            let code: String = rust_files(root, &format!("server/src/live/{folder}"))
                .iter()
                .map(|file| std::fs::read_to_string(root.join(file)).expect("a source file"))
                .flat_map(|text| {
                    text.lines()
                        .filter(|l| !l.trim_start().starts_with("//"))
                        .map(str::to_string)
                        .collect::<Vec<_>>()
                })
                .collect::<Vec<_>>()
                .join("\n");
            let uses = folders
                .iter()
                .filter(|other| *other != folder)
                .filter(|other| code.contains(&format!("crate::live::{other}::")))
                .cloned()
                .collect();
            (folder.clone(), uses)
        })
        .collect()
}

#[test]
fn the_live_layers_folders_use_one_another_in_one_direction_only() {
    let arrows = live_folder_arrows(&repository());
    assert!(arrows.len() >= 7, "folders: {arrows:?}");
    assert!(
        arrows.values().any(|uses| !uses.is_empty()),
        "no arrows read: {arrows:?}"
    );
    // Each folder's reach, followed until nothing new: a folder that reaches itself is
    // on a circle.
    for start in arrows.keys() {
        let mut seen: Vec<&String> = Vec::new();
        let mut pending: Vec<&String> = arrows[start].iter().collect();
        while let Some(next) = pending.pop() {
            assert_ne!(next, start, "an import circle through {start}: {arrows:#?}");
            if !seen.contains(&next) {
                seen.push(next);
                pending.extend(arrows.get(next).into_iter().flatten());
            }
        }
    }
}
