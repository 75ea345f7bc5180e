//! One read of a window's accessibility tree: breadth first, every node of a level asked at once (the calls are pipelined on one connection), within a time budget and a size cap; then the boxes, values and labels of the elements worth a target.

use std::time::{Duration, Instant};

use futures_util::future::join_all;
use zbus::zvariant::{OwnedObjectPath, OwnedValue};
use zbus::Connection;

use voxdesk_core::geometry::Rect;
use voxdesk_core::semantic::{Dialog, Node, Role, State, States, Tree};

use super::A11yError;

const ACCESSIBLE: &str = "org.a11y.atspi.Accessible";
const COMPONENT: &str = "org.a11y.atspi.Component";
const TEXT: &str = "org.a11y.atspi.Text";
const PROPERTIES: &str = "org.freedesktop.DBus.Properties";
/// `ATSPI_RELATION_LABELLED_BY`.
const LABELLED_BY: u32 = 2;
/// `ATSPI_COORD_TYPE_SCREEN`.
const SCREEN: u32 = 0;
/// A container with more children than this is not expanded (a spreadsheet reports 2³⁰).
pub const MAX_CHILDREN: i32 = 2000;
/// A field's value is kept up to this many characters.
const MAX_VALUE: usize = 4000;

/// An accessible object: the application's bus name and the object's path.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Ref {
    pub bus: String,
    pub path: String,
}

impl Ref {
    pub fn key(&self) -> String {
        format!("{}{}", self.bus, self.path)
    }
    fn from_wire((bus, path): (String, OwnedObjectPath)) -> Ref {
        Ref {
            bus,
            path: path.as_str().to_string(),
        }
    }
    /// The null reference AT-SPI sends for "none".
    fn is_null(&self) -> bool {
        self.path == "/org/a11y/atspi/null" || self.bus.is_empty()
    }
}

/// What one round of calls tells of a node.
#[derive(Debug, Clone, Default)]
pub(crate) struct Basic {
    pub role: Role,
    pub states: States,
    pub name: String,
    pub children: i32,
}

fn bus_err(e: zbus::Error) -> A11yError {
    A11yError::Bus(e.to_string())
}

async fn call<B, R>(
    conn: &Connection,
    r: &Ref,
    iface: &str,
    method: &str,
    body: &B,
) -> Result<R, A11yError>
where
    B: serde::Serialize + zbus::zvariant::DynamicType,
    R: for<'d> serde::Deserialize<'d> + zbus::zvariant::Type,
{
    let m = conn
        .call_method(
            Some(r.bus.as_str()),
            r.path.as_str(),
            Some(iface),
            method,
            body,
        )
        .await
        .map_err(bus_err)?;
    m.body().deserialize::<R>().map_err(bus_err)
}

pub(crate) async fn children(conn: &Connection, r: &Ref) -> Result<Vec<Ref>, A11yError> {
    let v: Vec<(String, OwnedObjectPath)> = call(conn, r, ACCESSIBLE, "GetChildren", &()).await?;
    Ok(v.into_iter()
        .map(Ref::from_wire)
        .filter(|r| !r.is_null())
        .collect())
}

pub(crate) async fn basic(conn: &Connection, r: &Ref) -> Result<Basic, A11yError> {
    let role = call::<_, u32>(conn, r, ACCESSIBLE, "GetRole", &());
    let states = call::<_, Vec<u32>>(conn, r, ACCESSIBLE, "GetState", &());
    // One property at a time: Qt 5 drops off the bus on `Properties.GetAll`.
    let name = call::<_, OwnedValue>(conn, r, PROPERTIES, "Get", &(ACCESSIBLE, "Name"));
    let count = call::<_, OwnedValue>(conn, r, PROPERTIES, "Get", &(ACCESSIBLE, "ChildCount"));
    let (role, states, name, count) = futures_util::future::join4(role, states, name, count).await;
    let name = name
        .ok()
        .and_then(|v| String::try_from(v).ok())
        .unwrap_or_default();
    let children = count.ok().and_then(|v| i32::try_from(v).ok()).unwrap_or(-1);
    Ok(Basic {
        role: Role(role?),
        states: States::from_words(&states?[..]),
        // GTK pads hidden menu items' names with spaces.
        name: name.trim().to_string(),
        children,
    })
}

pub(crate) async fn extents(conn: &Connection, r: &Ref) -> Option<Rect> {
    let (x, y, w, h): (i32, i32, i32, i32) = call(conn, r, COMPONENT, "GetExtents", &(SCREEN,))
        .await
        .ok()?;
    visible_box(x, y, w, h)
}

/// A box worth clicking: hidden GTK items report (-2³¹, -2³¹, 1, 1), hidden Chromium nodes
/// 0×0 at the window's origin.
pub fn visible_box(x: i32, y: i32, w: i32, h: i32) -> Option<Rect> {
    (w > 1 && h > 1 && x > -10_000 && y > -10_000 && x < 100_000 && y < 100_000)
        .then(|| Rect::new(x, y, w, h))
}

pub(crate) async fn text(conn: &Connection, r: &Ref) -> Option<String> {
    let s: String = call(conn, r, TEXT, "GetText", &(0i32, -1i32)).await.ok()?;
    Some(s.chars().take(MAX_VALUE).collect())
}

/// The name of what labels `r` (its `labelled-by` relation), when it has one.
async fn labelled_by(conn: &Connection, r: &Ref) -> Option<String> {
    let set: Vec<(u32, Vec<(String, OwnedObjectPath)>)> =
        call(conn, r, ACCESSIBLE, "GetRelationSet", &())
            .await
            .ok()?;
    let by: Vec<Ref> = set
        .into_iter()
        .filter(|(kind, _)| *kind == LABELLED_BY)
        .flat_map(|(_, to)| to.into_iter().map(Ref::from_wire))
        .collect();
    let names = join_all(by.iter().map(|l| name_of(conn, l))).await;
    let name = names
        .into_iter()
        .flatten()
        .filter(|n| !n.is_empty())
        .collect::<Vec<_>>()
        .join(" ");
    (!name.is_empty()).then_some(name)
}

async fn name_of(conn: &Connection, r: &Ref) -> Option<String> {
    let v: OwnedValue = call(conn, r, PROPERTIES, "Get", &(ACCESSIBLE, "Name"))
        .await
        .ok()?;
    String::try_from(v).ok().map(|s| s.trim().to_string())
}

/// Is this node worth a box: a control, a label (a dialog's question, a field's name), a
/// dialog, a web document (whether it is still loading)?
pub(crate) fn wanted(b: &Basic) -> bool {
    // pcmanfm's icons never say "showing"; anything else that does not is not on screen (a
    // select's closed menu, a hidden page).
    let on_screen = b.states.has(State::SHOWING) || b.role == Role::ICON;
    on_screen
        && (b.role.is_interactive()
            || b.role.is_label()
            || b.role.is_dialog()
            || b.role == Role::DOCUMENT_WEB)
}

/// Worth walking into: showing (pcmanfm's icons are not "showing" themselves, but their view
/// is), not a menu closed, not a container too big to list.
fn expand(b: &Basic) -> bool {
    b.children != 0
        && (b.states.has(State::SHOWING) || b.role == Role::WINDOW || b.role == Role::FRAME)
        && !(matches!(b.role, Role::MENU | Role::MENU_ITEM) && !b.states.has(State::SHOWING))
}

/// What the walk found before boxes were asked for.
struct Found {
    r: Ref,
    b: Basic,
}

/// Read the tree of `window` (a top-level accessible object of the application).
pub(crate) async fn read(
    conn: &Connection,
    window: &Ref,
    budget: Duration,
    cap: usize,
) -> Result<Tree, A11yError> {
    let t0 = Instant::now();
    let mut partial = false;
    let mut found: Vec<Found> = Vec::new();
    let mut level = vec![window.clone()];
    let mut visited = 0usize;
    let mut root: Option<Basic> = None;
    while !level.is_empty() {
        if t0.elapsed() > budget || visited >= cap {
            partial = true;
            break;
        }
        let infos = join_all(level.iter().map(|r| basic(conn, r))).await;
        let mut open = Vec::new();
        for (r, b) in level.into_iter().zip(infos) {
            // A node that went away mid-walk is not an error: the tree is alive.
            let Ok(b) = b else { continue };
            visited += 1;
            if root.is_none() {
                root = Some(b.clone());
            }
            if b.children > MAX_CHILDREN {
                partial = true;
            } else if expand(&b) {
                open.push(r.clone());
            }
            if wanted(&b) {
                found.push(Found { r, b });
            }
        }
        let kids = join_all(open.iter().map(|r| children(conn, r))).await;
        level = kids.into_iter().flatten().flatten().collect();
        if visited + level.len() > cap {
            level.truncate(cap.saturating_sub(visited));
            partial = true;
        }
    }
    let Some(root) = root else {
        return Err(A11yError::Bus("the window went away".into()));
    };
    // Boxes, then values and labels for the fields and the unnamed.
    let boxes = join_all(found.iter().map(|f| extents(conn, &f.r))).await;
    let mut kept: Vec<(Found, Rect)> = found
        .into_iter()
        .zip(boxes)
        .filter_map(|(f, b)| Some((f, b?)))
        .collect();
    let values = join_all(kept.iter().map(|(f, _)| async {
        let field = f.b.role.is_field() && f.b.role != Role::PASSWORD_TEXT;
        if field && (f.b.states.has(State::EDITABLE) || f.b.role == Role::ENTRY) {
            text(conn, &f.r).await
        } else {
            None
        }
    }))
    .await;
    let labels = join_all(kept.iter().map(|(f, _)| async {
        let unnamed = f.b.name.is_empty()
            && (f.b.role.is_field() || f.b.role.is_interactive())
            && !f.b.role.is_label();
        if unnamed {
            labelled_by(conn, &f.r).await
        } else {
            None
        }
    }))
    .await;
    let mut nodes = Vec::with_capacity(kept.len());
    for (((f, rect), value), label) in kept.drain(..).zip(values).zip(labels) {
        nodes.push(Node {
            key: f.r.key(),
            role: f.b.role,
            name: label.unwrap_or(f.b.name),
            states: f.b.states,
            value,
            rect,
        });
    }
    let window_box = extents(conn, window).await;
    let dialogs = dialogs_of(&root, window_box, &nodes);
    Ok(Tree {
        nodes,
        dialogs,
        partial,
        generation: 0,
        toolkit: String::new(),
        read_ms: t0.elapsed().as_secs_f64() * 1000.0,
        walked: true,
    })
}

/// The dialogs in a window: the window itself when it is one, and any dialog or alert inside
/// it, each with the labels inside its box read in order as its text.
pub(crate) fn dialogs_of(root: &Basic, window_box: Option<Rect>, nodes: &[Node]) -> Vec<Dialog> {
    let mut out = Vec::new();
    let text_in = |r: &Rect, title: &str| {
        let mut labels: Vec<&Node> = nodes
            .iter()
            .filter(|n| n.role.is_label() && !n.name.is_empty() && r.intersects(&n.rect))
            .collect();
        labels.sort_by_key(|n| (n.rect.y, n.rect.x));
        let mut parts: Vec<&str> = Vec::new();
        if !title.is_empty() {
            parts.push(title);
        }
        parts.extend(
            labels
                .iter()
                .map(|n| n.name.as_str())
                .filter(|t| *t != title),
        );
        parts.join("\n")
    };
    if root.role.is_dialog() {
        if let Some(r) = window_box {
            out.push(Dialog {
                title: root.name.clone(),
                text: text_in(&r, &root.name),
                rect: r,
            });
        }
    }
    for n in nodes.iter().filter(|n| n.role.is_dialog()) {
        out.push(Dialog {
            title: n.name.clone(),
            text: text_in(&n.rect, &n.name),
            rect: n.rect,
        });
    }
    out
}

/// Every kept node's box as it reads now (`None`: gone or hidden), all asked at once.
async fn boxes_now(conn: &Connection, tree: &Tree) -> Vec<Option<Rect>> {
    let refs: Vec<Option<Ref>> = tree
        .nodes
        .iter()
        .map(|n| {
            let at = n.key.find('/')?;
            Some(Ref {
                bus: n.key[..at].to_string(),
                path: n.key[at..].to_string(),
            })
        })
        .collect();
    join_all(refs.iter().map(|r| async move {
        match r {
            Some(r) => extents(conn, r).await,
            None => None,
        }
    }))
    .await
}

/// Wait until the kept nodes' boxes have read the same for `still`, or `max` has passed.
pub(crate) async fn hold_still(conn: &Connection, tree: &Tree, still: Duration, max: Duration) {
    let t0 = Instant::now();
    let mut last = boxes_now(conn, tree).await;
    let mut since = Instant::now();
    while since.elapsed() < still && t0.elapsed() < max {
        async_io::Timer::after(Duration::from_millis(100)).await;
        let now = boxes_now(conn, tree).await;
        if now != last {
            last = now;
            since = Instant::now();
        }
    }
}

/// Do the kept nodes still have the boxes they were read with?
pub(crate) async fn same_boxes(conn: &Connection, tree: &Tree) -> bool {
    let now = boxes_now(conn, tree).await;
    tree.nodes.iter().zip(now).all(|(n, b)| b == Some(n.rect))
}

/// Re-read a few nodes in place (their states, name and value changed; their box did not).
pub(crate) async fn refresh(conn: &Connection, tree: &mut Tree, keys: &[String]) -> bool {
    let targets: Vec<(usize, Ref)> = tree
        .nodes
        .iter()
        .enumerate()
        .filter(|(_, n)| keys.contains(&n.key))
        .filter_map(|(i, n)| {
            let at = n.key.find('/')?;
            Some((
                i,
                Ref {
                    bus: n.key[..at].to_string(),
                    path: n.key[at..].to_string(),
                },
            ))
        })
        .collect();
    let reads = join_all(targets.iter().map(|(i, r)| {
        let field = tree.nodes[*i].is_field() && tree.nodes[*i].role != Role::PASSWORD_TEXT;
        async move {
            let b = basic(conn, r).await;
            let v = if field { text(conn, r).await } else { None };
            (b, v)
        }
    }))
    .await;
    for ((i, _), (b, v)) in targets.iter().zip(reads) {
        let Ok(b) = b else { return false };
        let n = &mut tree.nodes[*i];
        n.states = b.states;
        if !b.name.is_empty() {
            n.name = b.name;
        }
        if v.is_some() {
            n.value = v;
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hidden_and_empty_boxes_are_dropped() {
        assert_eq!(visible_box(-2147483648, -2147483648, 1, 1), None);
        assert_eq!(visible_box(0, 0, 0, 0), None);
        assert_eq!(visible_box(10, 20, 30, 1), None);
        assert_eq!(visible_box(10, 20, 30, 12), Some(Rect::new(10, 20, 30, 12)));
    }

    #[test]
    fn a_dialog_is_read_whole_in_reading_order() {
        let label = |name: &str, y| Node {
            key: format!(":1.2/{y}"),
            role: Role::LABEL,
            name: name.into(),
            rect: Rect::new(100, y, 200, 20),
            ..Node::default()
        };
        let button = Node {
            key: ":1.2/b".into(),
            role: Role::PUSH_BUTTON,
            name: "Delete".into(),
            rect: Rect::new(300, 200, 80, 30),
            ..Node::default()
        };
        let root = Basic {
            role: Role::DIALOG,
            name: "Confirm".into(),
            ..Basic::default()
        };
        let nodes = vec![
            label("It will be gone for good.", 150),
            button,
            label("Delete the folder \"reports\"?", 100),
        ];
        let d = dialogs_of(&root, Some(Rect::new(50, 50, 400, 250)), &nodes);
        assert_eq!(d.len(), 1);
        assert_eq!(
            d[0].text,
            "Confirm\nDelete the folder \"reports\"?\nIt will be gone for good."
        );
        let frame = Basic {
            role: Role::FRAME,
            ..Basic::default()
        };
        assert!(dialogs_of(&frame, Some(Rect::new(0, 0, 9, 9)), &nodes).is_empty());
    }
}
