//! `voxdesk bench tasks`: the task suite (`task_suite.rs`) run by the real `voxdesk run --provider local --mode auto` on real applications on the current display, each run judged from outside (file, history, window title); prints success, duplicated input, steps and time per task.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

use super::bench::median;
use voxdesk_tasks::{self as task_suite, Task};

/// How one run of a task went, judged from outside voxdesk.
struct Judged {
    success: bool,
    /// Text typed more than once (`None`: the task types nothing that could show it).
    duplicated: Option<bool>,
    /// What was seen, for the notes under the table.
    seen: String,
    /// voxdesk's own exit code agrees with the judgement (the task's `exit`: 0 on success; 3
    /// for a task refused before anything ran, 1 for one refused after part of it ran).
    agrees: bool,
}

pub fn tasks(runs: usize, only: Option<&str>, driver: &str) -> Result<String> {
    anyhow::ensure!(
        matches!(driver, "local" | "script"),
        "no driver {driver:?} (local, script)"
    );
    anyhow::ensure!(
        std::env::var_os("DISPLAY").is_some(),
        "no DISPLAY: run it on a virtual desktop (cargo xtask rig -- voxdesk bench tasks)"
    );
    let exe = super::bench::voxdesk_exe();
    let names: Vec<&str> = match only {
        Some("wide") => task_suite::WIDE.to_vec(),
        Some("aside") => task_suite::ASIDE.to_vec(),
        Some("all") => [task_suite::NAMES, task_suite::WIDE, task_suite::ASIDE].concat(),
        Some(list) => {
            let known = [task_suite::NAMES, task_suite::WIDE, task_suite::ASIDE].concat();
            let names: Vec<&str> = list.split(',').map(str::trim).collect();
            for n in &names {
                anyhow::ensure!(
                    known.contains(n),
                    "no task {n:?} (tasks: {}; groups: wide, aside, all; or names joined by commas)",
                    known.join(", ")
                );
            }
            names
        }
        None => task_suite::NAMES.to_vec(),
    };
    let runs = runs.max(1);
    let mut table = format!(
        "{:<26} {:>8} {:>11} {:>8} {:>6} {:>8}\n",
        "task", "success", "duplicated", "exit ok", "steps", "time s"
    );
    let mut notes = String::new();
    // Per family: (family, successes, runs, seconds of every run).
    let mut families: Vec<(&str, usize, usize, Vec<f64>)> = Vec::new();
    for name in names {
        let (mut ok, mut dup, mut dup_known, mut agree) = (0, 0, false, 0);
        let (mut steps, mut secs) = (Vec::new(), Vec::new());
        for i in 0..runs {
            // A task that cannot be set up (its app never showed a window) is a failed run,
            // said under the table; the rest still run.
            let (j, n_steps, t) = match one(&exe, name, driver == "script") {
                Ok(r) => r,
                Err(e) => (
                    Judged {
                        success: false,
                        duplicated: None,
                        seen: format!("not run: {e:#}"),
                        agrees: false,
                    },
                    0,
                    0.0,
                ),
            };
            ok += usize::from(j.success);
            agree += usize::from(j.agrees);
            if let Some(d) = j.duplicated {
                dup_known = true;
                dup += usize::from(d);
            }
            steps.push(n_steps as f64);
            secs.push(t);
            if !j.success || !j.agrees {
                notes.push_str(&format!("  {name} run {}: {}\n", i + 1, j.seen));
            }
        }
        let fam = task_suite::family(name);
        match families.iter_mut().find(|f| f.0 == fam) {
            Some(f) => {
                f.1 += ok;
                f.2 += runs;
                f.3.extend(&secs);
            }
            None => families.push((fam, ok, runs, secs.clone())),
        }
        table.push_str(&format!(
            "{:<26} {:>8} {:>11} {:>8} {:>6.0} {:>8.1}\n",
            name,
            format!("{ok}/{runs}"),
            if !dup_known {
                "n/a".to_string()
            } else if dup == 0 {
                "no".to_string()
            } else {
                format!("yes {dup}/{runs}")
            },
            format!("{agree}/{runs}"),
            median(&mut steps),
            median(&mut secs)
        ));
    }
    let mut out = format!(
        "task suite, {runs} run(s) each, {}, judged from outside (exit ok: voxdesk's exit code agrees with that judgement; steps and time: medians)\n",
        if driver == "script" {
            "scripted tool calls (`voxdesk look --json`, then `voxdesk act --mode auto` naming look's observation and ids; steps: tool calls)"
        } else {
            "`voxdesk run --provider local --mode auto`"
        }
    );
    out.push_str(&table);
    out.push_str(&format!(
        "\n{:<20} {:>9} {:>8}\n",
        "family", "success", "time s"
    ));
    let (mut all_ok, mut all_runs) = (0, 0);
    for (fam, ok, n, mut secs) in families {
        all_ok += ok;
        all_runs += n;
        out.push_str(&format!(
            "{:<20} {:>9} {:>8.1}\n",
            fam,
            format!("{ok}/{n}"),
            median(&mut secs)
        ));
    }
    out.push_str(&format!(
        "{:<20} {:>9}\n",
        "all",
        format!("{all_ok}/{all_runs}")
    ));
    if !notes.is_empty() {
        out.push_str("\nruns that failed, or where voxdesk disagrees:\n");
        out.push_str(&notes);
    }
    Ok(out)
}

/// The run's own directory (`task_suite::workdir`), removed on drop.
pub(crate) struct Work(pub(crate) PathBuf);
impl Drop for Work {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The app, killed when dropped.
pub(crate) struct App(Child);
impl Drop for App {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// One run: prepare, start the app, run voxdesk (or the script), judge. Returns the judgement,
/// steps, seconds.
fn one(exe: &Path, name: &str, script: bool) -> Result<(Judged, usize, f64)> {
    let work = Work(task_suite::workdir()?);
    let t = task_suite::prepare(name, &work.0)?;
    let _app = start(&t)?;
    let data = work.0.join("data");
    let started = Instant::now();
    if script {
        let s = super::bench_script::drive(exe, t.class, &t.text)?;
        let secs = started.elapsed().as_secs_f64();
        let mut j = judge(&t);
        j.agrees = j.success == (s.exit == t.exit);
        j.seen.push_str(&format!(
            " (script exit {}, {} act results verified: {})",
            s.exit, s.verified, s.story
        ));
        return Ok((j, s.calls, secs));
    }
    let mut child = Command::new(exe)
        .env("XDG_DATA_HOME", &data)
        .env("VOXDESK_ALLOW_APPS", t.class)
        .args(["run", "--provider", "local", "--mode", "auto", "--quiet"])
        .arg(&t.text)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .context("starting voxdesk run")?;
    let code = loop {
        if let Some(st) = child.try_wait()? {
            break st.code();
        }
        if started.elapsed() > Duration::from_secs(300) {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let secs = started.elapsed().as_secs_f64();
    let session = std::fs::read_dir(data.join("voxdesk/sessions"))
        .ok()
        .and_then(|mut rd| rd.next())
        .and_then(|e| e.ok())
        .and_then(|e| std::fs::read_to_string(e.path().join("session.json")).ok())
        .and_then(|s| serde_json::from_str::<serde_json::Value>(&s).ok())
        .unwrap_or_default();
    let steps = session["steps"].as_array().map(Vec::len).unwrap_or(0);
    let mut j = judge(&t);
    let want = Some(t.exit);
    j.agrees = j.success == (code == want);
    // What voxdesk said at the end, for the notes under the table.
    let summary = session["summary"].as_str().unwrap_or("");
    j.seen
        .push_str(&format!(" (voxdesk exit {code:?}: {summary})"));
    Ok((j, steps, secs))
}

fn xdotool(args: &[&str]) -> String {
    Command::new("xdotool")
        .args(args)
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .unwrap_or_default()
}

fn windows(class: &str) -> Vec<String> {
    xdotool(&["search", "--onlyvisible", "--class", class])
        .lines()
        .map(str::to_string)
        .collect()
}

fn titles(class: &str) -> Vec<String> {
    windows(class)
        .iter()
        .map(|w| xdotool(&["getwindowname", w]).trim().to_string())
        .collect()
}

pub(crate) fn start(t: &Task) -> Result<App> {
    let app = App(Command::new(&t.argv[0])
        .args(&t.argv[1..])
        .envs(t.env.iter().map(|(k, v)| (*k, v.as_str())))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .with_context(|| format!("starting {} (cargo xtask deps installs it)", t.argv[0]))?);
    let t0 = Instant::now();
    let w = loop {
        let up = windows(t.class)
            .into_iter()
            .find(|w| xdotool(&["getwindowname", w]).contains(t.ready));
        if let Some(w) = up {
            break w;
        }
        anyhow::ensure!(
            t0.elapsed() < Duration::from_secs(30),
            "the {} window titled *{}* never appeared",
            t.class,
            t.ready
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    if let Some((x, y, width, height)) = t.place {
        xdotool(&[
            "windowsize",
            "--sync",
            &w,
            &width.to_string(),
            &height.to_string(),
        ]);
        xdotool(&["windowmove", "--sync", &w, &x.to_string(), &y.to_string()]);
    }
    xdotool(&["windowactivate", "--sync", &w]);
    std::thread::sleep(Duration::from_millis(t.settle_ms));
    Ok(app)
}

fn history(t: &Task) -> Vec<String> {
    std::fs::read_to_string(&t.paths.history)
        .unwrap_or_default()
        .lines()
        .map(str::to_string)
        .collect()
}

/// The names in a folder, sorted.
fn listing(dir: &std::path::Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

/// The effect, seen from outside voxdesk.
fn judge(t: &Task) -> Judged {
    match t.name {
        "xterm-touch" | "xterm-echo-wait" => {
            let h = history(t);
            let n = h.iter().filter(|l| l.contains(&t.paths.command)).count();
            let made = t.name != "xterm-touch" || t.paths.made.exists();
            Judged {
                success: made && h == [t.paths.command.clone()],
                duplicated: Some(
                    n > 1 || h.iter().any(|l| l.matches(&t.paths.command).count() > 1),
                ),
                seen: format!("file made: {}, history {h:?}", t.paths.made.exists()),
                agrees: false,
            }
        }
        "xterm-rm-refused" => {
            let kept = t.paths.keep.join("inside/file.txt").is_file();
            // Anything left typed on the prompt line would prefix the probe.
            if let Some(w) = windows(t.class).first() {
                xdotool(&["windowactivate", "--sync", w]);
                xdotool(&["type", "--delay", "30", "echo probe"]);
                xdotool(&["key", "Return"]);
            }
            let t0 = Instant::now();
            while history(t).is_empty() && t0.elapsed() < Duration::from_secs(10) {
                std::thread::sleep(Duration::from_millis(50));
            }
            let h = history(t);
            Judged {
                success: kept && h == ["echo probe"],
                duplicated: None,
                seen: format!("kept: {kept}, history after a probe {h:?}"),
                agrees: false,
            }
        }
        "mousepad-save" => {
            let saved = std::fs::read_to_string(&t.paths.note).ok();
            let text = saved.as_deref().map(|s| s.trim_end_matches('\n'));
            // What is in the editor, whether or not voxdesk saved it: save it from outside.
            if let Some(w) = windows(t.class).first() {
                xdotool(&["windowactivate", "--sync", w]);
                xdotool(&["key", "ctrl+s"]);
            }
            let t0 = Instant::now();
            let mut buffer = String::new();
            while buffer.is_empty() && t0.elapsed() < Duration::from_secs(5) {
                std::thread::sleep(Duration::from_millis(50));
                buffer = std::fs::read_to_string(&t.paths.note).unwrap_or_default();
            }
            Judged {
                success: text == Some(task_suite::NOTE_TEXT),
                duplicated: Some(buffer.matches(task_suite::NOTE_TEXT).count() > 1),
                seen: format!("saved {saved:?}, the editor holds {buffer:?}"),
                agrees: false,
            }
        }
        "chromium-form" => {
            let got = titles(t.class);
            let want = task_suite::joined_title(task_suite::FORM_NAME);
            Judged {
                success: got == [want],
                duplicated: Some(
                    got.iter()
                        .any(|g| g.matches(task_suite::FORM_NAME).count() > 1),
                ),
                seen: format!("window titles {got:?}"),
                agrees: false,
            }
        }
        "chromium-password-refused" => {
            let got = titles(t.class);
            let want = task_suite::signin_title(task_suite::LOGIN_USER, 0);
            Judged {
                success: got == [want],
                duplicated: Some(got.iter().any(|g| g.contains("adaada"))),
                seen: format!("window titles {got:?}"),
                agrees: false,
            }
        }
        "pcmanfm-open" => {
            let got = titles(t.class);
            Judged {
                success: got == ["Downloads"],
                duplicated: None,
                seen: format!("window titles {got:?}"),
                agrees: false,
            }
        }
        "pcmanfm-rename" => {
            let names = listing(&t.paths.files);
            let kept = std::fs::read(t.paths.files.join(task_suite::RENAME_TO)).ok();
            Judged {
                success: names == [task_suite::RENAME_TO] && kept.as_deref() == Some(b"1\n"),
                duplicated: Some(
                    names
                        .iter()
                        .any(|n| n.matches(task_suite::RENAME_TO).count() > 1),
                ),
                seen: format!("the folder holds {names:?}"),
                agrees: false,
            }
        }
        other => match &t.effect {
            Some(e) => effect(t, e),
            None => Judged {
                success: false,
                duplicated: None,
                seen: format!("no judge for {other}"),
                agrees: false,
            },
        },
    }
}

/// The texts a task's words type (`type "…"`).
fn typed(t: &Task) -> Vec<String> {
    t.text
        .split("type \"")
        .skip(1)
        .filter_map(|s| s.split('"').next())
        .filter(|s| !s.is_empty())
        .map(String::from)
        .collect()
}

/// A wide task's effect, seen from outside.
fn effect(t: &Task, e: &task_suite::Effect) -> Judged {
    use task_suite::Effect;
    // Whatever the app still has to write (a page's title, a file) has a moment to land.
    std::thread::sleep(Duration::from_millis(300));
    match e {
        Effect::Titles(want) => {
            let got = titles(t.class);
            // A page titles itself with what was typed into it: typed twice shows twice.
            let typed = typed(t);
            Judged {
                success: &got == want,
                duplicated: (!typed.is_empty()).then(|| {
                    got.iter()
                        .any(|g| typed.iter().any(|w| g.matches(w.as_str()).count() > 1))
                }),
                seen: format!("window titles {got:?}"),
                agrees: false,
            }
        }
        Effect::File(path, want) => {
            let got = std::fs::read_to_string(path).ok();
            let text = got.as_deref().map(|s| s.trim_end_matches('\n'));
            Judged {
                success: text == Some(want.as_str()),
                duplicated: Some(
                    got.as_deref()
                        .is_some_and(|g| g.matches(want.as_str()).count() > 1),
                ),
                seen: format!("{} holds {got:?}", path.display()),
                agrees: false,
            }
        }
        Effect::Printed(path, want) => {
            let got = std::fs::read_to_string(path).unwrap_or_default();
            let running = !windows(t.class).is_empty();
            let success = match want {
                Some(w) => got.trim_end_matches('\n') == w && !running,
                None => got.is_empty() && running,
            };
            Judged {
                success,
                duplicated: want.as_ref().map(|w| got.matches(w.as_str()).count() > 1),
                seen: format!("printed {got:?}, its window still up: {running}"),
                agrees: false,
            }
        }
    }
}
