//! The invariants of ARCHITECTURE.md, checked by reading the sources' `use` lines and paths, so they cannot drift: which module owns each device crate, the layer order, the pure cores, and that the library neither prints nor reads stdin.

use std::path::{Path, PathBuf};

/// Every source file of the workspace's crates, by its logical name: `perception/lines.rs` for
/// `crates/perception/src/lines.rs`, `core/geometry.rs`, `cli/run.rs` and `main.rs` for the
/// binary, `dev/bench/main.rs` for a dev crate.
fn sources() -> Vec<(String, String)> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for e in std::fs::read_dir(dir).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(&p, out);
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push(p);
            }
        }
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    walk(&root.join("src"), &mut files);
    walk(&root.join("crates"), &mut files);
    walk(&root.join("dev"), &mut files);
    files
        .into_iter()
        .filter(|p| !p.components().any(|c| c.as_os_str() == "tests"))
        .map(|p| {
            let rel = p.strip_prefix(root).unwrap().display().to_string();
            let name = logical(&rel);
            // Code only: comments may name anything.
            let code: String = std::fs::read_to_string(&p)
                .unwrap()
                .lines()
                .map(|l| match l.find("//") {
                    Some(i) if !l[..i].contains('"') => &l[..i],
                    _ => l,
                })
                .collect::<Vec<_>>()
                .join("\n");
            (name, code)
        })
        .collect()
}

/// `crates/X/src/F` → `X/F`, `dev/X/src/F` → `dev/X/F`, `src/F` → `F`.
fn logical(rel: &str) -> String {
    if let Some(r) = rel.strip_prefix("crates/") {
        r.replacen("/src/", "/", 1)
    } else if rel.starts_with("dev/") {
        rel.replacen("/src/", "/", 1)
    } else {
        rel.strip_prefix("src/").unwrap_or(rel).to_string()
    }
}

/// The file a logical name stands for.
fn real(name: &str) -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let (head, rest) = name.split_once('/').unwrap_or(("", name));
    if head == "dev" {
        let (k, f) = rest.split_once('/').unwrap();
        root.join("dev").join(k).join("src").join(f)
    } else if !head.is_empty() && root.join("crates").join(head).is_dir() {
        root.join("crates").join(head).join("src").join(rest)
    } else {
        root.join("src").join(name)
    }
}

/// The workspace's product crates, lowest first: each may depend only on those before it.
const LAYERS: &[&str] = &[
    "voxdesk-core",
    "voxdesk-onnx",
    "voxdesk-moonshine",
    "voxdesk-ppocr",
    "voxdesk-perception",
    "voxdesk-a11y",
    "voxdesk-screen",
    "voxdesk-safety",
    "voxdesk-input",
    "voxdesk-record",
    "voxdesk-desk",
    "voxdesk-agent",
    "voxdesk-voice",
    "voxdesk-realtime",
    "voxdesk-text",
    "voxdesk",
];

/// The dev-only crates: never a dependency of a product crate.
const DEV: &[&str] = &["voxdesk-tasks", "voxdesk-eval", "voxdesk-bench"];

/// A manifest's `voxdesk-*` names in one table (`[dependencies]`, `[dev-dependencies]`).
fn voxdesk_deps(manifest: &str, table: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut inside = false;
    for l in manifest.lines() {
        let l = l.trim();
        if l.starts_with('[') {
            inside = l == format!("[{table}]");
            continue;
        }
        if inside && l.starts_with("voxdesk-") {
            out.push(l.split(['.', ' ', '=']).next().unwrap().to_string());
        }
    }
    out
}

fn manifests() -> Vec<(String, String)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut out = vec![(
        "voxdesk".to_string(),
        std::fs::read_to_string(root.join("Cargo.toml")).unwrap(),
    )];
    for dir in ["crates", "dev"] {
        for e in std::fs::read_dir(root.join(dir)).unwrap().flatten() {
            let m = std::fs::read_to_string(e.path().join("Cargo.toml")).unwrap();
            let name = m
                .lines()
                .find_map(|l| l.strip_prefix("name = "))
                .unwrap()
                .trim_matches('"')
                .to_string();
            out.push((name, m));
        }
    }
    out
}

/// Cargo refuses a `use` of a crate that is not a dependency; this holds the dependencies to
/// the layer order (an upward dependency would be a cycle or a layer crossed) and keeps the
/// dev crates (benches, the task suite, evaluation) out of every product crate.
#[test]
fn crates_depend_only_on_the_layers_below_and_never_on_dev_crates() {
    let mut bad = Vec::new();
    let ms = manifests();
    for (name, m) in &ms {
        let me = LAYERS.iter().position(|l| l == name);
        if me.is_none() && !DEV.contains(&name.as_str()) {
            bad.push(format!("{name} is in no layer and not a dev crate"));
        }
        for d in voxdesk_deps(m, "dependencies") {
            match (me, LAYERS.iter().position(|l| *l == d)) {
                (Some(me), Some(it)) if it >= me => {
                    bad.push(format!("{name} depends on {d}, a layer at or above it"))
                }
                (Some(_), None) => bad.push(format!("{name} (product) depends on {d}")),
                _ => {}
            }
        }
    }
    assert_eq!(ms.len(), LAYERS.len() + DEV.len(), "one manifest per crate");
    assert!(bad.is_empty(), "{bad:#?}");
}

/// Within a crate, the files' uses form no cycle (the crate root, which declares them all,
/// aside; tests aside): a stage that needs a type from the one after it has it moved down
/// (perception's `Label`), so each file can be read knowing only those it uses.
#[test]
fn files_within_a_crate_use_each_other_without_cycles() {
    use std::collections::{BTreeMap, BTreeSet};
    let mut crates: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
    for (file, code) in sources() {
        let (krate, rest) = match file.strip_prefix("dev/") {
            Some(r) => r.split_once('/').unwrap(),
            None => file.split_once('/').unwrap_or(("voxdesk", file.as_str())),
        };
        let (krate, rest) = if file.starts_with("cli/") || !file.contains('/') {
            ("voxdesk", file.as_str())
        } else {
            (krate, rest)
        };
        let module = rest.trim_end_matches(".rs").replace("/mod", "");
        if ["lib", "main"].contains(&module.as_str()) {
            continue;
        }
        // Code only, tests aside.
        let code = code
            .split("#[cfg(test)]")
            .next()
            .unwrap_or_default()
            .to_string();
        crates
            .entry(krate.to_string())
            .or_default()
            .insert(module, code);
    }
    let mut bad = Vec::new();
    for (krate, files) in &crates {
        let name = |m: &str| m.rsplit('/').next().unwrap().to_string();
        let edges: BTreeMap<&String, BTreeSet<&String>> = files
            .iter()
            .map(|(m, code)| {
                let to = files
                    .keys()
                    .filter(|o| *o != m)
                    .filter(|o| {
                        let n = name(o);
                        uses(code, &format!("super::{n}"))
                            || uses(code, &format!("crate::{n}::"))
                            || uses(code, &format!("crate::{n};"))
                            || uses(code, &format!("crate::cli::{n}"))
                    })
                    .collect();
                (m, to)
            })
            .collect();
        // Depth-first search for a path back to the start.
        for start in files.keys() {
            let mut stack = vec![(start, vec![start.clone()])];
            let mut seen = BTreeSet::new();
            while let Some((at, path)) = stack.pop() {
                for next in &edges[at] {
                    if *next == start {
                        bad.push(format!("{krate}: {} → {start}", path.join(" → ")));
                    } else if seen.insert(*next) {
                        let mut p = path.clone();
                        p.push((*next).clone());
                        stack.push((next, p));
                    }
                }
            }
        }
    }
    bad.sort();
    bad.dedup();
    assert!(bad.is_empty(), "{bad:#?}");
}

/// A yes is made only from the person's answer: `Yes::answering` is called by `confirm::ask`
/// and nowhere else (the compiler keeps every other crate out; this keeps the safety crate's
/// other files out).
#[test]
fn only_ask_makes_a_yes() {
    let makers: Vec<String> = sources()
        .into_iter()
        .filter(|(_, code)| {
            let code = code.split("#[cfg(test)]").next().unwrap_or_default();
            uses(code, "Yes::answering(")
        })
        .map(|(f, _)| f)
        .collect();
    assert_eq!(makers, ["safety/confirm.rs"]);
}

/// `anyhow` is the binaries' (and dev tools'): every library crate says what failed with an
/// error type of its own.
#[test]
fn anyhow_only_in_the_binaries() {
    let mut bad = Vec::new();
    for (name, m) in manifests() {
        let binary = name == "voxdesk" || DEV.contains(&name.as_str());
        let lib_deps = m
            .split("[dev-dependencies]")
            .next()
            .unwrap_or_default()
            .to_string();
        if !binary && lib_deps.lines().any(|l| l.trim().starts_with("anyhow")) {
            bad.push(name);
        }
    }
    assert!(
        bad.is_empty(),
        "library crates depending on anyhow: {bad:?}"
    );
}

/// Settings come only through `config`: the binary reads the environment once (`config::load`
/// with its `ENV` table, each variable shown by `voxdesk config`; a provider's key and URL
/// through the reader it hands `launch::spec`). A library file reads only the platform's own
/// variables, where the X and runtime-dir code needs them (DISPLAY, WAYLAND_DISPLAY,
/// XDG_SESSION_TYPE, XDG_RUNTIME_DIR, TESSDATA_PREFIX).
#[test]
fn the_library_reads_the_environment_only_for_the_platform() {
    let readers = [
        "core/private.rs",
        "desk/handoff.rs",
        "desk/lib.rs",
        "perception/engine.rs",
        "screen/capture.rs",
        "screen/desktop.rs",
    ];
    let mut bad = Vec::new();
    for (file, code) in sources() {
        let library = !(file.starts_with("cli/") || file == "main.rs" || file.starts_with("dev/"));
        if library && uses(&code, "env::var") && !readers.contains(&file.as_str()) {
            bad.push(file);
        }
    }
    assert!(
        bad.is_empty(),
        "library files reading the environment: {bad:#?}"
    );
}

/// No benchmark or harness in the product: the binary's sources hold none, and `voxdesk bench`
/// runs the separate `voxdesk-bench` program.
#[test]
fn no_bench_or_test_harness_ships_in_the_product() {
    let mut bad = Vec::new();
    for (file, code) in sources() {
        if file.starts_with("dev/") {
            continue;
        }
        let base = file.rsplit('/').next().unwrap();
        if base.starts_with("bench") || base.contains("task_suite") || base == "eval.rs" {
            bad.push(format!(
                "{file} is a benchmark or harness in a product crate"
            ));
        }
        for p in ["Loopback", "include!(", "#[path"] {
            if uses(&code, p) {
                bad.push(format!("{file} uses {p}"));
            }
        }
    }
    assert!(bad.is_empty(), "{bad:#?}");
}

fn uses(code: &str, path: &str) -> bool {
    code.match_indices(path).any(|(i, _)| {
        code[..i]
            .chars()
            .next_back()
            .is_none_or(|c| !c.is_alphanumeric() && c != '_')
    })
}

#[test]
fn each_device_crate_has_one_owner() {
    let owners: &[(&str, &[&str])] = &[
        ("enigo::", &["input/actuator.rs"]),
        ("device_query::", &[]),
        ("rodio::", &["voice/narrate.rs"]),
        // The output (through rodio) and the input: one owner each.
        ("cpal::", &["voice/narrate.rs", "voice/mic.rs"]),
        ("xcap::", &["screen/capture.rs"]),
        (
            "x11rb::",
            &["screen/capture.rs", "screen/desktop.rs", "input/stop.rs"],
        ),
        ("leptess::", &["perception/engine.rs"]),
        ("signal_hook::", &["cli/mod.rs"]),
        ("tokio_tungstenite::", &["realtime/transport.rs"]),
        // HTTP to the text models (and the daemon's client).
        (
            "reqwest::",
            &["text/http.rs", "cli/serve/client.rs", "core/private.rs"],
        ),
        ("pocketsphinx_sys", &["voice/sphinx.rs"]),
        ("earshot::", &["voice/listen.rs"]),
        // The echo canceller, on the mic's thread.
        ("sonora::", &["voice/aec.rs"]),
        // The accessibility bus: one crate of its own (a reader, its walk, its event watcher).
        ("zbus::", &["a11y/lib.rs", "a11y/walk.rs", "a11y/events.rs"]),
        // ONNX Runtime: the runtime crate, and the model on it.
        (
            "ort::",
            &["onnx/lib.rs", "moonshine/lib.rs", "ppocr/lib.rs"],
        ),
        // The daemon's server: its routes and where it is started.
        ("axum::", &["cli/serve/api.rs", "cli/serve/mod.rs"]),
    ];
    let mut bad = Vec::new();
    for (file, code) in sources() {
        if file.starts_with("dev/") {
            continue; // dev tools (the bench's loopback server) are not the product
        }
        for (krate, allowed) in owners {
            if uses(&code, krate) && !allowed.contains(&file.as_str()) {
                bad.push(format!("{file} uses {krate} (only {allowed:?} may)"));
            }
        }
    }
    assert!(bad.is_empty(), "{bad:#?}");
}

#[test]
fn pure_cores_touch_no_files_processes_threads_or_clocks() {
    let pure = [
        "core/geometry.rs",
        "core/action.rs",
        "core/keys.rs",
        "safety/rails.rs",
        "safety/terminal.rs",
        "safety/phrases.rs",
        "agent/policy.rs",
        "desk/verify.rs",
        "desk/packet.rs",
        "screen/text.rs",
        "perception/lines.rs",
        "perception/consensus.rs",
        "perception/mono.rs",
        "perception/tiles.rs",
        "perception/tracker.rs",
        "realtime/gemini.rs",
        "realtime/openai.rs",
        "realtime/turns.rs",
        "realtime/wire.rs",
        "realtime/endpoint.rs",
        "text/convo.rs",
        "text/openai.rs",
        "voice/echo.rs",
        "voice/floor.rs",
        "voice/grammar.rs",
        "voice/phonemes.rs",
        "voice/sounds.rs",
    ];
    let impure = [
        "std::fs",
        "std::process",
        "std::thread",
        "std::net",
        "Instant::now",
        "SystemTime",
    ];
    let mut bad = Vec::new();
    for (file, code) in sources() {
        if pure.contains(&file.as_str()) {
            for p in impure {
                if uses(&code, p) {
                    bad.push(format!("{file} uses {p}"));
                }
            }
        }
    }
    assert!(bad.is_empty(), "{bad:#?}");
}

#[test]
fn the_library_neither_prints_nor_reads_stdin() {
    let mut bad = Vec::new();
    for (file, code) in sources() {
        if file.starts_with("cli/") || file == "main.rs" || file.starts_with("dev/") {
            continue;
        }
        for p in [
            "println!",
            "print!",
            "eprintln!",
            "eprint!",
            "stdin()",
            "dbg!",
        ] {
            if uses(&code, p) {
                bad.push(format!("{file} uses {p}"));
            }
        }
    }
    assert!(bad.is_empty(), "{bad:#?}");
}

#[test]
fn every_file_says_its_one_job_and_the_code_map_names_every_module() {
    let arch =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("ARCHITECTURE.md"))
            .unwrap();
    let mut bad = Vec::new();
    for (file, _) in sources() {
        let text = std::fs::read_to_string(real(&file)).unwrap();
        if !text.starts_with("//! ") {
            bad.push(format!("{file} does not open with a //! line"));
        }
        let path = real(&file)
            .strip_prefix(env!("CARGO_MANIFEST_DIR"))
            .unwrap()
            .display()
            .to_string();
        let path = path.trim_start_matches('/');
        let folder = &path[..path.rfind('/').map_or(0, |i| i + 1)];
        if !arch.contains(&format!("`{path}`")) && !arch.contains(&format!("`{folder}`")) {
            bad.push(format!(
                "ARCHITECTURE.md's code map does not name {path} or its folder {folder}"
            ));
        }
    }
    assert!(bad.is_empty(), "{bad:#?}");
}
