//! `cargo xtask test|demo|fixtures|corpus|rig`: installs what voxdesk needs, runs it on a private virtual desktop (Xvfb + openbox on a display of its own) and always tears that desktop down.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitCode, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

mod corpus;

/// Packages to build voxdesk (the -sys crates: Tesseract, Leptonica, xcap's X11/Wayland/PipeWire code).
const BUILD_PKGS: &[&str] = &[
    "libclang-dev",
    "libtesseract-dev",
    "libleptonica-dev",
    "libasound2-dev",
    "libpipewire-0.3-dev",
    "libgbm-dev",
    "libwayland-dev",
    "libxkbcommon-dev",
    "libxcb-randr0-dev",
    "pkg-config",
    "libx11-dev",
    "libxcb1-dev",
    // wss:// for the realtime models (tokio-tungstenite's native-tls: OpenSSL).
    "libssl-dev",
    // Offline speech recognition (pocketsphinx-sys links libpocketsphinx through pkg-config).
    "libpocketsphinx-dev",
    "libsphinxbase-dev",
];
/// Packages to run it and its tests on a virtual desktop. Installed without recommends, so what
/// a program loads at run time and only recommends (fonts above all) is named here too.
const RUN_PKGS: &[&str] = &[
    "xvfb",
    "xdotool",
    "tesseract-ocr",
    "tesseract-ocr-eng",
    "xterm",
    "x11-apps",
    "x11-utils",
    "x11-xserver-utils",
    "openbox",
    // The X server's core fonts (xserver-common only recommends them): xcalc's `8x13` and
    // xterm's `fixed` (iso8859-1 and iso10646-1). Without them xcalc quietly falls back to a
    // 17 px URW Gothic and xterm to the server's built-in font.
    "xfonts-base",
    // The Type1 fonts in the X server's font path: xcalc's "√", "π" and "÷" keys ask for
    // `-adobe-symbol-*`, which this package's Standard Symbols provides (today it also arrives
    // through openbox's image library, by chance).
    "fonts-urw-base35",
    // Fonts for fontconfig: openbox's title bars ("sans"), and the pages Chromium shows in the
    // tests and the report (DejaVu Sans; Liberation Sans for Arial, which chromium recommends).
    "fonts-dejavu-core",
    "fonts-liberation2",
    // Narration (espeak-ng), the demo's narration.wav (sox), the report looked at in a browser.
    "espeak-ng",
    "sox",
    "chromium",
    // The task suite (tests/it/tasks.rs, `voxdesk bench tasks`): a GTK 3 editor and a file
    // manager; libfm-modules is what pcmanfm's libfm only recommends (without it: "modules
    // directory is not accessible" on its stderr).
    "mousepad",
    "pcmanfm",
    "zenity",
    "libfm-modules",
    // The accessibility tree: a private session bus, the accessibility bus on it, the GTK 2/3
    // bridges, and a Qt editor among the apps the tree is tested on.
    "dbus",
    "at-spi2-core",
    "libatk-bridge2.0-0",
    "libatk-adaptor",
    "libgail-common",
    "featherpad",
    // The widened task suite's other families: a VTE terminal, yad's dialogs, another GTK 3
    // editor, and xmessage (Xaw) from the X utilities; GTK's dark theme comes with Adwaita.
    "lxterminal",
    "yad",
    "l3afpad",
    "x11-utils",
    // The virtual sound card: PulseAudio with null sinks; ALSA's `default` routed to it for cpal.
    "pulseaudio",
    "pulseaudio-utils",
    "alsa-utils",
    "libasound2-plugins",
    // Offline spoken commands: the recogniser's library and its US English model; flite is the
    // second synthetic voice the voice tests and the benchmark speak with.
    "pocketsphinx",
    "pocketsphinx-en-us",
    "flite",
    // The realtime clients' frames are checked against the providers' own SDK types
    // (tests/sdk/validate_frames.py) in a venv of their pinned versions.
    "python3-venv",
    // The daemon's web panel is tested in chromium (above) driven by playwright-core from npm
    // (tests/panel) on Node.js; npm itself is installed only when missing (a Node.js from
    // elsewhere brings its own and conflicts with Debian's).
    "nodejs",
];

/// The official SDKs whose types judge the frames voxdesk sends (the versions
/// `../shared/realtime-protocols.md` was written against).
const SDKS: &[&str] = &["google-genai==3.6.1", "openai==3.57.0", "anthropic==2.17.0"];

/// The learned models and the ONNX Runtime they run on, each from a wheel on PyPI (pinned, the
/// wheel's and every file's sha256 checked): (package==version, wheel file, its sha256, [(path
/// in the wheel, path under the models directory, sha256)]).
type Wheel = (
    &'static str,
    &'static str,
    &'static str,
    &'static [(&'static str, &'static str, &'static str)],
);
const MODEL_WHEELS: &[Wheel] = &[
    (
        "moonshine-cpp==0.1.4",
        "moonshine_cpp-0.1.4-py3-none-manylinux2014_x86_64.whl",
        "f7afc662bdd3ef98815ee3b940438b456e77d5a77cea5396ed9c572785412ebd",
        &[
            (
                "moonshine_cpp-0.1.4.data/purelib/moonshine_cpp/models/base-en/encoder_model.ort",
                "moonshine-base-en/encoder_model.ort",
                "9d1a19e044cbf89a207723d1adb667de89a5671a1e3e611b8ebe721b2c31219c",
            ),
            (
                "moonshine_cpp-0.1.4.data/purelib/moonshine_cpp/models/base-en/decoder_model_merged.ort",
                "moonshine-base-en/decoder_model_merged.ort",
                "370e0c1f161d68dc1c2264c1a82024fb123380da3b73f47f05531d1e8d3308c3",
            ),
            (
                "moonshine_cpp-0.1.4.data/purelib/moonshine_cpp/libonnxruntime.so.1.22.1",
                "onnxruntime/libonnxruntime.so.1.22.1",
                "ad9665887025474170d3e71cd28021e7e811c5bf201bc365f953e34a2c4989cc",
            ),
            (
                "moonshine_cpp-0.1.4.data/purelib/moonshine_cpp/LICENSE",
                "moonshine-base-en/LICENSE",
                "",
            ),
        ],
    ),
    (
        // Only the tokenizer: this package's own code fetches weights at run time.
        "useful-moonshine-onnx==20251121",
        "useful_moonshine_onnx-20251121-py3-none-any.whl",
        "b4189b0d7dc8064d567fd0b5d5ce78634be290b0a3a3274ab80ad11c46d531a2",
        &[(
            "moonshine_onnx/assets/tokenizer.json",
            "moonshine-base-en/tokenizer.json",
            "b68b995a58b3373db6c4f46864a9db50cd1333d086150ffa2c1096581ede9c10",
        )],
    ),
    (
        // PP-OCRv6 small (PaddleOCR's detector and recogniser, Apache-2.0): the learned text
        // reader. Only the models: the package's code is not used.
        "rapidocr==3.10.0",
        "rapidocr-3.10.0-py3-none-any.whl",
        "2fc34e26cd0f48514804a94f8832283039c7334076bff60768b1fed9ad068050",
        &[
            (
                "rapidocr/models/PP-OCRv6_det_small.onnx",
                "ppocr/PP-OCRv6_det_small.onnx",
                "090f04abcd9d9a7498bc4ebf677e4cb9bdce1fe4197ddb7e529f1ef44e1ff94f",
            ),
            (
                "rapidocr/models/PP-OCRv6_rec_small.onnx",
                "ppocr/PP-OCRv6_rec_small.onnx",
                "6f327246b50388f3c176ae304bd95767ea6dc0c9ae92153ef8cbe210b3c14884",
            ),
            (
                "rapidocr-3.10.0.dist-info/licenses/MODEL_LICENSES.md",
                "ppocr/MODEL_LICENSES.md",
                "c5fd0e8603d3df743355b546121e6fe0f4ef8ff455c5a85c1681fd3ae520e153",
            ),
        ],
    ),
];

/// Where the models go: `VOXDESK_MODELS_DIR`, else `$XDG_DATA_HOME/voxdesk/models`, else
/// `~/.local/share/voxdesk/models` (where voxdesk looks by default).
fn models_dir() -> Result<PathBuf> {
    if let Some(d) = std::env::var_os("VOXDESK_MODELS_DIR") {
        return Ok(PathBuf::from(d));
    }
    let data = std::env::var_os("XDG_DATA_HOME")
        .map(PathBuf::from)
        .filter(|d| d.is_absolute())
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".local/share")))
        .context("no HOME to install the models under (set VOXDESK_MODELS_DIR)")?;
    Ok(data.join("voxdesk/models"))
}

fn sha256(path: &Path) -> Result<String> {
    let o = Command::new("sha256sum")
        .arg(path)
        .output()
        .context("running sha256sum (coreutils)")?;
    let out = String::from_utf8_lossy(&o.stdout);
    out.split_whitespace()
        .next()
        .map(str::to_string)
        .with_context(|| format!("sha256sum gave nothing for {}", path.display()))
}

/// `cargo xtask models`: the wheels downloaded from PyPI (once, kept under target/), checked,
/// and the files voxdesk needs unpacked into the models directory. Returns that directory.
fn install_models() -> Result<PathBuf> {
    let dir = models_dir()?;
    let ok = |rel: &str, sum: &str| {
        let p = dir.join(rel);
        p.is_file() && (sum.is_empty() || sha256(&p).ok().as_deref() == Some(sum))
    };
    if MODEL_WHEELS
        .iter()
        .all(|w| w.3.iter().all(|(_, rel, sum)| ok(rel, sum)))
    {
        return Ok(dir);
    }
    let python = sdk_venv()?;
    let wheels = root().join("target/model-wheels");
    std::fs::create_dir_all(&wheels)?;
    for (pkg, file, sum, files) in MODEL_WHEELS {
        let whl = wheels.join(file);
        if !whl.is_file() || sha256(&whl)? != *sum {
            let _ = std::fs::remove_file(&whl);
            eprintln!("xtask: downloading {pkg} from PyPI");
            run(Command::new(&python)
                .args([
                    "-m",
                    "pip",
                    "download",
                    "--quiet",
                    "--disable-pip-version-check",
                ])
                .args(["--no-deps", "--only-binary=:all:", "--dest"])
                .arg(&wheels)
                .arg(pkg))
            .with_context(|| format!("downloading {pkg} from PyPI"))?;
        }
        let got = sha256(&whl)?;
        if got != *sum {
            bail!("{file}: sha256 {got}, expected {sum}: not the wheel voxdesk was built against");
        }
        let unpacked = wheels.join(format!("{file}.d"));
        let _ = std::fs::remove_dir_all(&unpacked);
        run(Command::new(&python)
            .args(["-m", "zipfile", "-e"])
            .arg(&whl)
            .arg(&unpacked))
        .with_context(|| format!("unpacking {file}"))?;
        for (inner, rel, want) in files.iter() {
            let from = unpacked.join(inner);
            let to = dir.join(rel);
            std::fs::create_dir_all(to.parent().expect("a file under the models directory"))?;
            std::fs::copy(&from, &to).with_context(|| format!("{inner} is not in {file}"))?;
            if !want.is_empty() {
                let got = sha256(&to)?;
                if got != *want {
                    let _ = std::fs::remove_file(&to);
                    bail!("{rel}: sha256 {got}, expected {want}");
                }
            }
        }
        let _ = std::fs::remove_dir_all(&unpacked);
    }
    eprintln!(
        "xtask: models and ONNX Runtime installed in {}",
        dir.display()
    );
    Ok(dir)
}
/// Packages to render the UI fixtures (headless Chromium and the fonts the pages name).
const FIXTURE_PKGS: &[&str] = &["chromium", "fonts-dejavu-core", "fonts-liberation2"];

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let res = match args.first().map(String::as_str) {
        Some("test") => test(&args[1..]),
        Some("demo") => demo(),
        Some("fixtures") => fixtures(),
        Some("corpus") => corpus::corpus(&args[1..]),
        Some("rig") => rig_shell(&args[1..]),
        Some("deps") => ensure_packages(&[BUILD_PKGS, RUN_PKGS].concat()),
        Some("models") => install_models().map(|d| println!("{}", d.display())),
        _ => {
            eprintln!("usage: cargo xtask <test|demo|fixtures|corpus|deps|models|rig -- CMD...>\n  test      every test, desktop tests on a private Xvfb\n  models    install the speech and text models and ONNX Runtime from PyPI (pinned, checked)\n  demo      voxdesk on a private virtual desktop with xcalc\n  fixtures  re-render tests/fixtures/ui with headless Chromium\n  corpus [--only NAME,..] [--split train|dev|test]\n            render the OCR evaluation corpus (tests/fixtures/corpus) into target/corpus\n  rig CMD   run CMD inside a private virtual desktop");
            return ExitCode::from(2);
        }
    };
    match res {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("xtask: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask lives in the workspace")
        .to_path_buf()
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
        .unwrap_or(false)
}

fn installed(pkg: &str) -> bool {
    Command::new("dpkg-query")
        .args(["-W", "-f=${Status}", pkg])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).contains("install ok installed"))
        .unwrap_or(false)
}

/// Install missing Debian packages as root; otherwise print the exact command and stop.
fn ensure_packages(pkgs: &[&str]) -> Result<()> {
    let missing: Vec<&str> = pkgs.iter().copied().filter(|p| !installed(p)).collect();
    if missing.is_empty() {
        return Ok(());
    }
    let cmd = format!("apt-get update && apt-get install -y {}", missing.join(" "));
    if !is_root() {
        bail!(
            "missing Debian packages: {}\nrun as root:\n  sudo sh -c '{cmd}'",
            missing.join(" ")
        );
    }
    eprintln!("xtask: installing {}", missing.join(" "));
    run(Command::new("apt-get").arg("update").stdout(Stdio::null()))?;
    run(Command::new("apt-get")
        .args(["install", "-y", "--no-install-recommends"])
        .args(&missing)
        .env("DEBIAN_FRONTEND", "noninteractive")
        .stdout(Stdio::null()))?;
    Ok(())
}

fn run(cmd: &mut Command) -> Result<()> {
    let st = cmd.status().with_context(|| format!("starting {cmd:?}"))?;
    if !st.success() {
        bail!("{cmd:?} failed with {st}");
    }
    Ok(())
}

/// A private virtual desktop. Dropping it kills everything it started, and nothing else.
struct Rig {
    display: String,
    runtime: tempfile_dir::Dir,
    children: Arc<Mutex<Vec<Child>>>,
    /// The private session bus's address, once it runs.
    bus: Option<String>,
}

mod tempfile_dir {
    //! A directory removed on drop (std has no temp-dir type; one struct is not worth a crate here).
    use std::path::{Path, PathBuf};
    pub struct Dir(PathBuf);
    impl Dir {
        pub fn new(prefix: &str) -> std::io::Result<Dir> {
            let p = std::env::temp_dir().join(format!(
                "{prefix}-{}-{}",
                std::process::id(),
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map(|d| d.as_nanos())
                    .unwrap_or(0)
            ));
            std::fs::create_dir_all(&p)?;
            #[cfg(unix)]
            {
                use std::os::unix::fs::PermissionsExt;
                std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o700))?;
            }
            Ok(Dir(p))
        }
        pub fn path(&self) -> &Path {
            &self.0
        }
    }
    impl Drop for Dir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

fn free_display() -> Result<u32> {
    for n in 90..400 {
        if !Path::new(&format!("/tmp/.X{n}-lock")).exists()
            && !Path::new(&format!("/tmp/.X11-unix/X{n}")).exists()
        {
            return Ok(n);
        }
    }
    bail!("no free X display number between :90 and :399")
}

fn wait_until(what: &str, timeout: Duration, mut ok: impl FnMut() -> bool) -> Result<()> {
    let t = Instant::now();
    while t.elapsed() < timeout {
        if ok() {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    bail!("timed out after {timeout:?} waiting for {what}")
}

impl Rig {
    fn start() -> Result<Rig> {
        let runtime = tempfile_dir::Dir::new("voxdesk-rig")?;
        let children: Arc<Mutex<Vec<Child>>> = Arc::default();
        // Tear down on Ctrl-C / SIGTERM too: the handler kills what the rig started, then exits.
        let for_signal = children.clone();
        let _ = ctrlc::set_handler(move || {
            kill_all(&for_signal);
            std::process::exit(130);
        });
        let n = free_display()?;
        let display = format!(":{n}");
        let child = Command::new("Xvfb")
            .args([
                &display,
                "-screen",
                "0",
                "1920x1080x24",
                "-nolisten",
                "tcp",
                "-noreset",
                "+extension",
                "XTEST",
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .context("starting Xvfb (apt-get install xvfb)")?;
        children.lock().unwrap().push(child);
        // From here on, dropping `rig` tears down whatever has started, whatever fails next.
        let rig = Rig {
            display: display.clone(),
            runtime,
            children,
            bus: None,
        };
        wait_until(
            &format!("Xvfb on {display}"),
            Duration::from_secs(10),
            || {
                rig.cmd("xdpyinfo")
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .status()
                    .is_ok_and(|s| s.success())
            },
        )?;
        rig.finish_start()
    }

    fn finish_start(mut self) -> Result<Rig> {
        // xcap reports no primary monitor unless one is marked (it sticks only with -noreset).
        run(self.cmd("xrandr").args(["--output", "screen", "--primary"]))?;
        // A desktop colour, as a real session has: an untouched Xvfb root is pure black, which
        // `voxdesk doctor` rightly reports as a broken capture.
        run(self.cmd("xsetroot").args(["-solid", "#3a6ea5"]))?;
        let wm = self
            .cmd("openbox")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .context("starting openbox (apt-get install openbox)")?;
        self.children.lock().unwrap().push(wm);
        wait_until("openbox", Duration::from_secs(10), || {
            self.cmd("xprop")
                .args(["-root", "_NET_SUPPORTING_WM_CHECK"])
                .output()
                .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).contains("window id"))
        })?;
        self.start_sound()?;
        self.start_buses()?;
        eprintln!(
            "xtask: virtual desktop {} (1920x1080, openbox), session and accessibility buses, and sound card (PulseAudio, null sinks spk and micfeed) ready",
            self.display
        );
        Ok(self)
    }

    /// A private PulseAudio with two null sinks: `spk` (the default output; record `spk.monitor`
    /// to hear what voxdesk says) and `micfeed` (its monitor is the default input: play a WAV into
    /// `micfeed` to speak into the microphone). Its socket lives in this rig's runtime dir.
    fn start_sound(&self) -> Result<()> {
        let conf = self.runtime.path().join("pulse.pa");
        std::fs::write(
            &conf,
            "load-module module-native-protocol-unix auth-anonymous=1\n\
             load-module module-null-sink sink_name=spk rate=48000\n\
             load-module module-null-sink sink_name=micfeed rate=48000\n\
             set-default-sink spk\n\
             set-default-source micfeed.monitor\n",
        )?;
        std::fs::create_dir_all(self.runtime.path().join("home"))?;
        let pa = self
            .cmd("pulseaudio")
            .env("HOME", self.runtime.path().join("home"))
            .args(["-n", "-F"])
            .arg(&conf)
            .args([
                "--daemonize=no",
                "--exit-idle-time=-1",
                "--disallow-exit",
                "--log-target=stderr",
                "--log-level=error",
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .context("starting pulseaudio (apt-get install pulseaudio)")?;
        self.children.lock().unwrap().push(pa);
        wait_until("PulseAudio", Duration::from_secs(10), || {
            self.cmd("pactl")
                .arg("info")
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|s| s.success())
        })?;
        // An idle null sink stalls a new stream for ~1 s: keep one silent stream playing into each.
        for sink in ["spk", "micfeed"] {
            let zero = std::fs::File::open("/dev/zero")?;
            let silence = self
                .cmd("pacat")
                .args([
                    "--playback",
                    "-d",
                    sink,
                    "--latency-msec=10",
                    "--format=s16le",
                    "--rate=48000",
                    "--channels=2",
                ])
                .stdin(zero)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .context("starting pacat (apt-get install pulseaudio-utils)")?;
            self.children.lock().unwrap().push(silence);
        }
        Ok(())
    }

    /// A private session bus and the accessibility bus on it (at-spi-bus-launcher, which starts
    /// the registry on first use), with the desktop's assistive-technology switch on
    /// (`org.a11y.Status.IsEnabled`: Chromium and Electron expose their tree only then).
    fn start_buses(&mut self) -> Result<()> {
        let socket = self.runtime.path().join("bus");
        let address = format!("unix:path={}", socket.display());
        let bus = self
            .cmd("dbus-daemon")
            .args(["--session", "--nofork", "--nopidfile"])
            .arg(format!("--address={address}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .context("starting dbus-daemon (apt-get install dbus)")?;
        self.children.lock().unwrap().push(bus);
        wait_until("the session bus", Duration::from_secs(10), || {
            socket.exists()
        })?;
        self.bus = Some(address);
        let launcher = self
            .cmd("/usr/libexec/at-spi-bus-launcher")
            .arg("--launch-immediately")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .context("starting at-spi-bus-launcher (apt-get install at-spi2-core)")?;
        self.children.lock().unwrap().push(launcher);
        wait_until("the accessibility bus", Duration::from_secs(10), || {
            self.cmd("dbus-send")
                .args([
                    "--session",
                    "--print-reply",
                    "--dest=org.a11y.Bus",
                    "/org/a11y/bus",
                    "org.a11y.Bus.GetAddress",
                ])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|s| s.success())
        })?;
        run(self
            .cmd("dbus-send")
            .args([
                "--session",
                "--print-reply",
                "--dest=org.a11y.Bus",
                "/org/a11y/bus",
                "org.freedesktop.DBus.Properties.Set",
                "string:org.a11y.Status",
                "string:IsEnabled",
                "variant:boolean:true",
            ])
            .stdout(Stdio::null()))?;
        Ok(())
    }

    /// A command that runs inside this desktop only.
    fn cmd(&self, program: &str) -> Command {
        let mut c = Command::new(program);
        c.env("DISPLAY", &self.display)
            .env("XDG_RUNTIME_DIR", self.runtime.path())
            .env(
                "PULSE_SERVER",
                format!(
                    "unix:{}",
                    self.runtime.path().join("pulse/native").display()
                ),
            )
            .env("PULSE_RUNTIME_PATH", self.runtime.path().join("pulse"))
            .env("VOXDESK_RIG", "1")
            .env("OMP_THREAD_LIMIT", "1")
            // Applications expose their accessibility tree: GTK 2 through its modules, Qt and
            // Chromium told that an assistive tool listens.
            .env("GTK_MODULES", "gail:atk-bridge")
            .env("ACCESSIBILITY_ENABLED", "1")
            .env("QT_LINUX_ACCESSIBILITY_ALWAYS_ON", "1")
            .env_remove("NO_AT_BRIDGE")
            .env_remove("WAYLAND_DISPLAY")
            .env_remove("XDG_SESSION_TYPE");
        match &self.bus {
            Some(a) => c.env("DBUS_SESSION_BUS_ADDRESS", a),
            None => c.env_remove("DBUS_SESSION_BUS_ADDRESS"),
        };
        c
    }
}

fn kill_all(children: &Mutex<Vec<Child>>) {
    let mut v = children.lock().unwrap_or_else(|p| p.into_inner());
    // Reverse order: the sound card and window manager before the X server. SIGTERM first so
    // Xvfb removes its lock file and socket; SIGKILL whatever is still there after a second.
    while let Some(mut c) = v.pop() {
        if let Ok(pid) = i32::try_from(c.id()) {
            unsafe { libc::kill(pid, libc::SIGTERM) };
        }
        let t = Instant::now();
        while t.elapsed() < Duration::from_secs(1) && matches!(c.try_wait(), Ok(None)) {
            std::thread::sleep(Duration::from_millis(10));
        }
        let _ = c.kill();
        let _ = c.wait();
    }
}

impl Drop for Rig {
    fn drop(&mut self) {
        kill_all(&self.children);
        eprintln!("xtask: virtual desktop {} torn down", self.display);
    }
}

fn cargo() -> Command {
    let mut c = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    c.current_dir(root());
    c
}

/// playwright-core for the panel test (tests/panel), at the version its lock file pins.
fn panel_driver() -> Result<()> {
    let dir = root().join("tests/panel");
    if dir
        .join("node_modules/playwright-core/package.json")
        .exists()
    {
        return Ok(());
    }
    if Command::new("npm").arg("--version").output().is_err() {
        ensure_packages(&["npm"])?;
    }
    run(Command::new("npm")
        .current_dir(&dir)
        .args(["ci", "--no-audit", "--no-fund"]))
    .context("installing playwright-core for the panel test (npm ci in tests/panel)")
}

/// Every test: unit tests and the integration tests, the desktop ones on a private Xvfb.
fn test(extra: &[String]) -> Result<()> {
    ensure_packages(&[BUILD_PKGS, RUN_PKGS].concat())?;
    // Build first, outside the rig: a long compile should not hold a display.
    // Incremental state only pays back on the next edit: a test run does without it (it was a third
    // of what a build wrote), unless the caller asks for it.
    let incremental = std::env::var("CARGO_INCREMENTAL").unwrap_or_else(|_| "0".into());
    run(cargo()
        .env("CARGO_INCREMENTAL", &incremental)
        .args(["test", "--workspace", "--no-run"]))?;
    let python = sdk_venv()?;
    let models = install_models()?;
    panel_driver()?;
    let frames = root().join("target/realtime-frames.jsonl");
    let _ = std::fs::remove_file(&frames);
    let rig = Rig::start()?;
    let mut c = rig.cmd(&std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    c.current_dir(root())
        .env("CARGO_INCREMENTAL", &incremental)
        .env("VOXDESK_FRAME_DUMP", &frames)
        .env("VOXDESK_MODELS_DIR", &models)
        .args(["test", "--workspace"])
        .args(extra);
    let st = c.status().context("running cargo test")?;
    drop(rig);
    if !st.success() {
        bail!("tests failed ({st})");
    }
    // Every frame the tests sent, judged by the SDKs' own types. (A filtered run may have sent
    // none.)
    if frames.exists() {
        run(Command::new(&python)
            .arg(root().join("tests/sdk/validate_frames.py"))
            .arg(&frames))
        .context("frames the realtime clients send do not validate against the SDK types")?;
    } else if extra.is_empty() {
        bail!("no realtime frames were dumped to {}", frames.display());
    }
    Ok(())
}

/// A venv holding the pinned SDKs (made once, under target/): its python.
fn sdk_venv() -> Result<PathBuf> {
    let venv = root().join("target/sdk-venv");
    let python = venv.join("bin/python");
    let stamp = venv.join("voxdesk-sdks.txt");
    let want = SDKS.join("\n");
    if std::fs::read_to_string(&stamp).ok().as_deref() == Some(want.as_str()) {
        return Ok(python);
    }
    // Debian's python3 (python3-venv), whatever else is first on PATH.
    let base = ["/usr/bin/python3", "python3"]
        .into_iter()
        .find(|p| Command::new(p).arg("--version").output().is_ok())
        .unwrap_or("python3");
    run(Command::new(base)
        .args(["-m", "venv", "--clear"])
        .arg(&venv))
    .context("making the SDK venv (apt-get install python3-venv)")?;
    run(Command::new(&python)
        .args([
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
        ])
        .args(SDKS))
    .context("installing the providers' SDKs from PyPI")?;
    std::fs::write(&stamp, want)?;
    Ok(python)
}

/// The demo: xcalc on a private desktop, one observation, the annotated picture written.
fn demo() -> Result<()> {
    ensure_packages(&[BUILD_PKGS, RUN_PKGS].concat())?;
    run(cargo().args(["build", "--release", "--bin", "voxdesk"]))?;
    // The learned ears the spoken part uses.
    let models = install_models()?;
    let bin = root().join("target/release/voxdesk");
    let out = root().join("out/demo");
    std::fs::create_dir_all(&out)?;
    let rig = Rig::start()?;
    run(rig.cmd(bin.to_str().unwrap()).arg("doctor"))?;
    let calc_log = out.join("xcalc.log");
    let calc = rig
        .cmd("xcalc")
        .args(["-geometry", "360x480+200+150"])
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&calc_log)?)
        .spawn()
        .context("starting xcalc (apt-get install x11-apps)")?;
    rig.children.lock().unwrap().push(calc);
    wait_until("the xcalc window", Duration::from_secs(10), || {
        rig.cmd("xdotool")
            .args(["search", "--class", "XCalc"])
            .output()
            .is_ok_and(|o| !o.stdout.is_empty())
    })?;
    // A font xcalc cannot load is only a warning to it: it draws its keys in another font, which
    // is not the calculator this demo was made for. Stop here, saying so.
    let warnings = std::fs::read_to_string(&calc_log).unwrap_or_default();
    if let Some(w) = warnings
        .lines()
        .find(|l| l.contains("Cannot convert string"))
    {
        bail!(
            "xcalc is missing a font ({w}); its fonts come with xfonts-base and fonts-urw-base35"
        );
    }
    // Give it focus the way a user would, by clicking into it.
    let _ = rig
        .cmd("xdotool")
        .args(["search", "--class", "XCalc", "windowactivate", "--sync"])
        .status();
    std::thread::sleep(Duration::from_millis(300));
    let png = out.join("look.png");
    run(rig
        .cmd(bin.to_str().unwrap())
        .args(["look", "--annotate"])
        .arg(&png))?;
    let json = rig
        .cmd(bin.to_str().unwrap())
        .args(["look", "--json"])
        .output()?;
    std::fs::write(out.join("look.json"), &json.stdout)?;
    // Act behind the rails: press "5" on the calculator (xcalc allowed, auto mode), then show a
    // refusal (alt+f4 is forbidden) and an observe-mode dry run.
    let look: serde_json::Value =
        serde_json::from_slice(&json.stdout).context("parsing look --json")?;
    let five = look["targets"]
        .as_array()
        .and_then(|ts| ts.iter().find(|t| t["text"] == "5"))
        .context("xcalc's \"5\" key was not found on screen")?;
    // The batch names look's observation and its target, as a model names them.
    let click = format!(
        r#"{{"observation_id":{},"actions":[{{"action":"click","target":{}}}],"expect":{{"appears":"5"}}}}"#,
        look["observation_id"], five["id"]
    );
    println!("\n$ voxdesk act --mode auto '{click}'");
    let _ = rig
        .cmd(bin.to_str().unwrap())
        .env("VOXDESK_ALLOW_APPS", "XCalc")
        .args(["act", "--mode", "auto", &click])
        .status();
    println!("\n$ voxdesk act --mode auto '{{\"actions\":[{{\"action\":\"key\",\"combo\":\"alt+f4\"}}]}}'");
    let _ = rig
        .cmd(bin.to_str().unwrap())
        .env("VOXDESK_ALLOW_APPS", "XCalc")
        .args([
            "act",
            "--mode",
            "auto",
            r#"{"actions":[{"action":"key","combo":"alt+f4"}]}"#,
        ])
        .status();
    println!("\n$ voxdesk act --mode observe (clicking 5 again, dry run)");
    let _ = rig
        .cmd(bin.to_str().unwrap())
        .env("VOXDESK_ALLOW_APPS", "XCalc")
        .args(["act", "--mode", "observe", &click])
        .status();
    // The loop with the offline planner: a calculator task, narrated, recorded, verified.
    // "AC" first clears the 5 pressed above, so the display goes 7, 7+5, 12.
    let task = "click AC, click 7, click +, click 5, click =, wait for 12";
    let data = out.join("data");
    let narration = out.join("narration.wav");
    // What the speaker played, recorded off the virtual sound card's monitor.
    let mut speaker = rig
        .cmd("parecord")
        .args(["-d", "spk.monitor", "--file-format=wav"])
        .arg(&narration)
        .spawn()
        .context("starting parecord (apt-get install pulseaudio-utils)")?;
    std::thread::sleep(Duration::from_millis(200));
    println!("\n$ voxdesk run --provider local --mode auto {task:?}");
    let t = std::time::Instant::now();
    let st = rig
        .cmd(bin.to_str().unwrap())
        .env("VOXDESK_ALLOW_APPS", "XCalc")
        .env("XDG_DATA_HOME", &data)
        .args(["run", "--provider", "local", "--mode", "auto"])
        .arg(task)
        .status()?;
    // Voice: `voxdesk listen --provider local` hears the task spoken into the virtual mic,
    // recognises it offline against what is on screen, plans it, acts and narrates.
    let heard = voice_demo(&rig, &bin, &data, &out, &models)?;
    std::thread::sleep(Duration::from_millis(300));
    if let Ok(pid) = i32::try_from(speaker.id()) {
        // SIGINT: parecord writes the WAV header's lengths and exits.
        unsafe { libc::kill(pid, libc::SIGINT) };
    }
    let _ = speaker.wait();
    println!("(task took {:.1} s, exit {st})", t.elapsed().as_secs_f64());
    let after = out.join("after.png");
    run(rig
        .cmd(bin.to_str().unwrap())
        .args(["look", "--annotate"])
        .arg(&after)
        .stdout(Stdio::null()))?;
    let form_ok = form_demo(&rig, &bin, &out)?;
    drop(rig);
    // The session's HTML report.
    let sessions = data.join("voxdesk/sessions");
    let newest = std::fs::read_dir(&sessions)
        .ok()
        .and_then(|rd| rd.flatten().map(|e| e.path()).max());
    let report = newest.as_ref().map(|d| d.join("report.html"));
    if let Some(d) = &newest {
        let _ = Command::new(&bin)
            .arg("report")
            .arg(d)
            .stdout(Stdio::null())
            .status();
    }
    if let Ok(o) = Command::new("sox")
        .arg(&narration)
        .args(["-n", "stats"])
        .output()
    {
        let stats = String::from_utf8_lossy(&o.stderr);
        for l in stats
            .lines()
            .filter(|l| l.starts_with("RMS lev dB") || l.starts_with("Length s"))
        {
            println!("narration.wav {l}");
        }
    }
    println!(
        "\nannotated picture (what the model sees): {}\nobservation JSON: {}\nafter the task: {}\nnarration: {}\nsession: {}\nreport: {}",
        png.display(),
        out.join("look.json").display(),
        after.display(),
        narration.display(),
        newest.map(|d| d.display().to_string()).unwrap_or_default(),
        report.map(|r| r.display().to_string()).unwrap_or_default()
    );
    anyhow::ensure!(
        st.success(),
        "the calculator task did not finish ({st}): the report above shows where it stopped"
    );
    anyhow::ensure!(
        heard,
        "the spoken tasks did not leave 72 on the calculator and the dictated words in the terminal: see the listener's output above"
    );
    anyhow::ensure!(
        form_ok,
        "the form's fields did not come from the accessibility tree, or the name typed was not verified exactly: see above"
    );
    Ok(())
}

/// The accessibility tree fused with OCR: a GTK form whose empty fields have no text to read
/// are targets with their roles; a name typed into one is verified by the field's value.
fn form_demo(rig: &Rig, bin: &Path, out: &Path) -> Result<bool> {
    let form = rig
        .cmd("zenity")
        .args([
            "--forms",
            "--title=Sign up",
            "--text=Your details",
            "--add-entry=Full name",
            "--add-entry=Email",
            "--add-password=Password",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .context("starting zenity")?;
    rig.children.lock().unwrap().push(form);
    wait_until("the form", Duration::from_secs(10), || {
        rig.cmd("xdotool")
            .args(["search", "--name", "Sign up", "windowactivate", "--sync"])
            .status()
            .is_ok_and(|s| s.success())
    })?;
    std::thread::sleep(Duration::from_millis(800));
    println!("\n$ voxdesk look   (a GTK form: its empty fields come from the accessibility tree)");
    let shown = rig.cmd(bin.to_str().unwrap()).arg("look").output()?;
    let table = String::from_utf8_lossy(&shown.stdout);
    for l in table.lines().filter(|l| l.contains(" ax")) {
        println!("{l}");
    }
    let json = rig
        .cmd(bin.to_str().unwrap())
        .args(["look", "--json"])
        .output()?;
    std::fs::write(out.join("look-form.json"), &json.stdout)?;
    let look: serde_json::Value =
        serde_json::from_slice(&json.stdout).context("parsing look --json")?;
    let Some(name) = look["targets"].as_array().and_then(|ts| {
        ts.iter()
            .find(|t| t["text"] == "Full name" && t["role"] == "text")
    }) else {
        println!("the Full name field is not a target");
        return Ok(false);
    };
    // x/y in the picture's pixels, as `look` gives the boxes (the space `act` takes).
    let f = |i: usize| name["box"][i].as_f64().unwrap_or(0.0);
    let (x, y) = (f(0) + f(2) / 2.0, f(1) + f(3) / 2.0);
    let batch = format!(
        r#"{{"actions":[{{"action":"click","x":{x:.1},"y":{y:.1}}},{{"action":"type","text":"Zoë Ångström"}}],"expect":{{"appears":"Zoë Ångström"}}}}"#
    );
    println!("\n$ voxdesk act --mode auto '{batch}'");
    let r = rig
        .cmd(bin.to_str().unwrap())
        .env("VOXDESK_ALLOW_APPS", "Zenity")
        .args(["act", "--mode", "auto", &batch])
        .output()?;
    let said = String::from_utf8_lossy(&r.stdout);
    print!("{said}");
    Ok(said.contains("exactly"))
}

/// The calculator driven by voice: each command spoken by flite into the virtual mic while
/// `voxdesk listen --provider local` runs; prints what it heard; true when xcalc shows 9 × 4.
fn voice_demo(rig: &Rig, bin: &Path, data: &Path, out: &Path, models: &Path) -> Result<bool> {
    use std::io::BufRead;
    // A terminal whose program writes what is typed into it to a file: the dictation's effect.
    let typed = out.join("dictated.txt");
    let _ = std::fs::remove_file(&typed);
    std::fs::write(&typed, "")?;
    println!(
        "\n$ voxdesk listen --provider local --mode auto   (the learned ears; spoken into the virtual mic by flite, the commands in pink noise)"
    );
    let mut child = rig
        .cmd(bin.to_str().unwrap())
        .env("VOXDESK_ALLOW_APPS", "XCalc,XTerm")
        .env("XDG_DATA_HOME", data)
        .env("VOXDESK_MODELS_DIR", models)
        .env("VOXDESK_LEARNED_EARS", "1")
        .args(["listen", "--provider", "local", "--mode", "auto"])
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .context("starting voxdesk listen")?;
    let lines: Arc<Mutex<Vec<String>>> = Arc::default();
    let l2 = lines.clone();
    let stdout = child.stdout.take().context("listen's output")?;
    let reader = std::thread::spawn(move || {
        for l in std::io::BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
        {
            println!("  {l}");
            l2.lock().unwrap().push(l);
        }
    });
    let count = |needle: &str| {
        lines
            .lock()
            .unwrap()
            .iter()
            .filter(|l| l.contains(needle))
            .count()
    };
    let started = wait_until("voxdesk listen", Duration::from_secs(60), || {
        count("listening on") > 0
    });
    let mut spoken = 0;
    // It says "Listening." first.
    std::thread::sleep(Duration::from_millis(1500));
    // `voice`: flite's; `noise`: pink noise that many dB under the speech's active level.
    let mut say = |voice: &str, said: &str, noise: Option<f32>| -> Result<()> {
        let wav = out.join("say.wav");
        run(Command::new("flite")
            .args(["-voice", voice, "-t", said, "-o"])
            .arg(&wav))?;
        match noise {
            Some(db) => {
                noisy(&wav, db)?;
                println!(
                    "  (flite {voice} into the mic, pink noise {db} dB under the speech: {said:?})"
                );
            }
            None => println!("  (flite {voice} into the mic: {said:?})"),
        }
        run(rig.cmd("paplay").args(["-d", "micfeed"]).arg(&wav))?;
        spoken += 1;
        let _ = wait_until("the spoken task", Duration::from_secs(30), || {
            count("session: ") >= spoken
        });
        Ok(())
    };
    let mut shows = false;
    if started.is_ok() {
        say("awb", "click A C", Some(20.0))?;
        say(
            "awb",
            "click nine, click times, click eight, click equals",
            Some(20.0),
        )?;
        let look = rig
            .cmd(bin.to_str().unwrap())
            .args(["look", "--json"])
            .output()?;
        let v: serde_json::Value = serde_json::from_slice(&look.stdout).unwrap_or_default();
        shows = v["targets"]
            .as_array()
            .is_some_and(|ts| ts.iter().any(|t| t["text"] == "72"));
        // Echo on, as a shell's line is: the words show where they were typed, and voxdesk's
        // check looks for them there.
        let script = format!("stty -icanon; exec cat > '{}'", typed.display());
        let term = rig
            .cmd("xterm")
            .args(["-geometry", "90x10+620+150", "-e", "sh", "-c", &script])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .context("starting xterm")?;
        rig.children.lock().unwrap().push(term);
        wait_until("the terminal", Duration::from_secs(10), || {
            rig.cmd("xdotool")
                .args(["search", "--class", "XTerm", "windowactivate", "--sync"])
                .status()
                .is_ok_and(|s| s.success())
        })?;
        std::thread::sleep(Duration::from_millis(500));
        say("kal", "type meet me at the station at seven", None)?;
        let _ = wait_until("the typed words", Duration::from_secs(10), || {
            std::fs::read_to_string(&typed).is_ok_and(|t| !t.is_empty())
        });
    }
    if let Ok(pid) = i32::try_from(child.id()) {
        unsafe { libc::kill(pid, libc::SIGINT) };
    }
    let _ = child.wait();
    let _ = reader.join();
    let heard: Vec<String> = lines
        .lock()
        .unwrap()
        .iter()
        .filter(|l| l.starts_with("👂"))
        .cloned()
        .collect();
    println!("\nheard: {}", heard.join(" | "));
    println!("xcalc shows 72: {shows}");
    let dictated = std::fs::read_to_string(&typed).unwrap_or_default();
    // Judged by the words (Moonshine may write "7" for "seven"): all there, nothing else.
    let words = |s: &str| -> Vec<String> {
        s.to_lowercase()
            .replace('7', "seven")
            .split(|c: char| !c.is_alphanumeric())
            .filter(|w| !w.is_empty())
            .map(str::to_string)
            .collect()
    };
    let typed_ok = words(&dictated) == words("meet me at the station at seven");
    println!(
        "typed into the terminal: {dictated:?} ({})",
        if typed_ok { "as said" } else { "NOT as said" }
    );
    Ok(shows && typed_ok)
}

/// Pink noise mixed into a 16-bit mono WAV, `db` under the speech's active level (the RMS of
/// samples above −40 dBFS), in place.
fn noisy(wav: &Path, db: f32) -> Result<()> {
    let bytes = std::fs::read(wav)?;
    let data = bytes
        .windows(4)
        .position(|w| w == b"data")
        .context("a WAV without data")?;
    let (head, body) = bytes.split_at(data + 8);
    let pcm: Vec<f32> = body
        .chunks_exact(2)
        .map(|b| f32::from(i16::from_le_bytes([b[0], b[1]])))
        .collect();
    let loud: Vec<f32> = pcm.iter().copied().filter(|s| s.abs() > 328.0).collect();
    let rms = |v: &[f32]| (v.iter().map(|s| s * s).sum::<f32>() / v.len().max(1) as f32).sqrt();
    let mut x: u64 = 0x2545_f491_4f6c_dd1d;
    let mut b = [0f32; 7];
    let noise: Vec<f32> = (0..pcm.len())
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let w = (x >> 40) as f32 / (1u64 << 24) as f32 * 2.0 - 1.0;
            b[0] = 0.99886 * b[0] + w * 0.055_518;
            b[1] = 0.99332 * b[1] + w * 0.075_076;
            b[2] = 0.969 * b[2] + w * 0.153_852;
            b[3] = 0.8665 * b[3] + w * 0.310_486;
            b[4] = 0.55 * b[4] + w * 0.532_952;
            b[5] = -0.7616 * b[5] - w * 0.016_898;
            let p = b.iter().sum::<f32>() + w * 0.5362;
            b[6] = w * 0.115_926;
            p
        })
        .collect();
    let gain = rms(&loud) / 10f32.powf(db / 20.0) / rms(&noise).max(1e-9);
    let mut out = head.to_vec();
    for (s, n) in pcm.iter().zip(&noise) {
        out.extend(((s + n * gain).clamp(-32768.0, 32767.0) as i16).to_le_bytes());
    }
    std::fs::write(wav, out)?;
    Ok(())
}

/// `cargo xtask rig -- CMD ARGS`: run any command inside a private desktop (for benchmarks, debugging).
fn rig_shell(args: &[String]) -> Result<()> {
    let args: Vec<&String> = args.iter().skip_while(|a| *a == "--").collect();
    let Some((prog, rest)) = args.split_first() else {
        bail!("usage: cargo xtask rig -- CMD [ARGS]")
    };
    ensure_packages(RUN_PKGS)?;
    let rig = Rig::start()?;
    let mut c = rig.cmd(prog);
    // The models where `cargo xtask models` put them (tests in the rig use a data dir of
    // their own).
    if let Ok(d) = models_dir().map(|d| d.is_dir().then_some(d)) {
        if let Some(d) = d {
            c.env("VOXDESK_MODELS_DIR", d);
        }
    }
    let st = c.args(rest).current_dir(root()).status()?;
    drop(rig);
    if !st.success() {
        bail!("{prog} exited with {st}");
    }
    Ok(())
}

/// Render the UI fixtures: each page × theme × scale to a 1920x1080 PNG plus its DOM ground truth.
fn fixtures() -> Result<()> {
    ensure_packages(FIXTURE_PKGS)?;
    let pages = root().join("tests/fixtures/pages");
    let out = root().join("tests/fixtures/ui");
    std::fs::create_dir_all(&out)?;
    let profile = tempfile_dir::Dir::new("voxdesk-chromium")?;
    // The first two pages in every variant, with a "changed" frame for incremental passes; the
    // widened set (terminal, code, menus with shortcuts, icon grid, chat and mail, calendar and
    // spreadsheet) light and dark at 1x and light at 2x, which keeps the PNGs few.
    let pages_variants: &[(&str, &[(&str, u32)])] = &[
        (
            "files",
            &[("light", 1), ("light", 2), ("dark", 1), ("dark", 2)],
        ),
        (
            "settings",
            &[("light", 1), ("light", 2), ("dark", 1), ("dark", 2)],
        ),
        ("terminal", &[("light", 1), ("dark", 1), ("light", 2)]),
        ("code", &[("light", 1), ("dark", 1), ("light", 2)]),
        ("menus", &[("light", 1), ("dark", 1), ("light", 2)]),
        ("icons", &[("light", 1), ("dark", 1), ("light", 2)]),
        ("chat", &[("light", 1), ("dark", 1), ("light", 2)]),
        ("calendar", &[("light", 1), ("dark", 1), ("light", 2)]),
    ];
    for &(page, variants) in pages_variants {
        let html = pages.join(format!("{page}.html"));
        for &(theme, scale) in variants {
            let name = format!("{page}-{theme}-{scale}x");
            render(&html, theme, scale, false, &out.join(&name), profile.path())?;
            let has_change = std::fs::read_to_string(&html)?.contains("data-change");
            if theme == "light" && has_change {
                let changed = out.join(format!("{name}.changed"));
                render(&html, theme, scale, true, &changed, profile.path())?;
            }
        }
    }
    Ok(())
}

/// Chromium's window chrome in `--dump-dom` mode: the viewport is this much shorter than the
/// window (measured: 143 CSS px), while `--screenshot` gives the window size as the viewport.
const DUMP_DOM_CHROME: u32 = 143;

fn chromium(profile: &Path, scale: u32, w: u32, h: u32) -> Command {
    let mut c = Command::new("chromium");
    c.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--hide-scrollbars",
        "--font-render-hinting=none",
    ])
    .arg(format!("--user-data-dir={}", profile.display()))
    .arg(format!("--force-device-scale-factor={scale}"))
    .arg(format!("--window-size={w},{h}"))
    .stderr(Stdio::null());
    c
}

fn render(
    page: &Path,
    theme: &str,
    scale: u32,
    changed: bool,
    out: &Path,
    profile: &Path,
) -> Result<()> {
    let url = format!(
        "file://{}?theme={theme}{}",
        page.display(),
        if changed { "&changed=1" } else { "" }
    );
    render_url(&url, scale, out, profile, !changed)
}

/// Renders `url` at `scale` to `out`.png (1920x1080 device pixels) and, with `ground_truth`, the
/// page's ground truth (its `<script id="gt">`) to `out`.json.
fn render_url(url: &str, scale: u32, out: &Path, profile: &Path, ground_truth: bool) -> Result<()> {
    let (w, h) = (1920 / scale, 1080 / scale);
    let png = PathBuf::from(format!("{}.png", out.display()));
    run(chromium(profile, scale, w, h)
        .arg(format!("--screenshot={}", png.display()))
        .arg(url)
        .stdout(Stdio::null()))?;
    if !ground_truth {
        return Ok(());
    }
    let dom = chromium(profile, scale, w, h + DUMP_DOM_CHROME)
        .arg("--dump-dom")
        .arg(url)
        .output()?;
    let dom = String::from_utf8_lossy(&dom.stdout);
    let start = dom
        .find("<script id=\"gt\" type=\"application/json\">")
        .context("no ground truth in the dumped DOM")?;
    let body = &dom[start..];
    let json = &body[body.find('>').unwrap() + 1
        ..body
            .find("</script>")
            .context("unterminated ground truth")?];
    let json = json
        .replace("&amp;", "&")
        .replace("&lt;", "<")
        .replace("&gt;", ">");
    if json.trim().is_empty() {
        bail!("{url}: empty ground truth (did the page's script fail?)");
    }
    let size = |key: &str| {
        json.split(&format!("\"{key}\":"))
            .nth(1)
            .and_then(|s| s.split(',').next())
            .and_then(|s| s.parse::<u32>().ok())
    };
    if size("width") != Some(1920) || size("height") != Some(1080) {
        bail!(
            "{}: ground truth viewport {:?}x{:?} does not match the 1920x1080 screenshot",
            out.display(),
            size("width"),
            size("height")
        );
    }
    std::fs::write(PathBuf::from(format!("{}.json", out.display())), json)?;
    eprintln!("xtask: {}", png.display());
    Ok(())
}
