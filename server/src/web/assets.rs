//! The compiled site's static files and the cache policy of every response.
//!
//! A release build names the bundle by content (`portico.<hash>.wasm`, listed in
//! cargo-leptos' `hash.txt` beside the binary) and leaves brotli and gzip copies next
//! to each file. Those names never change meaning, so browsers may keep them for a
//! year without asking again; anything else under the site is revalidated, and pages
//! and API answers are never stored (they carry a person's view of the cluster).
//!
//! A bundle split by page (`--split`) is the exception: cargo-leptos writes the split
//! loader's name into the app's JS and every wasm file after naming them by their
//! content, so a release that changed only a page's part can keep `portico.<hash>.js`
//! while that file now asks for another loader. Of such a bundle only the stylesheet
//! and the loader (named again once rewritten, `split:` in `hash.txt`) are kept; the
//! rest is revalidated, a 304 when unchanged.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use axum::body::Body;
use axum::extract::Request;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use leptos::prelude::LeptosOptions;
use tower::ServiceExt;
use tower_http::services::ServeDir;

/// For content-hashed files: a year, and no revalidation while it lasts.
pub const IMMUTABLE: &str = "public, max-age=31536000, immutable";
/// For site files whose name does not change with their content.
pub const REVALIDATE: &str = "no-cache";
/// For pages, server functions and streams: never written to any cache.
pub const NO_STORE: &str = "no-store";

#[derive(Debug, thiserror::Error)]
pub enum AssetsError {
    #[error("file hashing is on but {path} cannot be read: {source}")]
    HashFile {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// The site directory and which of its files are named by their content.
#[derive(Debug, Clone)]
pub struct SiteAssets {
    /// The site's files, with their brotli and gzip copies; built once, cloned per request.
    files: ServeDir,
    /// `/pkg/portico.<hash>.js` and its siblings, as request paths.
    hashed: HashSet<String>,
}

impl SiteAssets {
    /// Reads the hash list when `options` says the build hashed file names.
    pub fn load(options: &LeptosOptions) -> Result<Self, AssetsError> {
        if !options.hash_files {
            return Ok(Self::unhashed(options));
        }
        let path = hash_file_path(options);
        let text = std::fs::read_to_string(&path)
            .map_err(|source| AssetsError::HashFile { path, source })?;
        Ok(Self {
            hashed: hashed_paths(&text, &options.site_pkg_dir, &options.output_name),
            ..Self::unhashed(options)
        })
    }

    /// The stylesheet's request path (relative to Portico's root): the content-named
    /// one when the build hashed file names.
    pub fn stylesheet(&self) -> String {
        self.hashed
            .iter()
            .find(|p| p.ends_with(".css"))
            .cloned()
            .unwrap_or_else(|| "/pkg/portico.css".to_string())
    }

    /// The site with no file treated as content-hashed.
    pub fn unhashed(options: &LeptosOptions) -> Self {
        Self {
            files: ServeDir::new(options.site_root.as_ref())
                .precompressed_br()
                .precompressed_gzip(),
            hashed: HashSet::new(),
        }
    }

    /// Serves `request` (its path relative to Portico's root) from the site,
    /// precompressed where the client accepts it and a variant exists.
    pub async fn serve(&self, request: Request<Body>) -> Response {
        let immutable = self.hashed.contains(request.uri().path());
        let mut response = match self.files.clone().oneshot(request).await {
            Ok(response) => response.into_response(),
            Err(never) => match never {},
        };
        // A 304's headers replace the cached copy's (RFC 9111 4.3.4): it must say
        // immutable too, or one revalidation would cost the file its year.
        let kept = response.status().is_success() || response.status() == StatusCode::NOT_MODIFIED;
        let policy = if immutable && kept {
            IMMUTABLE
        } else {
            REVALIDATE
        };
        let headers = response.headers_mut();
        headers.insert(header::CACHE_CONTROL, HeaderValue::from_static(policy));
        // One URL, a brotli, gzip or plain body by Accept-Encoding: caches on the way
        // (an Ingress, a CDN) must keep them apart. ServeDir does not say so itself.
        headers.insert(header::VARY, HeaderValue::from_static("accept-encoding"));
        response
    }
}

/// Where leptos and cargo-leptos keep the hash list: beside the running binary.
pub fn hash_file_path(options: &LeptosOptions) -> PathBuf {
    std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent().map(Path::to_path_buf))
        .unwrap_or_default()
        .join(options.hash_file.as_ref())
}

/// Request paths of the bundle files `hash.txt` names (`js: <hash>` lines) whose
/// names follow their content: all of them, or of a split bundle (a `split:` line)
/// the stylesheet and the split loader only.
fn hashed_paths(hash_txt: &str, pkg_dir: &str, output_name: &str) -> HashSet<String> {
    let entries: Vec<(&str, &str)> = hash_txt
        .lines()
        .filter_map(|line| line.split_once(':'))
        .map(|(kind, hash)| (kind.trim(), hash.trim()))
        .collect();
    let split = entries.iter().any(|(kind, _)| *kind == "split");
    let pkg = pkg_dir.trim_matches('/');
    entries
        .iter()
        .filter_map(|&(kind, hash)| match kind {
            "css" => Some(format!("/{pkg}/{output_name}.{hash}.css")),
            "js" | "wasm" if !split => Some(format!("/{pkg}/{output_name}.{hash}.{kind}")),
            "split" => Some(format!("/{pkg}/__wasm_split.{hash}.js")),
            _ => None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hash_list_names_the_bundle_files() {
        let text = "js: AbC\nwasm: dEf-_\ncss: x1\nmanifest: zz\n\n";
        let paths = hashed_paths(text, "pkg", "portico");
        let expected: HashSet<String> = [
            "/pkg/portico.AbC.js",
            "/pkg/portico.dEf-_.wasm",
            "/pkg/portico.x1.css",
        ]
        .into_iter()
        .map(String::from)
        .collect();
        assert_eq!(paths, expected);
    }

    #[test]
    fn of_a_split_bundle_only_the_stylesheet_and_the_loader_are_kept() {
        let text = "js: AbC\nwasm: dEf-_\ncss: x1\nmanifest: zz\nsplit: Lo_d\n";
        let paths = hashed_paths(text, "/pkg/", "portico");
        let expected: HashSet<String> = ["/pkg/portico.x1.css", "/pkg/__wasm_split.Lo_d.js"]
            .into_iter()
            .map(String::from)
            .collect();
        assert_eq!(paths, expected);
    }
}
