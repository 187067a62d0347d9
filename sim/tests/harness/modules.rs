//! Dependencies in the sim crate run one way (ADR 0009): no module cycles.
//!
//! Reads `sim/src` and builds the graph of `crate::…` and `super::…` paths
//! between its modules (code only: comments, doc links and `#[cfg(test)]`
//! modules are left out). Then, for every module, the graph among its
//! children — an edge `a → b` when anything inside `a` names anything
//! inside `b` — must have no cycle. A parent and its own child may name
//! each other (that is what `mod.rs` and `super::` are for); siblings may
//! not, in both directions.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// A module's path below the crate root (`["checker", "order"]`).
type Module = Vec<String>;

/// `path`'s modules and the modules each names, with one file per edge as
/// evidence.
fn module_graph(src: &Path) -> BTreeMap<Module, BTreeMap<Module, String>> {
    let mut files = Vec::new();
    collect(src, src, &mut files);
    let known: BTreeSet<Module> = files.iter().map(|(m, _, _)| m.clone()).collect();
    let mut graph = BTreeMap::new();
    for (module, file, text) in &files {
        let edges: &mut BTreeMap<Module, String> = graph.entry(module.clone()).or_default();
        for path in named_paths(module, &code_only(text)) {
            // The longest prefix that is a module: `crate::a::b::Item` → a::b.
            let target = (0..=path.len()).rev().map(|n| path[..n].to_vec()).find(|p| known.contains(p));
            if let Some(t) = target.filter(|t| t != module) {
                edges.entry(t).or_insert_with(|| file.clone());
            }
        }
    }
    graph
}

/// Every `.rs` file under `dir` as (module path, file name, text). `main.rs`
/// is another crate; a file named `tests.rs` is a test module.
fn collect(root: &Path, dir: &Path, out: &mut Vec<(Module, String, String)>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir).expect("sim/src is readable").flatten().collect();
    entries.sort_by_key(|e| e.path());
    for entry in entries {
        let path = entry.path();
        if path.is_dir() {
            collect(root, &path, out);
            continue;
        }
        let rel = path.strip_prefix(root).expect("under the root").with_extension("");
        let mut module: Module = rel.iter().map(|c| c.to_string_lossy().into_owned()).collect();
        if path.extension().is_none_or(|e| e != "rs") || rel == Path::new("main") {
            continue;
        }
        if module.last().is_some_and(|l| l == "tests") {
            continue;
        }
        if module.last().is_some_and(|l| l == "mod" || l == "lib") {
            module.pop();
        }
        let text = std::fs::read_to_string(&path).expect("a source file is readable");
        out.push((module, rel.display().to_string(), text));
    }
}

/// `text` without comments and without `#[cfg(test)]` modules.
fn code_only(text: &str) -> String {
    let mut out = String::new();
    let mut skip_depth: Option<i32> = None;
    let mut depth = 0i32;
    let mut test_attr = false;
    for line in text.lines() {
        let code = line.split("//").next().unwrap_or("");
        let trimmed = code.trim();
        if trimmed == "#[cfg(test)]" {
            test_attr = true;
            continue;
        }
        if test_attr && trimmed.starts_with("mod ") && trimmed.ends_with('{') && skip_depth.is_none() {
            skip_depth = Some(depth);
        }
        test_attr = false;
        depth += code.matches('{').count() as i32 - code.matches('}').count() as i32;
        match skip_depth {
            Some(d) if depth <= d => skip_depth = None,
            Some(_) => {}
            None => {
                out.push_str(code);
                out.push('\n');
            }
        }
    }
    out
}

/// Every path `code` names through `crate::` or `super::`, resolved from
/// `module`, with `use` trees (`crate::{a::X, b::{Y, Z}}`) expanded.
fn named_paths(module: &Module, code: &str) -> Vec<Module> {
    let mut paths = Vec::new();
    let bytes = code.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let at_word_start =
            i == 0 || !(bytes[i - 1].is_ascii_alphanumeric() || bytes[i - 1] == b'_' || bytes[i - 1] == b':');
        let base = if at_word_start && bytes[i..].starts_with(b"crate::") {
            i += "crate".len();
            Some(Vec::new())
        } else if at_word_start && bytes[i..].starts_with(b"super::") {
            let mut base = module.clone();
            while bytes[i..].starts_with(b"super::") {
                base.pop();
                i += "super::".len();
            }
            i -= "::".len(); // the tree starts at the last `::`
            Some(base)
        } else {
            None
        };
        match base {
            Some(base) => i = tree(code, i, base, &mut paths),
            None => i += 1,
        }
    }
    paths
}

/// Reads the use tree at `code[i..]` (`::a::b`, `::{…}`, or a name inside
/// braces) below `prefix`; returns where it ends.
fn tree(code: &str, mut i: usize, mut prefix: Module, out: &mut Vec<Module>) -> usize {
    let bytes = code.as_bytes();
    loop {
        let start = i;
        while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_') {
            i += 1;
        }
        if i > start {
            prefix.push(code[start..i].to_string());
        }
        if bytes[i..].starts_with(b"::{") {
            i += 3;
            loop {
                while i < bytes.len() && (bytes[i].is_ascii_whitespace() || bytes[i] == b',') {
                    i += 1;
                }
                if i >= bytes.len() || bytes[i] == b'}' {
                    out.push(prefix);
                    return i + 1;
                }
                i = tree(code, i, prefix.clone(), out);
            }
        } else if bytes[i..].starts_with(b"::") {
            i += 2;
        } else {
            out.push(prefix);
            return i;
        }
    }
}

/// For every module, its children's graph; every cycle found, as a list of
/// `a → b (file)` steps.
fn cycles(graph: &BTreeMap<Module, BTreeMap<Module, String>>) -> Vec<String> {
    // Project each edge onto the children of the two ends' common ancestor.
    let mut levels: BTreeMap<Module, BTreeMap<String, BTreeMap<String, String>>> = BTreeMap::new();
    for (from, targets) in graph {
        for (to, file) in targets {
            let common = from.iter().zip(to).take_while(|(a, b)| a == b).count();
            if common == from.len() || common == to.len() {
                continue; // a module and its ancestor
            }
            let level = levels.entry(from[..common].to_vec()).or_default();
            level.entry(from[common].clone()).or_default().entry(to[common].clone()).or_insert_with(|| file.clone());
        }
    }
    let mut found = Vec::new();
    for (parent, edges) in &levels {
        for cycle in cycles_in(edges) {
            let steps: Vec<String> =
                cycle.windows(2).map(|w| format!("{} → {} (in {})", w[0], w[1], edges[&w[0]][&w[1]])).collect();
            found.push(format!("under `crate::{}`: {}", parent.join("::"), steps.join(", ")));
        }
    }
    found
}

/// One cycle per strongly connected group of `edges` (a depth-first search
/// that reports the first back edge it meets in each).
fn cycles_in(edges: &BTreeMap<String, BTreeMap<String, String>>) -> Vec<Vec<String>> {
    fn visit(
        node: &str,
        edges: &BTreeMap<String, BTreeMap<String, String>>,
        stack: &mut Vec<String>,
        done: &mut BTreeSet<String>,
        out: &mut Vec<Vec<String>>,
    ) {
        if done.contains(node) {
            return;
        }
        if let Some(at) = stack.iter().position(|n| n == node) {
            let mut cycle = stack[at..].to_vec();
            cycle.push(node.to_string());
            out.push(cycle);
            return;
        }
        stack.push(node.to_string());
        for next in edges.get(node).into_iter().flat_map(|t| t.keys()) {
            visit(next, edges, stack, done, out);
        }
        stack.pop();
        done.insert(node.to_string());
    }
    let mut out = Vec::new();
    let mut done = BTreeSet::new();
    for node in edges.keys() {
        visit(node, edges, &mut Vec::new(), &mut done, &mut out);
    }
    out
}

#[test]
fn the_sim_crate_has_no_module_cycles() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let graph = module_graph(&src);
    // The reader must see the crate: dozens of modules and their edges.
    assert!(graph.len() > 40, "only {} modules read from {}", graph.len(), src.display());
    assert!(graph.values().map(BTreeMap::len).sum::<usize>() > 100, "too few edges: the reader is broken");
    let found = cycles(&graph);
    assert!(found.is_empty(), "module cycles (ADR 0009: dependencies run one way):\n{}", found.join("\n"));
}

#[test]
fn the_cycle_check_finds_a_planted_cycle() {
    let dir = std::env::temp_dir().join(format!("rp-modules-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("b")).unwrap();
    std::fs::write(dir.join("lib.rs"), "mod a;\nmod b;\n").unwrap();
    std::fs::write(dir.join("a.rs"), "// crate::b is only a comment here\nuse crate::{b::inner::X, c};\n").unwrap();
    std::fs::write(dir.join("b/mod.rs"), "mod inner;\n#[cfg(test)]\nmod tests {\n    use crate::a;\n}\n").unwrap();
    std::fs::write(dir.join("b/inner.rs"), "pub struct X;\nfn f() { super::super::a::g(); }\n").unwrap();
    let graph = module_graph(&dir);
    let found = cycles(&graph);
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].contains("a → b") && found[0].contains("b → a (in b/inner)"), "{found:?}");
}
