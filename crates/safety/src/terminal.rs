//! The command line a terminal is building, followed key by key across actions and batches, so the rails judge what the shell will run at the moment Return reaches it, however it was typed.
//!
//! The model is deliberately simple and errs one way: characters append, BackSpace and Ctrl-W
//! take back, Ctrl-C and Return start a new line; any key that could move the cursor, recall
//! or complete text (arrows, Home, Tab, history search, a kill-ring yank, Escape's meta prefix)
//! makes the line *unknown*, and running an unknown line needs a yes. Metacharacters are
//! refused whichever press would put them there; a paste, whose text the rails cannot read, is
//! refused outright.

use voxdesk_core::keys::{Effect, Keysym, Mods, BACKSPACE, INSERT, KP_ENTER, RETURN};

use super::phrases::SHELL_META;

/// One terminal's command line as far as voxdesk typed it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Line {
    text: String,
    /// False once a key may have moved the cursor or put unseen text on the line.
    known: bool,
    /// The text a yes was given to, while it is still what the line holds.
    approved: Option<String>,
}

impl Default for Line {
    fn default() -> Self {
        Line {
            text: String::new(),
            known: true,
            approved: None,
        }
    }
}

/// What a press did to the line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fed {
    /// Edited the line, or left it alone.
    Edit,
    /// The shell runs the line: its text (`None` when it is not known), and whether a yes was
    /// given to exactly that text.
    Runs {
        line: Option<String>,
        approved: bool,
    },
}

/// A press the rails refuse in a terminal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refused {
    pub rule: &'static str,
    pub message: String,
}

const fn ctrl(c: char) -> (Mods, Keysym) {
    (Mods::CTRL, c as Keysym)
}

impl Line {
    /// The line so far (`None` when it is not known).
    pub fn text(&self) -> Option<&str> {
        self.known.then_some(self.text.as_str())
    }

    /// A line as an earlier session left it: its text, or `None` when it was not known. A yes
    /// is never carried from one session to another.
    pub fn restored(text: Option<String>) -> Line {
        Line {
            known: text.is_some(),
            text: text.unwrap_or_default(),
            approved: None,
        }
    }

    /// The line's text when it is known and no yes was given to it yet.
    pub fn pending(&self) -> Option<&str> {
        self.text().filter(|t| self.approved.as_deref() != Some(*t))
    }

    /// A yes was given to the line as it reads now (only `rails::approve` calls this, with the
    /// person's yes in hand).
    pub(super) fn accept(&mut self) {
        if self.known {
            self.approved = Some(self.text.clone());
        }
    }

    /// Forget what is on the line: keys or a run that did not finish may have left anything.
    pub fn lose(&mut self) {
        self.known = false;
    }

    fn clear(&mut self) {
        self.text.clear();
        self.known = true;
        self.approved = None;
    }

    /// Apply one press.
    pub fn feed(&mut self, e: Effect) -> Result<Fed, Refused> {
        match e {
            Effect::Char(c) => {
                if SHELL_META.contains(c) {
                    return Err(Refused {
                        rule: "terminal-metachar",
                        message: format!("{c:?} would reach the shell (metacharacters ; | & $ ` > < are refused in terminals, whichever action types them)"),
                    });
                }
                self.text.push(c);
            }
            // Return with any modifiers, and Ctrl-J/M/O (with Shift too: the terminal sends the
            // same control code), run the line.
            Effect::Key(RETURN | KP_ENTER) | Effect::Shortcut(_, RETURN | KP_ENTER) => {
                return Ok(self.run())
            }
            Effect::Shortcut(m, k)
                if m.has(Mods::CTRL)
                    && matches!(
                        char::from_u32(k).map(|c| c.to_ascii_lowercase()),
                        Some('j' | 'm' | 'o')
                    ) =>
            {
                return Ok(self.run())
            }
            Effect::Key(BACKSPACE) => {
                self.text.pop();
            }
            Effect::Shortcut(m, k) if (m, k) == ctrl('h') => {
                self.text.pop();
            }
            Effect::Shortcut(m, k) if (m, k) == ctrl('c') => self.clear(),
            Effect::Shortcut(m, k) if (m, k) == ctrl('u') && self.known => self.clear(),
            Effect::Shortcut(m, k) if (m, k) == ctrl('w') => {
                // unix-word-rubout: the blanks before the cursor, then the word.
                let t = self.text.trim_end_matches([' ', '\t']);
                let cut = t.rfind([' ', '\t']).map_or(0, |i| i + 1);
                self.text.truncate(cut);
                // What was cut is in the kill ring; a later yank makes the line unknown.
            }
            Effect::Shortcut(m, k) if (m, k) == ctrl('l') => {}
            // Copy, and scrolling the terminal's own history: the line is untouched.
            Effect::Shortcut(m, k)
                if m == Mods::CTRL.with(Mods::SHIFT)
                    && (k == 'c' as Keysym || k == 'C' as Keysym) => {}
            Effect::Key(INSERT) => return Err(paste()),
            // Ctrl+Shift+V pastes in most terminals (Ctrl+V is bash's quoted insert), any
            // Insert pastes in xterm.
            Effect::Shortcut(m, k)
                if m.has(Mods::CTRL) && (k == 'v' as Keysym || k == 'V' as Keysym)
                    || k == INSERT =>
            {
                return Err(paste())
            }
            // Anything else may move the cursor, recall or complete text: follow no further.
            _ => self.known = false,
        }
        Ok(Fed::Edit)
    }

    fn run(&mut self) -> Fed {
        // A line ending in a backslash, or with a quote still open, is not run: the shell asks
        // for the rest (`r\` Return `m -rf x` is one command, `rm -rf x`).
        if self.known {
            let escapes = self.text.chars().rev().take_while(|c| *c == '\\').count();
            if escapes % 2 == 1 {
                self.text.pop();
                return Fed::Edit;
            }
            if open_quote(&self.text) {
                self.text.push('\n');
                return Fed::Edit;
            }
        }
        let line = self.known.then(|| self.text.clone());
        let approved = line.is_some() && self.approved == line;
        self.clear();
        Fed::Runs { line, approved }
    }
}

/// Does `text` leave a quote open (the shell reads on past Return)?
pub fn open_quote(text: &str) -> bool {
    let mut quote: Option<char> = None;
    let mut escaped = false;
    for c in text.chars() {
        match (quote, c) {
            (_, _) if escaped => escaped = false,
            (None | Some('"'), '\\') => escaped = true,
            (None, '\'' | '"') => quote = Some(c),
            (Some(q), c) if c == q => quote = None,
            _ => {}
        }
    }
    quote.is_some()
}

fn paste() -> Refused {
    Refused {
        rule: "terminal-paste",
        message: "pasting into a terminal puts text the rails cannot read on the command line; type it instead".into(),
    }
}

/// Commands that delete, overwrite, end processes or the session, or gain privileges.
const DESTRUCTIVE_COMMANDS: &[&str] = &[
    "rm", "rmdir", "unlink", "shred", "srm", "wipe", "dd", "mkfs", "mke2fs", "mkswap", "wipefs",
    "fdisk", "sfdisk", "gdisk", "cfdisk", "parted", "truncate", "mv", "tee", "del", "sudo", "su",
    "doas", "pkexec", "shutdown", "reboot", "poweroff", "halt", "init", "telinit", "kill",
    "killall", "pkill", "xkill", "chmod", "chown", "chgrp", "crontab", "fc", "exec", "eval",
    "source", "xargs", "alias", "unalias", "trap", "bind", "enable", "hash", "builtin",
];

/// Interpreters that run code given on the command line (`bash -c …`, `python3 -c …`).
const INTERPRETERS: &[&str] = &[
    "sh",
    "bash",
    "dash",
    "zsh",
    "ksh",
    "fish",
    "python",
    "python3",
    "perl",
    "ruby",
    "node",
    "nodejs",
    "php",
    "lua",
    "awk",
    "gawk",
    "mawk",
    "tclsh",
    "osascript",
];

/// Is `text` a command line that deletes or overwrites something, ends processes or the
/// session, gains privileges or runs code voxdesk cannot read? Judged on the words the shell
/// will see: quotes and backslashes removed, any word anywhere (`command rm`, `/bin/rm`,
/// `sh -c "rm …"`, `{rm,-rf,x}`), a glob that could name such a command (`/bin/r?`), history
/// expansion (`!!`, `^a^b`), `find … -delete`, `sed -i`, `git clean`.
pub fn destructive_line(text: &str) -> Option<String> {
    let trimmed = text.trim_start();
    if trimmed.starts_with('^') || text.contains('!') {
        return Some(format!(
            "{text:?} uses history expansion, which can run any earlier command"
        ));
    }
    // The words as the shell reads them: quoting and escapes only change how a word is spelled.
    let plain: String = text
        .chars()
        .filter(|c| !matches!(c, '\'' | '"' | '\\'))
        .collect();
    let words: Vec<&str> = plain.split_whitespace().collect();
    let parts = || {
        plain
            .split(|c: char| {
                c.is_whitespace() || matches!(c, '/' | '=' | '{' | '}' | ',' | '(' | ')')
            })
            .filter(|w| !w.is_empty())
    };
    for p in parts() {
        let base = p.split('.').next().unwrap_or(p);
        if let Some(cmd) = DESTRUCTIVE_COMMANDS
            .iter()
            .find(|c| **c == p || **c == base || (is_glob(p) && glob(p, c)))
        {
            return Some(format!("{text:?} runs `{cmd}`"));
        }
    }
    let has = |w: &str| words.contains(&w);
    let any = |ws: &[&str]| words.iter().any(|w| ws.contains(w));
    if has("find")
        && any(&[
            "-delete", "-exec", "-execdir", "-ok", "-okdir", "-fprint", "-fprintf", "-fls",
        ])
    {
        return Some(format!(
            "{text:?} runs `find` with an action that deletes or runs commands"
        ));
    }
    if any(&["sed", "perl"])
        && words
            .iter()
            .any(|w| w.starts_with("-i") || w.starts_with("--in-place"))
    {
        return Some(format!("{text:?} edits files in place"));
    }
    if has("git")
        && any(&[
            "clean", "reset", "checkout", "restore", "rm", "push", "branch",
        ])
    {
        return Some(format!("{text:?} runs a git command that can discard work"));
    }
    if has("rsync")
        && words
            .iter()
            .any(|w| w.starts_with("--delete") || w.starts_with("--remove"))
    {
        return Some(format!("{text:?} runs `rsync` with deletion"));
    }
    if let Some(i) = parts().find(|p| INTERPRETERS.contains(p)) {
        if words.iter().any(|w| {
            w.starts_with('-') && (w.contains('c') || w.contains('e')) && !w.starts_with("--")
        }) || words.iter().any(|w| *w == "--eval" || *w == "--command")
        {
            return Some(format!(
                "{text:?} has `{i}` run code given on the command line"
            ));
        }
    }
    // A glob as the command word can expand to any program.
    if words.first().is_some_and(|w| is_glob(w)) {
        return Some(format!("{text:?} has a pattern as its command"));
    }
    None
}

fn is_glob(w: &str) -> bool {
    w.contains(['*', '?', '['])
}

/// Shell pattern matching (`*`, `?`, `[…]`), enough to tell whether a word could name `name`.
fn glob(pat: &str, name: &str) -> bool {
    fn go(p: &[char], n: &[char]) -> bool {
        match p.first() {
            None => n.is_empty(),
            Some('*') => (0..=n.len()).any(|i| go(&p[1..], &n[i..])),
            Some('?') => !n.is_empty() && go(&p[1..], &n[1..]),
            Some('[') => {
                let Some(end) = p.iter().skip(1).position(|c| *c == ']').map(|i| i + 1) else {
                    return n.first() == Some(&'[') && go(&p[1..], &n[1..]);
                };
                let Some(c) = n.first() else { return false };
                let set = &p[1..end];
                let (neg, set) = match set.first() {
                    Some('!' | '^') => (true, &set[1..]),
                    _ => (false, set),
                };
                let mut hit = false;
                let mut i = 0;
                while i < set.len() {
                    if i + 2 < set.len() && set[i + 1] == '-' {
                        hit |= (set[i]..=set[i + 2]).contains(c);
                        i += 3;
                    } else {
                        hit |= set[i] == *c;
                        i += 1;
                    }
                }
                hit != neg && go(&p[end + 1..], &n[1..])
            }
            Some(c) => n.first() == Some(c) && go(&p[1..], &n[1..]),
        }
    }
    let p: Vec<char> = pat.chars().collect();
    let n: Vec<char> = name.chars().collect();
    go(&p, &n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn destructive_lines_whatever_their_spelling() {
        for yes in [
            "rm -rf DIR",
            "\"rm\" -rf DIR",
            "r''m -rf DIR",
            "\\rm -rf DIR",
            "command rm -rf DIR",
            "/bin/rm -rf DIR",
            "/bin/r? -rf DIR",
            "/bin/r[m] x",
            "{rm,-rf,DIR}",
            "sh -c 'rm -rf DIR'",
            "python3 -c \"__import__('shutil').rmtree('x')\"",
            "find . -name x -delete",
            "find . -exec true {} +",
            "dd if=/dev/zero of=f",
            "mkfs.ext4 /dev/sdb",
            "shred f",
            "truncate -s 0 f",
            "mv a b",
            "sudo ls",
            "sed -i s/a/b/ f",
            "git clean -fdx",
            "!!",
            "!rm",
            "^a^b",
            "alias ls=rm",
            "PROMPT_COMMAND=rm",
            "* x",
            "kill 1",
        ] {
            assert!(destructive_line(yes).is_some(), "{yes:?}");
        }
        for no in [
            "ls -l",
            "echo hello",
            "cat notes.txt",
            "firm ware",
            "mkdir build",
            "grep rmx f",
            "ls *.txt",
            "python3 script.py",
            "touch f",
            "",
        ] {
            assert_eq!(destructive_line(no), None, "{no:?}");
        }
    }

    #[test]
    fn the_line_follows_edits_and_forgets_what_it_cannot_follow() {
        let mut l = Line::default();
        for c in "rm x".chars() {
            l.feed(Effect::Char(c)).unwrap();
        }
        l.feed(Effect::Key(BACKSPACE)).unwrap();
        assert_eq!(l.text(), Some("rm "));
        l.feed(Effect::Shortcut(Mods::CTRL, 'w' as u32)).unwrap();
        assert_eq!(l.text(), Some(""));
        l.feed(Effect::Char('l')).unwrap();
        assert_eq!(
            l.feed(Effect::Key(RETURN)).unwrap(),
            Fed::Runs {
                line: Some("l".into()),
                approved: false
            }
        );
        l.feed(Effect::Key(0xff51)).unwrap(); // Left
        assert_eq!(l.text(), None);
        assert_eq!(
            l.feed(Effect::Shortcut(Mods::CTRL, 'j' as u32)).unwrap(),
            Fed::Runs {
                line: None,
                approved: false
            }
        );
        assert_eq!(l.text(), Some(""));
        assert_eq!(
            l.feed(Effect::Char(';')).unwrap_err().rule,
            "terminal-metachar"
        );
        assert_eq!(
            l.feed(Effect::Key(INSERT)).unwrap_err().rule,
            "terminal-paste"
        );
        assert_eq!(
            l.feed(Effect::Shortcut(Mods::CTRL.with(Mods::SHIFT), 'v' as u32))
                .unwrap_err()
                .rule,
            "terminal-paste"
        );
        // A backslash or an open quote before Return: the shell reads on, one command.
        for c in "r\\".chars() {
            l.feed(Effect::Char(c)).unwrap();
        }
        assert_eq!(l.feed(Effect::Key(RETURN)).unwrap(), Fed::Edit);
        for c in "m x".chars() {
            l.feed(Effect::Char(c)).unwrap();
        }
        assert_eq!(
            l.feed(Effect::Key(RETURN)).unwrap(),
            Fed::Runs {
                line: Some("rm x".into()),
                approved: false
            }
        );
        for c in "echo 'a".chars() {
            l.feed(Effect::Char(c)).unwrap();
        }
        assert_eq!(l.feed(Effect::Key(RETURN)).unwrap(), Fed::Edit);
        assert_eq!(l.text(), Some("echo 'a\n"));
        l.feed(Effect::Shortcut(Mods::CTRL, 'c' as u32)).unwrap();
        assert!(!open_quote("echo \"it's\""));
        assert!(open_quote("echo \"a"));
        assert!(!open_quote("echo a\\'"));
        l.feed(Effect::Key(0xff09)).unwrap(); // Tab completes: unknown
        l.feed(Effect::Shortcut(Mods::CTRL, 'c' as u32)).unwrap();
        assert_eq!(l.text(), Some(""));
    }

    #[test]
    fn globs() {
        for (p, n, m) in [
            ("r?", "rm", true),
            ("r*", "rm", true),
            ("[q-s]m", "rm", true),
            ("[!r]m", "rm", false),
            ("*.txt", "rm", false),
            ("r[", "rm", false),
        ] {
            assert_eq!(glob(p, n), m, "{p} {n}");
        }
    }
}
