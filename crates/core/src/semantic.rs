//! What an application's accessibility tree says of its elements (role, name, states, value, box), as plain data: the a11y reader produces it, perception fuses it with what OCR read, the rails and verification judge with it.

use crate::geometry::Rect;

/// An AT-SPI role (`AtspiRole`, the number on the bus).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Role(pub u32);

/// AT-SPI role names by number (at-spi2-core's `atspi-constants.h`, `ATSPI_ROLE_*`, lower case
/// with spaces as `GetRoleName` spells them).
const ROLE_NAMES: &[&str] = &[
    "invalid",
    "accelerator label",
    "alert",
    "animation",
    "arrow",
    "calendar",
    "canvas",
    "check box",
    "check menu item",
    "color chooser",
    "column header",
    "combo box",
    "date editor",
    "desktop icon",
    "desktop frame",
    "dial",
    "dialog",
    "directory pane",
    "drawing area",
    "file chooser",
    "filler",
    "focus traversable",
    "font chooser",
    "frame",
    "glass pane",
    "html container",
    "icon",
    "image",
    "internal frame",
    "label",
    "layered pane",
    "list",
    "list item",
    "menu",
    "menu bar",
    "menu item",
    "option pane",
    "page tab",
    "page tab list",
    "panel",
    "password text",
    "popup menu",
    "progress bar",
    "push button",
    "radio button",
    "radio menu item",
    "root pane",
    "row header",
    "scroll bar",
    "scroll pane",
    "separator",
    "slider",
    "spin button",
    "split pane",
    "status bar",
    "table",
    "table cell",
    "table column header",
    "table row header",
    "tearoff menu item",
    "terminal",
    "text",
    "toggle button",
    "tool bar",
    "tool tip",
    "tree",
    "tree table",
    "unknown",
    "viewport",
    "window",
    "extended",
    "header",
    "footer",
    "paragraph",
    "ruler",
    "application",
    "autocomplete",
    "editbar",
    "embedded",
    "entry",
    "chart",
    "caption",
    "document frame",
    "heading",
    "page",
    "section",
    "redundant object",
    "form",
    "link",
    "input method window",
    "table row",
    "tree item",
    "document spreadsheet",
    "document presentation",
    "document text",
    "document web",
    "document email",
    "comment",
    "list box",
    "grouping",
    "image map",
    "notification",
    "info bar",
    "level bar",
    "title bar",
    "block quote",
    "audio",
    "video",
    "definition",
    "article",
    "landmark",
    "log",
    "marquee",
    "math",
    "rating",
    "timer",
    "static",
    "math fraction",
    "math root",
    "subscript",
    "superscript",
    "description list",
    "description term",
    "description value",
    "footnote",
    "content deletion",
    "content insertion",
    "mark",
    "suggestion",
    "push button menu",
];

impl Role {
    pub const ALERT: Role = Role(2);
    pub const CALENDAR: Role = Role(5);
    pub const CHECK_BOX: Role = Role(7);
    pub const CHECK_MENU_ITEM: Role = Role(8);
    pub const COMBO_BOX: Role = Role(11);
    pub const DIALOG: Role = Role(16);
    pub const FRAME: Role = Role(23);
    pub const ICON: Role = Role(26);
    pub const LABEL: Role = Role(29);
    pub const LIST_ITEM: Role = Role(32);
    pub const MENU: Role = Role(33);
    pub const MENU_ITEM: Role = Role(35);
    pub const PAGE_TAB: Role = Role(37);
    pub const PASSWORD_TEXT: Role = Role(40);
    pub const PUSH_BUTTON: Role = Role(43);
    pub const RADIO_BUTTON: Role = Role(44);
    pub const RADIO_MENU_ITEM: Role = Role(45);
    pub const SLIDER: Role = Role(51);
    pub const SPIN_BUTTON: Role = Role(52);
    pub const TABLE_CELL: Role = Role(56);
    pub const TERMINAL: Role = Role(60);
    pub const TEXT: Role = Role(61);
    pub const TOGGLE_BUTTON: Role = Role(62);
    pub const WINDOW: Role = Role(69);
    pub const ENTRY: Role = Role(79);
    pub const LINK: Role = Role(88);
    pub const TABLE_ROW: Role = Role(90);
    pub const TREE_ITEM: Role = Role(91);
    pub const DOCUMENT_WEB: Role = Role(95);
    pub const LIST_BOX: Role = Role(98);
    pub const STATIC: Role = Role(116);
    pub const PUSH_BUTTON_MENU: Role = Role(129);

    /// The name AT-SPI gives it ("push button"); numbers past the table are "unknown".
    pub fn name(self) -> &'static str {
        ROLE_NAMES
            .get(self.0 as usize)
            .copied()
            .unwrap_or("unknown")
    }

    /// A control a person clicks, types into or picks: each one is a target of its own.
    pub fn is_interactive(self) -> bool {
        matches!(
            self,
            Role::CALENDAR
                | Role::CHECK_BOX
                | Role::CHECK_MENU_ITEM
                | Role::COMBO_BOX
                | Role::ICON
                | Role::LIST_ITEM
                | Role::MENU
                | Role::MENU_ITEM
                | Role::PAGE_TAB
                | Role::PASSWORD_TEXT
                | Role::PUSH_BUTTON
                | Role::RADIO_BUTTON
                | Role::RADIO_MENU_ITEM
                | Role::SLIDER
                | Role::SPIN_BUTTON
                | Role::TABLE_CELL
                | Role::TEXT
                | Role::TOGGLE_BUTTON
                | Role::ENTRY
                | Role::LINK
                | Role::TREE_ITEM
                | Role::PUSH_BUTTON_MENU
        )
    }

    /// Text a person types into (a `text` role is a field only when it is editable).
    pub fn is_field(self) -> bool {
        matches!(
            self,
            Role::TEXT | Role::ENTRY | Role::PASSWORD_TEXT | Role::SPIN_BUTTON | Role::COMBO_BOX
        )
    }

    /// Something that only shows text: read for a dialog's question, never a target itself.
    pub fn is_label(self) -> bool {
        matches!(self, Role::LABEL | Role::STATIC) || self.0 == 73 || self.0 == 83
    }

    /// A window that asks something of the person.
    pub fn is_dialog(self) -> bool {
        matches!(self, Role::DIALOG | Role::ALERT) || self.0 == 36 || self.0 == 19
    }
}

/// One AT-SPI state (`AtspiStateType`): its bit in the 64-bit set the bus carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct State(pub u8);

impl State {
    pub const ACTIVE: State = State(1);
    pub const BUSY: State = State(3);
    pub const CHECKED: State = State(4);
    pub const COLLAPSED: State = State(5);
    pub const EDITABLE: State = State(7);
    pub const ENABLED: State = State(8);
    pub const EXPANDABLE: State = State(9);
    pub const EXPANDED: State = State(10);
    pub const FOCUSABLE: State = State(11);
    pub const FOCUSED: State = State(12);
    pub const MODAL: State = State(16);
    pub const MULTI_LINE: State = State(17);
    pub const PRESSED: State = State(20);
    pub const SELECTED: State = State(23);
    pub const SENSITIVE: State = State(24);
    pub const SHOWING: State = State(25);
    pub const SINGLE_LINE: State = State(26);
    pub const VISIBLE: State = State(30);
    pub const INDETERMINATE: State = State(32);
    pub const CHECKABLE: State = State(41);
    pub const READ_ONLY: State = State(43);
}

/// A set of [`State`]s, as the bus sends it (two 32-bit words, low first).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct States(pub u64);

impl States {
    pub fn from_words(words: &[u32]) -> States {
        let lo = words.first().copied().unwrap_or(0) as u64;
        let hi = words.get(1).copied().unwrap_or(0) as u64;
        States(lo | (hi << 32))
    }
    pub fn of(states: &[State]) -> States {
        States(states.iter().fold(0, |a, s| a | (1u64 << s.0)))
    }
    pub fn has(self, s: State) -> bool {
        self.0 & (1u64 << s.0) != 0
    }
    pub fn with(self, s: State) -> States {
        States(self.0 | (1u64 << s.0))
    }
    pub fn without(self, s: State) -> States {
        States(self.0 & !(1u64 << s.0))
    }

    /// The words a model reads: `checked`, `selected`, `expanded`, `collapsed`, `focused`,
    /// `editable`, `pressed`, `mixed` when they hold, and `disabled` when the element is not
    /// enabled (an enabled one says nothing of it).
    pub fn words(self, role: Role) -> Vec<&'static str> {
        let mut w = Vec::new();
        let checkable = matches!(
            role,
            Role::CHECK_BOX
                | Role::RADIO_BUTTON
                | Role::CHECK_MENU_ITEM
                | Role::RADIO_MENU_ITEM
                | Role::TOGGLE_BUTTON
        ) || self.has(State::CHECKABLE);
        if self.has(State::CHECKED) || (role == Role::TOGGLE_BUTTON && self.has(State::PRESSED)) {
            w.push("checked");
        } else if checkable {
            w.push("unchecked");
        }
        if self.has(State::INDETERMINATE) && checkable {
            w.push("mixed");
        }
        if self.has(State::SELECTED) {
            w.push("selected");
        }
        if self.has(State::EXPANDED) {
            w.push("expanded");
        } else if self.has(State::EXPANDABLE) || self.has(State::COLLAPSED) {
            w.push("collapsed");
        }
        if self.has(State::FOCUSED) {
            w.push("focused");
        }
        if self.has(State::EDITABLE) && !self.has(State::READ_ONLY) {
            w.push("editable");
        }
        if !self.has(State::ENABLED) && !self.has(State::SENSITIVE) {
            w.push("disabled");
        }
        w
    }
}

/// One element of a window's accessibility tree.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Node {
    /// The same accessible object from one walk to the next: its bus name and object path.
    pub key: String,
    pub role: Role,
    /// Its accessible name, or (unnamed) the name of what labels it.
    pub name: String,
    pub states: States,
    /// A text field's contents, exactly as the application holds them.
    pub value: Option<String>,
    /// Screen (root window) pixels.
    pub rect: Rect,
}

impl Node {
    /// A field the person types into: an editable text role (not a read-only label).
    pub fn is_field(&self) -> bool {
        self.role.is_field()
            && (self.role == Role::PASSWORD_TEXT
                || self.states.has(State::EDITABLE)
                || self.role == Role::COMBO_BOX)
    }
}

/// A dialog's whole text (question and buttons), for the destructive-confirmation rule.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Dialog {
    pub title: String,
    /// Every label in it, in reading order.
    pub text: String,
    /// Screen pixels.
    pub rect: Rect,
}

/// What the tree of the focused window gave for one observation.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Tree {
    /// The elements worth a target (interactive, labels in dialogs), showing, in screen pixels.
    pub nodes: Vec<Node>,
    /// Dialogs and alerts of the focused application that are showing.
    pub dialogs: Vec<Dialog>,
    /// The walk stopped early (time budget, size cap): some elements are missing.
    pub partial: bool,
    /// Bumped whenever the tree was read again (a change event, another window).
    pub generation: u64,
    /// The toolkit that answered ("GTK", "Qt", "Chromium").
    pub toolkit: String,
    /// How long the read took (0 when nothing changed and the last one was kept).
    pub read_ms: f64,
    /// Walked again (not kept from the last observation).
    pub walked: bool,
}

impl Tree {
    /// The element that has the keyboard: the deepest focused field, else any focused element.
    pub fn focused(&self) -> Option<&Node> {
        let f = || self.nodes.iter().filter(|n| n.states.has(State::FOCUSED));
        f().find(|n| n.is_field()).or_else(|| f().last())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn role_names_are_at_spis() {
        for (n, name) in [
            (2, "alert"),
            (7, "check box"),
            (16, "dialog"),
            (29, "label"),
            (40, "password text"),
            (43, "push button"),
            (44, "radio button"),
            (56, "table cell"),
            (61, "text"),
            (79, "entry"),
            (88, "link"),
            (91, "tree item"),
            (95, "document web"),
            (116, "static"),
            (129, "push button menu"),
            (500, "unknown"),
        ] {
            assert_eq!(Role(n).name(), name, "{n}");
        }
        assert_eq!(ROLE_NAMES.len(), 130);
    }

    #[test]
    fn states_come_from_the_two_words_and_read_as_words() {
        let s = States::from_words(&[
            (1 << 4) | (1 << 8) | (1 << 12) | (1 << 24) | (1 << 25),
            1 << (41 - 32),
        ]);
        assert!(s.has(State::CHECKED) && s.has(State::CHECKABLE) && s.has(State::SHOWING));
        assert_eq!(s.words(Role::CHECK_BOX), ["checked", "focused"]);
        let off = States::of(&[State::ENABLED, State::SENSITIVE]);
        assert_eq!(off.words(Role::CHECK_BOX), ["unchecked"]);
        assert_eq!(off.words(Role::PUSH_BUTTON), Vec::<&str>::new());
        assert_eq!(States::default().words(Role::PUSH_BUTTON), ["disabled"]);
        let field = States::of(&[State::ENABLED, State::EDITABLE, State::FOCUSED]);
        assert_eq!(field.words(Role::TEXT), ["focused", "editable"]);
        let tree = States::of(&[State::ENABLED, State::EXPANDABLE]);
        assert_eq!(tree.words(Role::TREE_ITEM), ["collapsed"]);
        assert_eq!(
            tree.with(State::EXPANDED).words(Role::TREE_ITEM),
            ["expanded"]
        );
    }

    #[test]
    fn the_focused_element_is_the_field_that_has_the_keyboard() {
        let n = |key: &str, role, states: &[State]| Node {
            key: key.into(),
            role,
            states: States::of(states),
            ..Node::default()
        };
        let t = Tree {
            nodes: vec![
                n("frame", Role::FRAME, &[State::FOCUSED]),
                n("pw", Role::PASSWORD_TEXT, &[State::FOCUSED]),
                n("ok", Role::PUSH_BUTTON, &[]),
            ],
            ..Tree::default()
        };
        assert_eq!(t.focused().unwrap().key, "pw");
        assert!(t.focused().unwrap().is_field());
        let none = Tree::default();
        assert!(none.focused().is_none());
    }
}
