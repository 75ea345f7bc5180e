//! The invariants of ARCHITECTURE.md, checked by reading the sources' `use` lines and paths, so they cannot drift: which module owns each device crate, the layer order, the pure cores, and that the library neither prints nor reads stdin.

use std::path::{Path, PathBuf};

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
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    walk(&src, &mut files);
    files
        .into_iter()
        .map(|p| {
            let rel = p.strip_prefix(&src).unwrap().display().to_string();
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
            (rel, code)
        })
        .collect()
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
        ("pocketsphinx_sys", &["voice/sphinx.rs"]),
        ("earshot::", &["voice/listen.rs"]),
        // The daemon's server: its routes and where it is started.
        ("axum::", &["cli/serve/api.rs", "cli/serve/mod.rs"]),
    ];
    let mut bad = Vec::new();
    for (file, code) in sources() {
        for (krate, allowed) in owners {
            if uses(&code, krate) && !allowed.contains(&file.as_str()) {
                bad.push(format!("{file} uses {krate} (only {allowed:?} may)"));
            }
        }
    }
    assert!(bad.is_empty(), "{bad:#?}");
}

/// Each layer uses only the layers before it (and itself).
#[test]
fn layers_only_use_the_layers_below() {
    let order: &[&[&str]] = &[
        &["geometry", "action", "config", "keys", "private"],
        &["perception"],
        &["screen"],
        &["safety"],
        &["input"],
        &["record"],
        &["desk"],
        &["agent"],
        &["voice"],
        &["realtime"],
    ];
    let layer_of = |m: &str| order.iter().position(|l| l.contains(&m));
    let mut bad = Vec::new();
    for (file, code) in sources() {
        if file.starts_with("cli/") || file == "main.rs" || file == "lib.rs" {
            continue;
        }
        let module = file.split(['/', '.']).next().unwrap();
        let me = layer_of(module).unwrap_or_else(|| panic!("{file}: module {module} has no layer"));
        for m in order.iter().flat_map(|l| l.iter()) {
            if uses(&code, &format!("crate::{m}::")) && layer_of(m).unwrap() > me {
                bad.push(format!(
                    "{file} ({module}) uses crate::{m}, a layer above it"
                ));
            }
        }
        if uses(&code, "voxdesk::") {
            bad.push(format!("{file} names the crate from inside"));
        }
    }
    assert!(bad.is_empty(), "{bad:#?}");
}

#[test]
fn pure_cores_touch_no_files_processes_threads_or_clocks() {
    let pure = [
        "geometry.rs",
        "action.rs",
        "keys.rs",
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
        "voice/echo.rs",
        "voice/floor.rs",
        "voice/grammar.rs",
        "voice/phonemes.rs",
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
        if file.starts_with("cli/") || file == "main.rs" {
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
        let text = std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("src")
                .join(&file),
        )
        .unwrap();
        if !text.starts_with("//! ") {
            bad.push(format!("{file} does not open with a //! line"));
        }
        if !arch.contains(&format!("`src/{file}`"))
            && !arch.contains(&format!("`src/{}/`", file.split('/').next().unwrap()))
        {
            bad.push(format!(
                "ARCHITECTURE.md's code map does not name src/{file} or its folder"
            ));
        }
    }
    assert!(bad.is_empty(), "{bad:#?}");
}
