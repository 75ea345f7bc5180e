//! `voxdesk bench apps`: real applications on the virtual desktop captured with truth from their accessibility tree (the task suite's apps, light and dark), for `voxdesk bench eyes --apps`: screens no template drew and nothing was tuned on.

use std::path::Path;

use anyhow::{Context, Result};
use serde_json::json;

use voxdesk_core::semantic::{Node, Role};
use voxdesk_desk::eyes::{Eyes, ScreenEyes};
use voxdesk_tasks as task_suite;

/// Roles whose accessible name is drawn as the element's own text.
const TEXT_ROLES: &[Role] = &[
    Role::LABEL,
    Role::STATIC,
    Role::PUSH_BUTTON,
    Role::TOGGLE_BUTTON,
    Role::CHECK_BOX,
    Role::RADIO_BUTTON,
    Role::MENU,
    Role::MENU_ITEM,
    Role::CHECK_MENU_ITEM,
    Role::RADIO_MENU_ITEM,
    Role::PAGE_TAB,
    Role::LINK,
    Role::LIST_ITEM,
    Role::TABLE_CELL,
    Role::TREE_ITEM,
];

/// The text an element draws, by what the tree says of it: its name for the roles above (a
/// button no wider than 1.5 times its height is taken for an icon: its name is not drawn), a
/// field's value; one line of at most 60 characters. None: not drawn text, or not knowable.
pub fn drawn_text(n: &Node) -> Option<&str> {
    let text = if n.role == Role::PASSWORD_TEXT {
        return None;
    } else if n.is_field() {
        n.value.as_deref()?
    } else if TEXT_ROLES.contains(&n.role) {
        let iconic = matches!(n.role, Role::PUSH_BUTTON | Role::TOGGLE_BUTTON)
            && (n.rect.w as f64) < 1.5 * n.rect.h as f64;
        if iconic {
            return None;
        }
        n.name.as_str()
    } else {
        return None;
    };
    let text = text.trim();
    (!text.is_empty()
        && !text.contains('\n')
        && text.chars().count() <= 60
        && n.rect.w > 4
        && n.rect.h > 4)
        .then_some(text)
}

/// Start each app of the task suite that has a tree, light and dark where it has a theme,
/// and write `app-NAME.png` and its truth `app-NAME.json` into `out`.
pub fn apps(out: &Path) -> Result<String> {
    std::fs::create_dir_all(out).with_context(|| format!("creating {}", out.display()))?;
    let settings = voxdesk_core::config::Settings::default();
    let mut eyes = ScreenEyes::open(&settings)?;
    let mut report = String::new();
    let names = task_suite::NAMES
        .iter()
        .chain(task_suite::WIDE)
        .chain(task_suite::ASIDE);
    for name in names {
        for dark in [false, true] {
            let work = super::bench_tasks::Work(task_suite::workdir()?);
            let mut t = task_suite::prepare(name, &work.0)?;
            let themed = t.env.iter().any(|(k, _)| *k == "GTK_THEME");
            if dark && (themed || !t.env.iter().any(|(k, _)| *k == "GTK_MODULES")) {
                // Dark only where the app follows GTK's theme and the task has not set one.
                continue;
            }
            if dark {
                t.env.push(("GTK_THEME", "Adwaita:dark".into()));
            }
            let asked = if dark { "dark" } else { "light" };
            let app = match super::bench_tasks::start(&t) {
                Ok(a) => a,
                Err(e) => {
                    report.push_str(&format!("{name} {asked}: not started: {e}\n"));
                    continue;
                }
            };
            let f = eyes.capture()?;
            let focused = eyes.focused();
            let r = eyes.perceive(&f, true, focused.as_ref())?;
            drop(app);
            let Some(tree) = r.tree else {
                report.push_str(&format!(
                    "{name} {asked}: no tree ({})\n",
                    r.no_tree.unwrap_or_default()
                ));
                continue;
            };
            let (w, h) = f.image.dimensions();
            let frame = voxdesk_core::geometry::Rect::new(0, 0, w as i32, h as i32);
            let mut labels: Vec<(String, voxdesk_core::geometry::Rect)> = tree
                .nodes
                .iter()
                .filter(|n| n.rect.intersection(&frame) == n.rect)
                .filter_map(|n| drawn_text(n).map(|t| (t.to_string(), n.rect)))
                .collect();
            labels.sort_by_key(|(t, r)| (r.y, r.x, t.clone()));
            labels.dedup();
            // The theme as drawn (a web page has its own).
            let theme = if dark_around(&f.image, &labels) {
                "dark"
            } else {
                "light"
            };
            if dark && theme == "light" {
                report.push_str(&format!(
                    "{name} dark: the app does not follow GTK's theme\n"
                ));
                continue;
            }
            if labels.is_empty() {
                report.push_str(&format!("{name} {asked}: a tree with no drawn text\n"));
                continue;
            }
            let stem = format!("app-{name}-{theme}-1x");
            let mut png = Vec::new();
            f.image
                .write_to(&mut std::io::Cursor::new(&mut png), image::ImageFormat::Png)?;
            std::fs::write(out.join(format!("{stem}.png")), png)?;
            let truth = json!({
                "width": w, "height": h, "scale": 1.0, "theme": theme,
                "truth": "accessibility tree",
                "labels": labels.iter().map(|(t, r)| json!({
                    "text": t,
                    "box": {"x": r.x, "y": r.y, "w": r.w, "h": r.h},
                    "font_px": 0.0,
                    "kind": "app",
                })).collect::<Vec<_>>(),
            });
            std::fs::write(
                out.join(format!("{stem}.json")),
                serde_json::to_string_pretty(&truth)?,
            )?;
            report.push_str(&format!("{stem}: {} labels\n", labels.len()));
        }
    }
    Ok(report)
}

/// Is the mean luma around the labels that of a dark theme?
fn dark_around(img: &image::RgbaImage, labels: &[(String, voxdesk_core::geometry::Rect)]) -> bool {
    let (mut sum, mut n) = (0u64, 0u64);
    for (_, r) in labels {
        for y in r.y.max(0)..r.bottom().min(img.height() as i32) {
            for x in r.x.max(0)..r.right().min(img.width() as i32) {
                let p = img.get_pixel(x as u32, y as u32).0;
                sum += (p[0] as u64 * 299 + p[1] as u64 * 587 + p[2] as u64 * 114) / 1000;
                n += 1;
            }
        }
    }
    n > 0 && sum / n < 110
}

#[cfg(test)]
mod tests {
    use super::*;
    use voxdesk_core::geometry::Rect;

    fn node(role: Role, name: &str, w: i32, h: i32) -> Node {
        Node {
            role,
            name: name.into(),
            rect: Rect::new(0, 0, w, h),
            ..Default::default()
        }
    }

    #[test]
    fn drawn_text_is_a_named_text_element_not_an_icon_or_a_password() {
        assert_eq!(
            drawn_text(&node(Role::PUSH_BUTTON, "Save", 80, 30)),
            Some("Save")
        );
        assert_eq!(drawn_text(&node(Role::PUSH_BUTTON, "Open", 30, 30)), None);
        assert_eq!(
            drawn_text(&node(Role::LABEL, "  Name: ", 60, 20)),
            Some("Name:")
        );
        assert_eq!(drawn_text(&node(Role::LABEL, "two\nlines", 60, 40)), None);
        assert_eq!(drawn_text(&node(Role::FRAME, "Mousepad", 600, 400)), None);
        assert_eq!(
            drawn_text(&node(Role::PASSWORD_TEXT, "Password", 200, 30)),
            None
        );
    }
}
