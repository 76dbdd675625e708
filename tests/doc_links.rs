//! Every Markdown link in the repository resolves inside the repository: relative paths name
//! existing files that stay inside it, and `#anchors` name a heading or an `id` of the target.
//! Docs cite public URLs, never files beside the repository (`../shared/...`).

use std::path::{Path, PathBuf};

fn markdown_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        if path.is_dir() {
            // Licence texts copied verbatim with third-party data keep their own links.
            if !name.starts_with('.') && name != "target" && name != "fuzz" && name != "LICENSES" {
                markdown_files(&path, out);
            }
        } else if name.ends_with(".md") {
            out.push(path);
        }
    }
}

/// Link targets of `[text](target)` outside code blocks and inline code.
fn links(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut in_fence = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            in_fence = !in_fence;
            continue;
        }
        if in_fence {
            continue;
        }
        // Drop inline code spans.
        let mut plain = String::new();
        let mut in_code = false;
        for c in line.chars() {
            if c == '`' {
                in_code = !in_code;
            } else if !in_code {
                plain.push(c);
            }
        }
        let mut rest = plain.as_str();
        while let Some(i) = rest.find("](") {
            let after = &rest[i + 2..];
            let Some(end) = after.find(')') else { break };
            out.push(after[..end].trim().to_string());
            rest = &after[end..];
        }
    }
    out
}

/// GitHub's anchor of a heading: lowercase, spaces to `-`, punctuation other than `-`/`_` dropped.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| {
            if c.is_alphanumeric() || c == '-' || c == '_' {
                Some(c)
            } else if c == ' ' {
                Some('-')
            } else {
                None
            }
        })
        .collect()
}

fn anchors(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut in_fence = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            in_fence = !in_fence;
            continue;
        }
        if !in_fence && line.starts_with('#') {
            out.push(slug(line.trim_start_matches('#')));
        }
        let mut rest = line;
        while let Some(i) = rest.find("id=\"") {
            let after = &rest[i + 4..];
            let end = after.find('"').unwrap_or(after.len());
            out.push(after[..end].to_string());
            rest = &after[end..];
        }
    }
    out
}

#[test]
fn every_markdown_link_resolves_inside_the_repository() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .canonicalize()
        .unwrap();
    let mut files = Vec::new();
    markdown_files(&root, &mut files);
    assert!(files.len() >= 5, "found {files:?}");
    let mut broken = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        let rel = file.strip_prefix(&root).unwrap().display().to_string();
        if text.contains("../shared") {
            broken.push(format!("{rel}: cites ../shared (outside the repository)"));
        }
        // Design notes that live beside the repository, not in it.
        for outside in [
            "CACHE_SEMANTICS",
            "DESIGN.md",
            "RUST_NOTES",
            "CLAUDE_CODE_RECORDS",
        ] {
            if text.contains(outside) && !root.join(format!("{outside}.md")).exists() {
                broken.push(format!(
                    "{rel}: cites {outside}, which is not in the repository"
                ));
            }
        }
        for link in links(&text) {
            if link.starts_with("http://")
                || link.starts_with("https://")
                || link.starts_with("mailto:")
            {
                continue;
            }
            let (path, anchor) = match link.split_once('#') {
                Some((p, a)) => (p, Some(a)),
                None => (link.as_str(), None),
            };
            let target = if path.is_empty() {
                file.clone()
            } else {
                file.parent().unwrap().join(path)
            };
            let Ok(target) = target.canonicalize() else {
                broken.push(format!("{rel}: `{link}`: no such file"));
                continue;
            };
            if !target.starts_with(&root) {
                broken.push(format!("{rel}: `{link}`: outside the repository"));
                continue;
            }
            if let Some(anchor) = anchor {
                let body = std::fs::read_to_string(&target).unwrap_or_default();
                if !anchors(&body).iter().any(|a| a == anchor) {
                    broken.push(format!("{rel}: `{link}`: no heading or id `{anchor}`"));
                }
            }
        }
    }
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

#[test]
fn the_link_walker_sees_links_and_anchors() {
    let text =
        "# Quick start\n[a](docs/x.md#y) `[not](a link)` <a id=\"z\"></a>\n```\n[no](code)\n```\n";
    assert_eq!(links(text), vec!["docs/x.md#y".to_string()]);
    assert_eq!(
        anchors(text),
        vec!["quick-start".to_string(), "z".to_string()]
    );
}
