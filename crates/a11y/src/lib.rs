//! The accessibility tree (AT-SPI2 over D-Bus) of the focused window: the elements worth a target with their role, name, states and value, read within a time budget and a size cap, and kept between observations while the application's change events say nothing moved and its elements' boxes read the same. The product's only zbus user.
//!
//! Beside perception on the core: it names no other voxdesk crate, so nothing here can
//! reach the pixels (Cargo refuses the `use`):
//! ```compile_fail
//! use voxdesk_perception::Perceiver;
//! ```
//!
//! Why zbus and not the `atspi` crate: zbus is already in the graph (through xcap), and the
//! reads needed are eight methods; `atspi` 0.30 sends `Collection.GetMatches` rules GTK
//! misreads and names a cache item's description `name` (`../shared/atspi-facts.md`).

mod events;
mod walk;

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::future::join_all;
use zbus::Connection;

use voxdesk_core::geometry::Rect;
use voxdesk_core::semantic::{Role, State, Tree};

pub use events::{kind_of, Change, Changes, Kind};
pub use walk::{visible_box, Ref, MAX_CHILDREN};

/// Why the tree could not be read.
#[derive(Debug, thiserror::Error)]
pub enum A11yError {
    #[error("no session bus ({0}): the accessibility bus is found through it (DBUS_SESSION_BUS_ADDRESS)")]
    NoSessionBus(String),
    #[error("no accessibility bus ({0}): install at-spi2-core, or turn assistive technologies on in the desktop's settings")]
    NoBus(String),
    #[error("the accessibility bus: {0}")]
    Bus(String),
}

/// The focused window as the X server tells it.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Window {
    pub pid: Option<u32>,
    pub title: String,
    /// Its client area in screen pixels.
    pub rect: Option<Rect>,
}

/// An application on the accessibility bus.
#[derive(Debug, Clone, PartialEq)]
pub struct App {
    pub r: Ref,
    pub pid: Option<u32>,
    pub name: String,
    pub toolkit: String,
    /// Its top-level windows (0: it exposes nothing, e.g. Chromium without accessibility on).
    pub windows: usize,
}

/// Budgets of one read (`[a11y]` in the settings).
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub budget: Duration,
    /// Nodes visited at most.
    pub cap: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            budget: Duration::from_millis(400),
            cap: 5000,
        }
    }
}

struct Kept {
    app: Ref,
    pid: Option<u32>,
    title: String,
    rect: Option<Rect>,
    /// The last change seen before the read began.
    seen: u64,
    tree: Tree,
}

/// Reads the focused window's tree; owns the connection to the accessibility bus and the
/// event watcher's.
pub struct Reader {
    conn: Connection,
    watcher: Connection,
    limits: Limits,
    changes: Arc<Changes>,
    kept: Option<Kept>,
    generation: u64,
    apps: Vec<App>,
}

fn bus_err(e: impl std::fmt::Display) -> A11yError {
    A11yError::Bus(e.to_string())
}

async fn session_call<R>(
    iface: &str,
    method: &str,
    body: &(impl serde::Serialize + zbus::zvariant::DynamicType),
) -> Result<R, A11yError>
where
    R: for<'d> serde::Deserialize<'d> + zbus::zvariant::Type,
{
    let s = Connection::session()
        .await
        .map_err(|e| A11yError::NoSessionBus(e.to_string()))?;
    let m = s
        .call_method(
            Some("org.a11y.Bus"),
            "/org/a11y/bus",
            Some(iface),
            method,
            body,
        )
        .await
        .map_err(|e| A11yError::NoBus(e.to_string()))?;
    m.body().deserialize::<R>().map_err(bus_err)
}

/// The accessibility bus's address (`org.a11y.Bus.GetAddress` on the session bus, which
/// starts it when the desktop has not).
pub fn bus_address() -> Result<String, A11yError> {
    async_io::block_on(session_call::<String>("org.a11y.Bus", "GetAddress", &()))
}

/// The desktop's switch for assistive technologies (`org.a11y.Status.IsEnabled`): toolkits
/// that ask it (Chromium, Electron) expose their tree only when it is on.
pub fn enabled() -> Option<bool> {
    let v: zbus::zvariant::OwnedValue = async_io::block_on(session_call(
        "org.freedesktop.DBus.Properties",
        "Get",
        &("org.a11y.Status", "IsEnabled"),
    ))
    .ok()?;
    bool::try_from(v).ok()
}

/// How long the boxes of content that moved without an event must hold still before the tree
/// is read again, and the most that is waited for it.
const MOVING_STILL: Duration = Duration::from_millis(600);
const MOVING_MAX: Duration = Duration::from_millis(1500);

/// An application that does not answer a call within this is treated as gone for that call (a
/// hung app never hangs an observation: the walk's budget is checked between levels).
const CALL_TIMEOUT: Duration = Duration::from_millis(300);

async fn connect(address: &str) -> Result<Connection, A11yError> {
    zbus::connection::Builder::address(address)
        .map_err(|e| A11yError::NoBus(e.to_string()))?
        .method_timeout(CALL_TIMEOUT)
        .build()
        .await
        .map_err(|e| A11yError::NoBus(e.to_string()))
}

const REGISTRY: &str = "org.a11y.atspi.Registry";
const ROOT: &str = "/org/a11y/atspi/accessible/root";

impl Reader {
    /// Connect to the accessibility bus and start listening for change events.
    pub fn open(limits: Limits) -> Result<Reader, A11yError> {
        let address = bus_address()?;
        let conn = async_io::block_on(connect(&address))?;
        let watcher = async_io::block_on(connect(&address))?;
        let changes = Arc::new(Changes::default());
        let (w, c) = (watcher.clone(), changes.clone());
        std::thread::Builder::new()
            .name("a11y-events".into())
            .spawn(move || events::watch(w, c))
            .map_err(bus_err)?;
        Ok(Reader {
            conn,
            watcher,
            limits,
            changes,
            kept: None,
            generation: 0,
            apps: Vec::new(),
        })
    }

    /// The applications on the bus (for `doctor` and the health report).
    pub fn apps(&mut self) -> Result<Vec<App>, A11yError> {
        self.apps = async_io::block_on(list_apps(&self.conn))?;
        Ok(self.apps.clone())
    }

    /// Forget the kept tree: the next read walks again (a cold read, for the benchmark).
    pub fn forget(&mut self) {
        self.kept = None;
    }

    /// Whether change events arrive (without them every observation reads the tree again).
    pub fn listening(&self) -> bool {
        self.changes
            .listening
            .load(std::sync::atomic::Ordering::SeqCst)
    }

    /// The tree of `window`; `None` when its application exposes none (xterm, xcalc, a
    /// browser started without accessibility). Kept from the last call while no change event
    /// came from its application and its elements' boxes read the same; refreshed in place
    /// when only states or text changed.
    pub fn tree(&mut self, window: &Window) -> Result<Option<Tree>, A11yError> {
        let t0 = Instant::now();
        let conn = &self.conn;
        if let Some(k) = self.kept.as_mut() {
            let same = k.pid == window.pid && k.title == window.title && k.rect == window.rect;
            if same
                && self
                    .changes
                    .listening
                    .load(std::sync::atomic::Ordering::SeqCst)
            {
                // Content that scrolls moves every box without a word on the bus (Chromium
                // sends no event for a page scrolled by the wheel or a key): the kept boxes are
                // read again, all at once, and a tree whose elements moved is read again.
                let still = async_io::block_on(walk::same_boxes(conn, &k.tree));
                if !still {
                    tracing::debug!(
                        "accessibility: {:?}'s elements moved without an event",
                        window.title
                    );
                    // Chromium moves the boxes of a scrolled page in steps, the last one some
                    // 400 ms after the pixels (measured: a first small step, 300 ms still, then
                    // the whole scroll): wait until they have held still for a while.
                    async_io::block_on(walk::hold_still(conn, &k.tree, MOVING_STILL, MOVING_MAX));
                }
                match self.changes.since(k.seen, &k.app.bus).filter(|_| still) {
                    Some(c) if c.is_empty() => {
                        let mut t = k.tree.clone();
                        t.walked = false;
                        t.read_ms = ms(t0);
                        return Ok(Some(t));
                    }
                    Some(c) if c.iter().all(|c| c.kind != Kind::Tree) => {
                        let mut keys: Vec<String> = c
                            .iter()
                            .filter(|c| c.kind == Kind::Node)
                            .map(|c| format!("{}{}", c.bus, c.path))
                            .collect();
                        keys.sort();
                        keys.dedup();
                        let (known, other): (Vec<String>, Vec<String>) = keys
                            .into_iter()
                            .partition(|key| k.tree.nodes.iter().any(|n| &n.key == key));
                        // A state or text that changed on an element not kept matters only
                        // if it is one worth a target now showing (a menu item greyed out
                        // while typing is not).
                        let matters = async_io::block_on(async {
                            let reads = join_all(other.iter().map(|key| {
                                let at = key.find('/').unwrap_or(key.len());
                                let r = Ref {
                                    bus: key[..at].to_string(),
                                    path: key[at..].to_string(),
                                };
                                async move { walk::basic(conn, &r).await }
                            }))
                            .await;
                            reads.into_iter().any(|b| b.is_ok_and(|b| walk::wanted(&b)))
                        });
                        if !matters {
                            let seen = self.changes.seq();
                            let mut t = k.tree.clone();
                            if known.is_empty()
                                || async_io::block_on(walk::refresh(conn, &mut t, &known))
                            {
                                if !known.is_empty() {
                                    self.generation += 1;
                                    t.generation = self.generation;
                                }
                                t.walked = false;
                                k.tree = t.clone();
                                k.seen = seen;
                                let mut t = t;
                                t.read_ms = ms(t0);
                                return Ok(Some(t));
                            }
                        }
                    }
                    _ => {}
                }
            }
        }
        if let Some(k) = &self.kept {
            tracing::debug!(
                "accessibility: reading {:?} again ({:?})",
                window.title,
                self.changes.since(k.seen, &k.app.bus).map(|c| c
                    .into_iter()
                    .filter(|c| c.kind == Kind::Tree)
                    .map(|c| c.what)
                    .take(3)
                    .collect::<Vec<_>>())
            );
        }
        self.kept = None;
        let seen = self.changes.seq();
        let Some((app, win)) = self.find(window)? else {
            return Ok(None);
        };
        let mut tree = async_io::block_on(walk::read(
            &self.conn,
            &win,
            self.limits.budget,
            self.limits.cap,
        ))?;
        self.generation += 1;
        tree.generation = self.generation;
        tree.toolkit = app.toolkit.clone();
        tree.read_ms = ms(t0);
        self.kept = Some(Kept {
            app: app.r.clone(),
            pid: window.pid,
            title: window.title.clone(),
            rect: window.rect,
            seen,
            tree: tree.clone(),
        });
        Ok(Some(tree))
    }

    /// The application object and top-level window that is `window`: by process, then by
    /// title; the app list is read again when the process is not on it.
    fn find(&mut self, window: &Window) -> Result<Option<(App, Ref)>, A11yError> {
        let mut fresh = false;
        if self.apps.is_empty()
            || !self
                .apps
                .iter()
                .any(|a| a.pid.is_some() && a.pid == window.pid)
        {
            self.apps = async_io::block_on(list_apps(&self.conn))?;
            fresh = true;
        }
        loop {
            let mut candidates: Vec<App> = self
                .apps
                .iter()
                .filter(|a| window.pid.is_some() && a.pid == window.pid)
                .cloned()
                .collect();
            if candidates.is_empty() {
                candidates = self.apps.clone();
            }
            if let Some(found) = async_io::block_on(pick_window(&self.conn, &candidates, window)) {
                return Ok(Some(found));
            }
            if fresh {
                return Ok(None);
            }
            self.apps = async_io::block_on(list_apps(&self.conn))?;
            fresh = true;
        }
    }
}

impl Drop for Reader {
    fn drop(&mut self) {
        // Ends the watcher's stream, and with it its thread.
        let w = self.watcher.clone();
        let _ = async_io::block_on(async move {
            futures_util::future::select(
                Box::pin(w.close()),
                Box::pin(async_io::Timer::after(Duration::from_millis(200))),
            )
            .await;
        });
    }
}

fn ms(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1000.0
}

async fn list_apps(conn: &Connection) -> Result<Vec<App>, A11yError> {
    let root = Ref {
        bus: REGISTRY.into(),
        path: ROOT.into(),
    };
    let refs = walk::children(conn, &root).await?;
    let infos = join_all(refs.into_iter().map(|r| async move {
        let pid = conn
            .call_method(
                Some("org.freedesktop.DBus"),
                "/org/freedesktop/DBus",
                Some("org.freedesktop.DBus"),
                "GetConnectionUnixProcessID",
                &(r.bus.as_str(),),
            )
            .await
            .ok()
            .and_then(|m| m.body().deserialize::<u32>().ok());
        let basic = walk::basic(conn, &r).await.unwrap_or_default();
        let toolkit = conn
            .call_method(
                Some(r.bus.as_str()),
                r.path.as_str(),
                Some("org.freedesktop.DBus.Properties"),
                "Get",
                &("org.a11y.atspi.Application", "ToolkitName"),
            )
            .await
            .ok()
            .and_then(|m| m.body().deserialize::<zbus::zvariant::OwnedValue>().ok())
            .and_then(|v| String::try_from(v).ok())
            .unwrap_or_default();
        App {
            r,
            pid,
            name: basic.name,
            toolkit,
            windows: basic.children.max(0) as usize,
        }
    }))
    .await;
    Ok(infos)
}

/// Among the applications' top-level windows, the one that is `window`: its title, the
/// `active` state, its box over the X window's.
async fn pick_window(conn: &Connection, apps: &[App], window: &Window) -> Option<(App, Ref)> {
    let tops = join_all(apps.iter().map(|a| async move {
        let kids = walk::children(conn, &a.r).await.unwrap_or_default();
        let infos = join_all(kids.iter().map(|k| async move {
            (
                walk::basic(conn, k).await.ok(),
                walk::extents(conn, k).await,
            )
        }))
        .await;
        kids.into_iter()
            .zip(infos)
            .map(move |(k, i)| (a, k, i))
            .collect::<Vec<_>>()
    }))
    .await;
    let mut best: Option<(i32, &App, Ref)> = None;
    for (a, k, (b, rect)) in tops.into_iter().flatten() {
        let Some(b) = b else { continue };
        let mut score = i32::from(window.pid.is_some() && a.pid == window.pid);
        if !window.title.is_empty() && b.name == window.title {
            score += 4;
        }
        if b.states.has(State::ACTIVE) {
            score += 2;
        }
        if let (Some(r), Some(w)) = (rect, window.rect) {
            if r.overlap_of_smaller(&w) > 0.5 {
                score += 2;
            }
        }
        if !b.states.has(State::SHOWING) && b.role != Role::WINDOW {
            score -= 3;
        }
        // Without the process to go by, the title must agree.
        let by_title_only = window.pid.is_none() || a.pid != window.pid;
        if by_title_only && b.name != window.title {
            continue;
        }
        if score > 0 && best.as_ref().is_none_or(|(s, _, _)| score > *s) {
            best = Some((score, a, k));
        }
    }
    best.map(|(_, a, k)| (a.clone(), k))
}
