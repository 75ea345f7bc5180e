//! `voxdesk bench perception`'s accessibility part: on GTK 3, GTK 2, Qt and Chromium windows it starts itself, the tree's read time cold and after a small change, the fusion's time, and the share of targets each source gave.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

use super::bench::median;
use voxdesk_a11y::{Limits, Reader, Window};
use voxdesk_core::config::Settings;
use voxdesk_desk::eyes::{Eyes, ScreenEyes};
use voxdesk_perception::fuse;
use voxdesk_screen::capture;

const FORM: &str = r#"<!doctype html><html><head><title>Bench form</title></head>
<body style="font:18px sans-serif;margin:30px"><h1>Sign up</h1>
<p><label for=n>Full name</label> <input id=n></p><p><label for=e>Email</label> <input id=e></p>
<p><label for=p>Password</label> <input id=p type=password></p>
<p><input type=checkbox id=c><label for=c>Send me news</label></p>
<p><input type=radio name=r id=a checked><label for=a>Monthly</label> <input type=radio name=r id=b><label for=b>Weekly</label></p>
<p><select><option>One<option>Two</select> <button>Join</button></p></body></html>"#;

struct App(Child);
impl Drop for App {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn xdotool(args: &[&str]) -> bool {
    Command::new("xdotool")
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Start `argv` and focus its window (found by `class`).
fn start(argv: &[String], class: &str) -> Result<App> {
    let app = App(Command::new(&argv[0])
        .args(&argv[1..])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .with_context(|| format!("starting {}", argv[0]))?);
    let t = Instant::now();
    while !xdotool(&["search", "--class", class, "windowactivate", "--sync"]) {
        anyhow::ensure!(t.elapsed() < Duration::from_secs(20), "no {class} window");
        std::thread::sleep(Duration::from_millis(100));
    }
    std::thread::sleep(Duration::from_millis(1500));
    Ok(app)
}

fn focused() -> Option<Window> {
    let w = capture::focused_window().ok().flatten()?;
    Some(Window {
        pid: w.pid,
        title: w.title,
        rect: w
            .rect
            .map(|(x, y, ww, hh)| voxdesk_core::geometry::Rect::new(x, y, ww as i32, hh as i32)),
    })
}

pub fn a11y(runs: usize) -> Result<String> {
    let mut reader = match Reader::open(Limits::default()) {
        Ok(r) => r,
        Err(e) => return Ok(format!("\naccessibility: n/a ({e})\n")),
    };
    let dir = tempfile::tempdir()?;
    let home = dir.path().join("home");
    std::fs::create_dir_all(home.join(".config"))?;
    let files = dir.path().join("files");
    std::fs::create_dir_all(&files)?;
    for i in 0..12 {
        std::fs::write(files.join(format!("file-{i:02}.txt")), "x")?;
    }
    let page = dir.path().join("form.html");
    std::fs::write(&page, FORM)?;
    let env = |argv: &[&str]| -> Vec<String> {
        let mut v = vec![
            "env".to_string(),
            format!("HOME={}", home.display()),
            "GSETTINGS_BACKEND=memory".into(),
        ];
        v.extend(argv.iter().map(|s| s.to_string()));
        v
    };
    // Each with the keys that put the keyboard in a text field (the small change types there).
    let apps: Vec<(&str, &str, &[&str], Vec<String>)> = vec![
        ("mousepad (GTK 3)", "Mousepad", &[], env(&["mousepad"])),
        (
            "pcmanfm (GTK 2)",
            "Pcmanfm",
            &["ctrl+l", "End"],
            env(&["pcmanfm", files.to_str().unwrap_or("/tmp")]),
        ),
        ("featherpad (Qt 5)", "FeatherPad", &[], env(&["featherpad"])),
        (
            "chromium form",
            "Chromium",
            &["Tab"],
            env(&[
                "chromium",
                "--no-sandbox",
                "--disable-gpu",
                "--no-first-run",
                "--force-renderer-accessibility",
                &format!("--user-data-dir={}", dir.path().join("profile").display()),
                "--window-size=900,700",
                &format!("--app=file://{}", page.display()),
            ]),
        ),
    ];
    let mut eyes = ScreenEyes::open(&Settings::default())?;
    let mut out = String::from(
        "\naccessibility tree (targets: ≤ 50 ms added to a cold observation, ≤ 10 ms after a small change)\n",
    );
    out.push_str(&format!(
        "  {:<20} {:>6} {:>10} {:>12} {:>8} {:>22}\n",
        "app", "nodes", "cold ms", "changed ms", "fuse ms", "targets ocr/ax/ax+ocr"
    ));
    let (mut all_cold, mut all_changed) = (Vec::new(), Vec::new());
    for (name, class, keys, argv) in apps {
        let _app = match start(&argv, class) {
            Ok(a) => a,
            Err(e) => {
                out.push_str(&format!("  {name:<20} n/a ({e})\n"));
                continue;
            }
        };
        for k in keys {
            xdotool(&["key", k]);
        }
        std::thread::sleep(Duration::from_millis(300));
        let Some(win) = focused() else {
            out.push_str(&format!("  {name:<20} n/a (no focused window)\n"));
            continue;
        };
        let (mut cold, mut changed) = (Vec::new(), Vec::new());
        let mut nodes = 0;
        for i in 0..runs {
            reader.forget();
            let t = Instant::now();
            let tree = reader.tree(&win)?;
            cold.push(t.elapsed().as_secs_f64() * 1000.0);
            nodes = tree.map(|t| t.nodes.len()).unwrap_or(0);
            // A small change: one character typed into the focused field. (The first one of an
            // unsaved document also marks it modified, which replaces its tab's label: a real
            // change to the tree, read again; the median is the typing after it.)
            let _ = i;
            xdotool(&["key", "a"]);
            std::thread::sleep(Duration::from_millis(150));
            let t = Instant::now();
            reader.tree(&win)?;
            changed.push(t.elapsed().as_secs_f64() * 1000.0);
        }
        // One fused observation: the share of targets each source gave, and the fusion's time.
        let frame = eyes.capture()?;
        let fw = eyes.focused();
        let p = eyes.perceive(&frame, true, fw.as_ref())?;
        let count = |s: &str| p.targets.iter().filter(|t| t.source() == s).count();
        let labels: Vec<voxdesk_perception::label::Label> = p
            .targets
            .iter()
            .filter(|t| t.ax.is_none())
            .map(|t| voxdesk_perception::label::Label {
                text: t.text.clone(),
                rect: t.rect,
                conf: t.conf,
            })
            .collect();
        let mut fuse_ms = Vec::new();
        if let Some(tree) = &p.tree {
            for _ in 0..runs {
                let t = Instant::now();
                let _ = fuse::fuse(
                    &labels,
                    &tree.nodes,
                    voxdesk_core::geometry::Rect::new(
                        0,
                        0,
                        frame.size().0 as i32,
                        frame.size().1 as i32,
                    ),
                );
                fuse_ms.push(t.elapsed().as_secs_f64() * 1000.0);
            }
        }
        out.push_str(&format!(
            "  {name:<20} {nodes:>6} {:>10.1} {:>12.1} {:>8.2} {:>10}/{}/{}\n",
            median(&mut cold.clone()),
            median(&mut changed.clone()),
            if fuse_ms.is_empty() {
                0.0
            } else {
                median(&mut fuse_ms)
            },
            count("ocr"),
            count("ax"),
            count("ax+ocr"),
        ));
        all_cold.extend(cold);
        all_changed.extend(changed);
    }
    if !all_cold.is_empty() {
        out.push_str(&format!(
            "  all apps: cold median {:.1} ms, after a small change median {:.1} ms ({} runs each)\n",
            median(&mut all_cold),
            median(&mut all_changed),
            all_cold.len()
        ));
    }
    Ok(out)
}
