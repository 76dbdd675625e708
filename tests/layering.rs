//! The layering of docs/architecture.md, held: every import of one top-level module of the crate
//! by another (`use crate::x::...`, `crate::x::` anywhere in code, macro bodies included, and
//! `super::` paths that climb out of their top-level module) must be allowed by the table
//! there, every module declared in src/lib.rs must be placed in it, and the modules must not
//! import each other in a cycle.
//!
//! Files are read as Rust tokens (proc-macro2's lexer), so comments, doc comments and string
//! literals never count as imports; nor do `#[cfg(test)]` modules (a unit test may build its
//! inputs with any layer).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::str::FromStr;

use proc_macro2::{Delimiter, Spacing, TokenStream, TokenTree};

/// One import of another top-level module: where it is and what it reaches.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Edge {
    /// The importing top-level module.
    from: String,
    /// The imported top-level module.
    to: String,
    /// File of the import, relative to the crate root.
    file: String,
    /// 1-based line of the import.
    line: usize,
}

/// The table of docs/architecture.md: layers bottom-up.
#[derive(Debug)]
struct Layers {
    /// Layer of each module.
    layer_of: BTreeMap<String, String>,
    /// Layers each layer may import (its own name there allows imports within the layer).
    may_import: BTreeMap<String, BTreeSet<String>>,
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The cells of a Markdown table row, trimmed, backticks dropped.
fn cells(line: &str) -> Vec<String> {
    let inner = line.trim().trim_start_matches('|').trim_end_matches('|');
    inner
        .split('|')
        .map(|c| c.trim().replace('`', ""))
        .collect()
}

/// A comma-separated cell as names (`none` or `-` is the empty list).
fn names(cell: &str) -> Vec<String> {
    cell.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty() && *s != "none" && *s != "-")
        .map(String::from)
        .collect()
}

/// Parses the first table whose header is `layer | modules | may import`.
fn parse_layers(md: &str) -> Result<Layers, String> {
    let mut lines = md.lines().enumerate().skip_while(|(_, l)| {
        let c = cells(l);
        !(l.trim_start().starts_with('|')
            && c.len() == 3
            && c[0].eq_ignore_ascii_case("layer")
            && c[1].eq_ignore_ascii_case("modules")
            && c[2].eq_ignore_ascii_case("may import"))
    });
    lines
        .next()
        .ok_or("docs/architecture.md has no table `| layer | modules | may import |`")?;
    let mut layers = Layers {
        layer_of: BTreeMap::new(),
        may_import: BTreeMap::new(),
    };
    for (n, line) in lines {
        if !line.trim_start().starts_with('|') {
            break;
        }
        let c = cells(line);
        if c.iter().all(|x| x.chars().all(|ch| ch == '-' || ch == ':')) {
            continue; // the separator row
        }
        if c.len() != 3 {
            return Err(format!(
                "docs/architecture.md:{}: a layer row has 3 cells (layer | modules | may import)",
                n + 1
            ));
        }
        for m in names(&c[1]) {
            if let Some(other) = layers.layer_of.insert(m.clone(), c[0].clone()) {
                return Err(format!(
                    "docs/architecture.md:{}: module `{m}` is in layers `{other}` and `{}`",
                    n + 1,
                    c[0]
                ));
            }
        }
        layers
            .may_import
            .insert(c[0].clone(), names(&c[2]).into_iter().collect());
    }
    for (layer, allowed) in &layers.may_import {
        for a in allowed {
            if !layers.may_import.contains_key(a) {
                return Err(format!(
                    "docs/architecture.md: layer `{layer}` may import `{a}`, which is no layer"
                ));
            }
        }
    }
    Ok(layers)
}

/// The top-level modules src/lib.rs declares (`mod x;` with any visibility).
fn declared_modules(lib: &str) -> Vec<String> {
    let tokens: Vec<TokenTree> = TokenStream::from_str(lib)
        .expect("src/lib.rs lexes")
        .into_iter()
        .collect();
    let mut out = Vec::new();
    for w in tokens.windows(3) {
        if let (TokenTree::Ident(kw), TokenTree::Ident(name), TokenTree::Punct(semi)) =
            (&w[0], &w[1], &w[2])
        {
            if kw == "mod" && semi.as_char() == ';' {
                out.push(name.to_string());
            }
        }
    }
    out
}

/// Whether `tokens[i]` and `tokens[i + 1]` are the two colons of a `::`.
fn path_sep(tokens: &[TokenTree], i: usize) -> bool {
    matches!(
        (tokens.get(i), tokens.get(i + 1)),
        (Some(TokenTree::Punct(a)), Some(TokenTree::Punct(b)))
            if a.as_char() == ':' && a.spacing() == Spacing::Joint && b.as_char() == ':'
    )
}

fn ident(t: Option<&TokenTree>) -> Option<String> {
    match t {
        Some(TokenTree::Ident(i)) => Some(i.to_string()),
        _ => None,
    }
}

/// One path that reaches into the crate by `crate::` or `super::`, resolved.
#[derive(Debug, Clone)]
struct Reach {
    /// Absolute module path of the code holding the path (inline modules included).
    at: Vec<String>,
    /// Its first two segments from the crate root (`["cache", "cursor"]`; one when the path
    /// stops there, or at a glob).
    target: Vec<String>,
    /// 1-based line of the path.
    line: usize,
}

/// Scans one file, collecting every `crate::` and `super::` path it holds.
#[derive(Default)]
struct Scan {
    /// Paths found so far.
    out: Vec<Reach>,
}

impl Scan {
    /// Walks `tokens` inside module `module` (inline `mod x { ... }` extend it).
    fn walk(&mut self, tokens: &[TokenTree], module: &[String]) {
        let mut i = 0;
        while i < tokens.len() {
            match &tokens[i] {
                TokenTree::Group(g) => {
                    let inner: Vec<TokenTree> = g.stream().into_iter().collect();
                    let is_mod = g.delimiter() == Delimiter::Brace
                        && i >= 2
                        && ident(tokens.get(i - 2)).as_deref() == Some("mod");
                    if is_mod && cfg_test(tokens, i - 2) {
                        // A unit-test module builds its inputs with any layer: not an import
                        // of the library.
                    } else if is_mod {
                        let mut m = module.to_vec();
                        m.push(ident(tokens.get(i - 1)).unwrap_or_default());
                        self.walk(&inner, &m);
                    } else {
                        self.walk(&inner, module);
                    }
                }
                TokenTree::Ident(id) if id == "crate" && path_sep(tokens, i + 1) => {
                    // Not `$crate` and not the `crate` of `pub(crate)` (no `::` follows that).
                    self.reach(module, Vec::new(), tokens, i + 3, &tokens[i]);
                }
                TokenTree::Ident(id) if id == "super" && !preceded_by_path_sep(tokens, i) => {
                    // Count `super::super::...`, then see where the path lands.
                    let mut base = module.to_vec();
                    let mut j = i;
                    while ident(tokens.get(j)).as_deref() == Some("super")
                        && path_sep(tokens, j + 1)
                    {
                        base.pop();
                        j += 3;
                    }
                    self.reach(module, base, tokens, j, &tokens[i]);
                    i = j.max(i + 1);
                    continue;
                }
                _ => {}
            }
            i += 1;
        }
    }

    /// Records the paths `base::<tokens[j..]>`, cut to their first two segments.
    fn reach(
        &mut self,
        at: &[String],
        mut base: Vec<String>,
        tokens: &[TokenTree],
        j: usize,
        tree: &TokenTree,
    ) {
        base.truncate(2);
        for tail in segments(tokens, j, 2 - base.len()) {
            let mut target = base.clone();
            target.extend(tail);
            if !target.is_empty() {
                self.out.push(Reach {
                    at: at.to_vec(),
                    target,
                    line: tree.span().start().line,
                });
            }
        }
    }
}

/// The first `n` segments of the path(s) at `tokens[j..]`: `a::b::c` gives `[a, b]`,
/// `{a::x, b}` gives `[a, x]` and `[b]`, `a::{x, y}` gives `[a, x]` and `[a, y]`; a glob or
/// anything else ends a path.
fn segments(tokens: &[TokenTree], j: usize, n: usize) -> Vec<Vec<String>> {
    if n == 0 {
        return vec![Vec::new()];
    }
    match tokens.get(j) {
        Some(TokenTree::Ident(x)) => {
            if path_sep(tokens, j + 1) {
                let mut out = segments(tokens, j + 3, n - 1);
                for t in &mut out {
                    t.insert(0, x.to_string());
                }
                out
            } else {
                vec![vec![x.to_string()]]
            }
        }
        Some(TokenTree::Group(g)) if g.delimiter() == Delimiter::Brace => {
            let inner: Vec<TokenTree> = g.stream().into_iter().collect();
            inner
                .split(|t| matches!(t, TokenTree::Punct(p) if p.as_char() == ','))
                .flat_map(|item| segments(item, 0, n))
                .collect()
        }
        _ => vec![Vec::new()],
    }
}

/// Whether the item whose `mod` keyword is `tokens[at]` carries `#[cfg(test)]` (the
/// attributes before it, past a `pub` / `pub(...)`).
fn cfg_test(tokens: &[TokenTree], at: usize) -> bool {
    let mut j = at;
    if j >= 1 {
        if let TokenTree::Group(g) = &tokens[j - 1] {
            if g.delimiter() == Delimiter::Parenthesis
                && j >= 2
                && ident(tokens.get(j - 2)).as_deref() == Some("pub")
            {
                j -= 2;
            }
        } else if ident(tokens.get(j - 1)).as_deref() == Some("pub") {
            j -= 1;
        }
    }
    while j >= 2 {
        let (TokenTree::Punct(hash), TokenTree::Group(attr)) = (&tokens[j - 2], &tokens[j - 1])
        else {
            return false;
        };
        if hash.as_char() != '#' || attr.delimiter() != Delimiter::Bracket {
            return false;
        }
        let text: String = attr.stream().to_string().split_whitespace().collect();
        if text == "cfg(test)" {
            return true;
        }
        j -= 2;
    }
    false
}

/// Whether `tokens[i]` follows a `::` (the `super` of `self::super` is not a fresh path).
fn preceded_by_path_sep(tokens: &[TokenTree], i: usize) -> bool {
    i >= 2 && path_sep(tokens, i - 2)
}

/// Module path of a file under src/: `cache/anthropic.rs` -> `[cache, anthropic]`,
/// `cache/mod.rs` -> `[cache]`.
fn module_path(rel: &Path) -> Vec<String> {
    let mut parts: Vec<String> = rel
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    let last = parts.pop().unwrap_or_default();
    let stem = last.trim_end_matches(".rs").to_string();
    if stem != "mod" {
        parts.push(stem);
    }
    parts
}

/// Every `crate::` / `super::` path of `text`, a file at `rel` under src/.
fn scan_reaches(text: &str, rel: &Path) -> Result<Vec<Reach>, String> {
    let tokens: Vec<TokenTree> = TokenStream::from_str(text)
        .map_err(|e| format!("src/{}: does not lex: {e}", rel.display()))?
        .into_iter()
        .collect();
    let mut s = Scan::default();
    s.walk(&tokens, &module_path(rel));
    Ok(s.out)
}

/// Every edge between top-level modules in `text`, a file at `rel` under src/.
fn scan(text: &str, rel: &Path, tops: &BTreeSet<String>) -> Result<Vec<Edge>, String> {
    let mut out = Vec::new();
    for r in scan_reaches(text, rel)? {
        let (from, to) = (&r.at[0], &r.target[0]);
        if from != to && tops.contains(to) {
            out.push(Edge {
                from: from.clone(),
                to: to.clone(),
                file: format!("src/{}", rel.display()),
                line: r.line,
            });
        }
    }
    out.dedup(); // `use crate::x::{a, b}` reaches `x` once
    Ok(out)
}

/// Edges between the files of one top-level module (`cache::common -> cache::cursor`): a
/// file other than `mod.rs` reaching a sibling file by `super::x` or `crate::m::x`. A parent
/// and its children (`mod.rs` and the files it declares) are one unit and left out. `files`
/// are the module paths of the files under src/.
fn file_edges(text: &str, rel: &Path, files: &BTreeSet<Vec<String>>) -> Vec<Edge> {
    let own = module_path(rel);
    if own.len() != 2 || rel.file_name().is_some_and(|f| f == "mod.rs") {
        return Vec::new();
    }
    let mut out = Vec::new();
    for r in scan_reaches(text, rel).unwrap() {
        if r.target.len() == 2
            && r.target[0] == own[0]
            && r.target[1] != own[1]
            && files.contains(&r.target)
        {
            out.push(Edge {
                from: own.join("::"),
                to: r.target.join("::"),
                file: format!("src/{}", rel.display()),
                line: r.line,
            });
        }
    }
    out.dedup();
    out
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            out.push(p);
        }
    }
}

/// Whether a file under src/ is the binary's (main.rs and the command line under cli/), which
/// sees the library only as `plancache::`.
fn in_binary(rel: &Path) -> bool {
    rel == Path::new("main.rs") || rel.starts_with("cli")
}

/// Every edge of the crate's modules (lib.rs declares, the binary drives: both are left out).
fn crate_edges(tops: &BTreeSet<String>) -> Vec<Edge> {
    let src = root().join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut edges = Vec::new();
    for f in files {
        let rel = f.strip_prefix(&src).unwrap().to_path_buf();
        if rel == Path::new("lib.rs") || in_binary(&rel) {
            continue;
        }
        let text = std::fs::read_to_string(&f).unwrap();
        edges.extend(scan(&text, &rel, tops).unwrap());
    }
    edges
}

/// Every edge between files of one top-level module, over the crate.
fn crate_file_edges() -> Vec<Edge> {
    let src = root().join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let rels: Vec<PathBuf> = files
        .iter()
        .map(|f| f.strip_prefix(&src).unwrap().to_path_buf())
        .collect();
    let modules: BTreeSet<Vec<String>> = rels.iter().map(|r| module_path(r)).collect();
    let mut edges = Vec::new();
    for (f, rel) in files.iter().zip(&rels) {
        let text = std::fs::read_to_string(f).unwrap();
        edges.extend(file_edges(&text, rel, &modules));
    }
    edges
}

/// The edges that `layers` does not allow, one message each.
fn violations(edges: &[Edge], layers: &Layers) -> Vec<String> {
    let mut out = Vec::new();
    for e in edges {
        let (Some(lf), Some(lt)) = (layers.layer_of.get(&e.from), layers.layer_of.get(&e.to))
        else {
            continue; // unplaced modules are reported on their own
        };
        if !layers.may_import[lf].contains(lt) {
            out.push(format!(
                "{}:{}: `{}` (layer {lf}) imports `{}` (layer {lt}); docs/architecture.md lets {lf} import only: {}",
                e.file,
                e.line,
                e.from,
                e.to,
                layers.may_import[lf].iter().cloned().collect::<Vec<_>>().join(", ")
            ));
        }
    }
    out
}

/// A cycle among the modules, as `a -> b -> ... -> a` with one place per edge, if any.
fn find_cycle(edges: &[Edge]) -> Option<String> {
    let mut graph: BTreeMap<&str, BTreeMap<&str, &Edge>> = BTreeMap::new();
    for e in edges {
        graph.entry(&e.from).or_default().entry(&e.to).or_insert(e);
    }
    // Depth-first search with colours: 1 on the stack, 2 done.
    fn dfs<'a>(
        v: &'a str,
        graph: &BTreeMap<&'a str, BTreeMap<&'a str, &'a Edge>>,
        colour: &mut BTreeMap<&'a str, u8>,
        stack: &mut Vec<&'a Edge>,
    ) -> Option<Vec<&'a Edge>> {
        colour.insert(v, 1);
        for (&w, &e) in graph.get(v).into_iter().flatten() {
            stack.push(e);
            match colour.get(w) {
                Some(1) => {
                    let start = stack.iter().position(|x| x.from == w).unwrap();
                    return Some(stack[start..].to_vec());
                }
                None => {
                    if let Some(c) = dfs(w, graph, colour, stack) {
                        return Some(c);
                    }
                }
                _ => {}
            }
            stack.pop();
        }
        colour.insert(v, 2);
        None
    }
    let mut colour = BTreeMap::new();
    for &v in graph.keys() {
        if !colour.contains_key(v) {
            if let Some(c) = dfs(v, &graph, &mut colour, &mut Vec::new()) {
                return Some(
                    c.iter()
                        .map(|e| format!("{} -> {} ({}:{})", e.from, e.to, e.file, e.line))
                        .collect::<Vec<_>>()
                        .join(", "),
                );
            }
        }
    }
    None
}

fn layers() -> Layers {
    let md = std::fs::read_to_string(root().join("docs/architecture.md"))
        .expect("docs/architecture.md exists");
    parse_layers(&md).unwrap_or_else(|e| panic!("{e}"))
}

fn tops() -> BTreeSet<String> {
    let lib = std::fs::read_to_string(root().join("src/lib.rs")).unwrap();
    declared_modules(&lib).into_iter().collect()
}

#[test]
fn every_module_is_placed_in_one_layer() {
    let layers = layers();
    let tops = tops();
    let unplaced: Vec<_> = tops
        .iter()
        .filter(|m| !layers.layer_of.contains_key(*m))
        .collect();
    assert!(
        unplaced.is_empty(),
        "src/lib.rs declares modules docs/architecture.md does not place in a layer: {unplaced:?}; add each to the `modules` cell of its layer"
    );
    let stale: Vec<_> = layers
        .layer_of
        .keys()
        .filter(|m| !tops.contains(*m))
        .collect();
    assert!(
        stale.is_empty(),
        "docs/architecture.md places modules src/lib.rs does not declare: {stale:?}"
    );
}

#[test]
fn every_import_follows_the_layering() {
    let layers = layers();
    let edges = crate_edges(&tops());
    // The walk finds the crate's imports at all (a broken scanner would pass vacuously).
    assert!(edges.iter().any(|e| e.from == "engine" && e.to == "cache"));
    let bad = violations(&edges, &layers);
    assert!(
        bad.is_empty(),
        "{} import(s) against the layering of docs/architecture.md:\n{}",
        bad.len(),
        bad.join("\n")
    );
}

/// The lines of `text` where the identifier `clap` appears as code (comments, doc comments and
/// strings are no tokens of that kind).
fn clap_lines(text: &str) -> Vec<usize> {
    fn walk(stream: TokenStream, out: &mut Vec<usize>) {
        for t in stream {
            match t {
                TokenTree::Ident(i) if i == "clap" => out.push(i.span().start().line),
                TokenTree::Group(g) => walk(g.stream(), out),
                _ => {}
            }
        }
    }
    let mut out = Vec::new();
    walk(TokenStream::from_str(text).expect("lexes"), &mut out);
    out
}

#[test]
fn clap_appears_only_in_the_binary() {
    assert_eq!(
        clap_lines("use clap::Parser;\n/// clap\nfn f() { \"clap\"; x::clap::y(); }"),
        [1, 3]
    );
    let src = root().join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut bad = Vec::new();
    let mut in_bin = 0;
    for f in files {
        let rel = f.strip_prefix(&src).unwrap();
        let lines = clap_lines(&std::fs::read_to_string(&f).unwrap());
        if in_binary(rel) {
            in_bin += lines.len();
        } else {
            bad.extend(lines.iter().map(|l| format!("src/{}:{l}", rel.display())));
        }
    }
    // The walk sees the binary's clap at all (a broken scanner would pass vacuously).
    assert!(in_bin > 10, "{in_bin} clap paths in the binary");
    assert!(
        bad.is_empty(),
        "the library names clap (its command-line face belongs to the binary, src/cli/): {}",
        bad.join(", ")
    );
}

#[test]
fn top_level_modules_import_each_other_in_no_cycle() {
    let edges = crate_edges(&tops());
    if let Some(cycle) = find_cycle(&edges) {
        panic!("top-level modules import each other in a cycle: {cycle}");
    }
}

#[test]
fn the_files_of_a_module_import_each_other_in_no_cycle() {
    let edges = crate_file_edges();
    // The walk sees sibling imports at all: cache models use the shared cursor.
    assert!(edges
        .iter()
        .any(|e| e.from == "cache::paged" && e.to == "cache::cursor"));
    if let Some(cycle) = find_cycle(&edges) {
        panic!("files of one module import each other in a cycle (move the shared part into one of them, or a third file): {cycle}");
    }
}

/// The scanner on a hand-made file at src/cache/anthropic.rs (module `cache::anthropic`) with
/// one reach of each shape, and the same names in places that are not imports.
#[test]
fn the_scanner_finds_each_shape_of_import_and_nothing_else() {
    let tops: BTreeSet<String> = ["cache", "scenario", "metrics", "prompt", "chart", "budget"]
        .map(String::from)
        .into();
    let text = r#"
//! Mentions crate::chart::data in a comment.
use super::common;                    // inside cache: not an edge
use crate::prompt::Request;           // line 4: prompt
use crate::{metrics::RequestRow, cache::Ttl, budget}; // line 5: metrics, budget (cache is itself)
/// Doc: [`crate::chart::x`].
pub(crate) fn f() -> String {
    let s = "crate::chart::slug";
    format!("{}", crate::scenario::ENV)  // line 9: scenario inside a macro
}
mod tests {
    use super::super::common;         // cache::common: not an edge
    use super::super::super::chart;   // line 13: climbs out of cache into chart
}
#[cfg(test)]
#[allow(unused)]
pub(crate) mod unit {
    use crate::metrics::RequestRow;   // a unit test's input: not an edge
}
fn g() { crate::cache::cursor::same_name(); } // line 20: a sibling file, not another module
"#;
    let edges = scan(text, Path::new("cache/anthropic.rs"), &tops).unwrap();
    let got: Vec<(String, usize)> = edges.iter().map(|e| (e.to.clone(), e.line)).collect();
    let want: Vec<(String, usize)> = [
        ("prompt", 4),
        ("metrics", 5),
        ("budget", 5),
        ("scenario", 9),
        ("chart", 13),
    ]
    .map(|(m, l)| (m.to_string(), l))
    .into();
    assert_eq!(got, want);
    assert!(edges.iter().all(|e| e.from == "cache"));

    // The table: cache may import prompt only, so metrics, budget, scenario and chart are named.
    let md = "| layer | modules | may import |\n|---|---|---|\n| prompt | `prompt` | none |\n| cache | `cache` | prompt |\n| top | `metrics`, `scenario`, `chart`, `budget` | prompt, cache, top |\n";
    let layers = parse_layers(md).unwrap();
    let bad = violations(&edges, &layers);
    assert_eq!(bad.len(), 4, "{bad:#?}");
    assert!(bad[0].starts_with("src/cache/anthropic.rs:5: `cache` (layer cache) imports `metrics`"));
    assert!(bad[3].contains(":13: `cache` (layer cache) imports `chart` (layer top)"));

    // Between the files of `cache`: `super::common` (line 3), `super::super::common` from the
    // inline module (line 12) and `crate::cache::cursor` (line 20); `crate::cache::Ttl` is an
    // item of cache/mod.rs, not a file.
    let files: BTreeSet<Vec<String>> = [
        ["cache", "common"],
        ["cache", "cursor"],
        ["cache", "anthropic"],
    ]
    .map(|p| p.map(String::from).to_vec())
    .into();
    let got: Vec<(String, String, usize)> =
        file_edges(text, Path::new("cache/anthropic.rs"), &files)
            .into_iter()
            .map(|e| (e.from, e.to, e.line))
            .collect();
    let want: Vec<(String, String, usize)> = [("common", 3), ("common", 12), ("cursor", 20)]
        .map(|(f, l)| ("cache::anthropic".to_string(), format!("cache::{f}"), l))
        .into();
    assert_eq!(got, want);
    // A mod.rs is the parent of its files, not a sibling: none of its paths is a file edge.
    assert!(file_edges(text, Path::new("cache/mod.rs"), &files).is_empty());

    // A cycle is named edge by edge.
    let e = |from: &str, to: &str, line| Edge {
        from: from.into(),
        to: to.into(),
        file: "src/x.rs".into(),
        line,
    };
    assert_eq!(
        find_cycle(&[e("a", "b", 1), e("b", "c", 2), e("c", "a", 3)]).as_deref(),
        Some("a -> b (src/x.rs:1), b -> c (src/x.rs:2), c -> a (src/x.rs:3)")
    );
    assert_eq!(
        find_cycle(&[e("a", "b", 1), e("a", "c", 2), e("b", "c", 3)]),
        None
    );
}
