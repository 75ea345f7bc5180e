//! `cargo xtask corpus`: renders the OCR evaluation corpus (tests/fixtures/corpus: every page template light and dark at 1x and 2x) into target/corpus, PNG and ground truth per image plus an index of template, family, split, theme and scale.

use std::collections::hash_map::DefaultHasher;
use std::collections::{BTreeMap, BTreeSet};
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use anyhow::{bail, Context, Result};
use serde_json::{json, Value};

use super::{ensure_packages, render_url, root, tempfile_dir, FIXTURE_PKGS};

const THEMES: [&str; 2] = ["light", "dark"];
const SCALES: [u32; 2] = [1, 2];
const SPLITS: [&str; 3] = ["train", "dev", "test"];
/// Chromium processes at once (the machine has two cores).
const WORKERS: usize = 2;

struct Template {
    name: String,
    family: String,
    split: String,
}

/// One image: a template in one theme at one scale.
struct Image<'a> {
    template: &'a Template,
    theme: &'static str,
    scale: u32,
}

impl Image<'_> {
    fn name(&self) -> String {
        format!("{}-{}-{}x", self.template.name, self.theme, self.scale)
    }
}

pub fn corpus(args: &[String]) -> Result<()> {
    let (mut only, mut split) = (None, None);
    let mut args = args.iter();
    while let Some(a) = args.next() {
        match a.as_str() {
            "--only" => only = Some(args.next().context("--only needs NAME[,NAME]")?.clone()),
            "--split" => split = Some(args.next().context("--split needs train|dev|test")?.clone()),
            _ => bail!("corpus: unknown argument {a} (usage: corpus [--only NAME[,NAME]] [--split train|dev|test])"),
        }
    }
    if let Some(s) = &split {
        if !SPLITS.contains(&s.as_str()) {
            bail!("--split {s}: not one of train, dev, test");
        }
    }
    let dir = root().join("tests/fixtures/corpus");
    let templates = templates(&dir)?;
    let wanted: Option<BTreeSet<&str>> = only.as_deref().map(|o| o.split(',').collect());
    if let Some(w) = &wanted {
        for n in w {
            if !templates.iter().any(|t| t.name == *n) {
                bail!("--only {n}: no such template in tests/fixtures/corpus/splits.json");
            }
        }
    }
    let chosen: Vec<&Template> = templates
        .iter()
        .filter(|t| {
            wanted
                .as_ref()
                .map_or(true, |w| w.contains(t.name.as_str()))
        })
        .filter(|t| split.as_ref().map_or(true, |s| &t.split == s))
        .collect();

    ensure_packages(FIXTURE_PKGS)?;
    let out = root().join("target/corpus");
    std::fs::create_dir_all(&out)?;
    let hash = sources_hash(&dir)?;
    let stamps_path = out.join("stamps");
    let stamps = Mutex::new(read_stamps(&stamps_path));
    let fresh = |name: &str, stamps: &BTreeMap<String, String>| {
        stamps.get(name) == Some(&hash)
            && out.join(format!("{name}.png")).exists()
            && out.join(format!("{name}.json")).exists()
    };
    let mut jobs = Vec::new();
    for t in &chosen {
        for theme in THEMES {
            for scale in SCALES {
                jobs.push(Image {
                    template: t,
                    theme,
                    scale,
                });
            }
        }
    }
    let total = jobs.len();
    jobs.retain(|i| !fresh(&i.name(), &stamps.lock().unwrap()));
    eprintln!(
        "xtask: corpus: {} templates, {total} images, {} to render ({} up to date)",
        chosen.len(),
        jobs.len(),
        total - jobs.len()
    );
    let page = dir.join("corpus.html");
    let queue = Mutex::new(jobs);
    let failures = Mutex::new(Vec::<String>::new());
    let warnings = Mutex::new(0usize);
    let started = std::time::Instant::now();
    std::thread::scope(|s| {
        for _ in 0..WORKERS {
            s.spawn(|| {
                let profile = match tempfile_dir::Dir::new("voxdesk-corpus") {
                    Ok(p) => p,
                    Err(e) => return failures.lock().unwrap().push(format!("profile: {e}")),
                };
                loop {
                    let Some(img) = queue.lock().unwrap().pop() else {
                        break;
                    };
                    let name = img.name();
                    match render_image(&page, &img, &out.join(&name), profile.path()) {
                        Ok(problems) => {
                            for p in &problems {
                                eprintln!("xtask: corpus: {name}: {p}");
                            }
                            *warnings.lock().unwrap() += problems.len();
                            let mut st = stamps.lock().unwrap();
                            st.insert(name, hash.clone());
                            if let Err(e) = write_stamps(&stamps_path, &st) {
                                failures.lock().unwrap().push(format!("stamps: {e}"));
                            }
                        }
                        Err(e) => failures.lock().unwrap().push(format!("{name}: {e:#}")),
                    }
                }
            });
        }
    });
    let stamps = stamps.into_inner().unwrap();
    write_index(&out, &templates, &|n| fresh(n, &stamps))?;
    eprintln!(
        "xtask: corpus: done in {:.0} s, {} layout problems; index {}",
        started.elapsed().as_secs_f64(),
        warnings.into_inner().unwrap(),
        out.join("index.json").display()
    );
    let failures = failures.into_inner().unwrap();
    if !failures.is_empty() {
        bail!(
            "{} images failed:\n  {}",
            failures.len(),
            failures.join("\n  ")
        );
    }
    Ok(())
}

/// Renders one image and checks its ground truth: present, the page's template, at least one
/// label. Returns the layout problems the page found in itself (text clipped, overlapping, ...).
fn render_image(page: &Path, img: &Image, out: &Path, profile: &Path) -> Result<Vec<String>> {
    let t = img.template;
    let url = format!(
        "file://{}?t={}&theme={}&split={}",
        page.display(),
        t.name,
        img.theme,
        t.split
    );
    render_url(&url, img.scale, out, profile, true)?;
    let json_path = PathBuf::from(format!("{}.json", out.display()));
    let gt: Value = serde_json::from_str(&std::fs::read_to_string(&json_path)?)
        .with_context(|| format!("{}: ground truth is not JSON", json_path.display()))?;
    if gt["template"] != t.name.as_str() || gt["family"] != t.family.as_str() {
        bail!(
            "ground truth is for template {} ({}), not {} ({}): is it in templates.js?",
            gt["template"],
            gt["family"],
            t.name,
            t.family
        );
    }
    let labels = gt["labels"].as_array().map_or(0, Vec::len);
    if labels == 0 {
        bail!("ground truth has no labels");
    }
    Ok(gt["problems"]
        .as_array()
        .map(|p| {
            p.iter()
                .map(|p| p.as_str().unwrap_or("").to_owned())
                .collect()
        })
        .unwrap_or_default())
}

/// The templates of splits.json, checked against the `T(name, family, ...)` calls of templates.js:
/// the same names with the same families, each in one known split.
fn templates(dir: &Path) -> Result<Vec<Template>> {
    let splits: Value = serde_json::from_str(&std::fs::read_to_string(dir.join("splits.json"))?)
        .context("tests/fixtures/corpus/splits.json is not JSON")?;
    let mut out = Vec::new();
    for t in splits["templates"]
        .as_array()
        .context("splits.json: no templates array")?
    {
        let field = |k: &str| {
            t[k].as_str()
                .map(str::to_owned)
                .with_context(|| format!("splits.json: a template without {k}: {t}"))
        };
        let t = Template {
            name: field("name")?,
            family: field("family")?,
            split: field("split")?,
        };
        if !SPLITS.contains(&t.split.as_str()) {
            bail!(
                "splits.json: {} has split {:?}, not train, dev or test",
                t.name,
                t.split
            );
        }
        out.push(t);
    }
    let js = std::fs::read_to_string(dir.join("templates.js"))?;
    let in_js: BTreeMap<&str, &str> = js
        .lines()
        .filter_map(|l| l.strip_prefix("T('"))
        .filter_map(|l| {
            let (name, rest) = l.split_once('\'')?;
            Some((name, rest.strip_prefix(", '")?.split('\'').next()?))
        })
        .collect();
    let in_json: BTreeMap<&str, &str> = out
        .iter()
        .map(|t| (t.name.as_str(), t.family.as_str()))
        .collect();
    if in_json.len() != out.len() {
        bail!("splits.json names a template twice");
    }
    if in_js != in_json {
        let only_js: Vec<_> = in_js
            .iter()
            .filter(|(n, f)| in_json.get(*n) != Some(f))
            .collect();
        let only_json: Vec<_> = in_json
            .iter()
            .filter(|(n, f)| in_js.get(*n) != Some(f))
            .collect();
        bail!(
            "tests/fixtures/corpus: templates.js and splits.json disagree\n  templates.js only: {only_js:?}\n  splits.json only: {only_json:?}"
        );
    }
    Ok(out)
}

/// A hash of what the images are made from: when it changes, every image is rendered again.
fn sources_hash(dir: &Path) -> Result<String> {
    let mut h = DefaultHasher::new();
    for f in [
        dir.join("corpus.html"),
        dir.join("templates.js"),
        dir.join("splits.json"),
        dir.join("../pages/common.js"),
    ] {
        std::fs::read(&f)
            .with_context(|| format!("reading {}", f.display()))?
            .hash(&mut h);
    }
    Ok(format!("{:016x}", h.finish()))
}

/// The stamp file: one line per image, its name and the sources hash it was rendered from.
fn read_stamps(path: &Path) -> BTreeMap<String, String> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.split_once(' '))
        .map(|(n, h)| (n.to_owned(), h.to_owned()))
        .collect()
}

fn write_stamps(path: &Path, stamps: &BTreeMap<String, String>) -> Result<()> {
    let text: String = stamps.iter().map(|(n, h)| format!("{n} {h}\n")).collect();
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, text)?;
    std::fs::rename(tmp, path)?;
    Ok(())
}

/// index.json: every up-to-date image of the corpus (not only this run's) with its template,
/// family, split, theme, scale and label count.
fn write_index(out: &Path, templates: &[Template], fresh: &dyn Fn(&str) -> bool) -> Result<()> {
    let mut images = Vec::new();
    for t in templates {
        for theme in THEMES {
            for scale in SCALES {
                let name = Image {
                    template: t,
                    theme,
                    scale,
                }
                .name();
                if !fresh(&name) {
                    continue;
                }
                let gt: Value = serde_json::from_str(&std::fs::read_to_string(
                    out.join(format!("{name}.json")),
                )?)?;
                images.push(json!({
                    "image": format!("{name}.png"),
                    "ground_truth": format!("{name}.json"),
                    "template": t.name, "family": t.family, "split": t.split,
                    "theme": theme, "scale": scale,
                    "labels": gt["labels"].as_array().map_or(0, Vec::len),
                }));
            }
        }
    }
    let index = json!({ "images": images });
    std::fs::write(
        out.join("index.json"),
        serde_json::to_string_pretty(&index)? + "\n",
    )?;
    Ok(())
}
