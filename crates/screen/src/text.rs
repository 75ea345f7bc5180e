//! Finding text among the screen's targets the way a person reads it: labels compared with OCR slips tolerated, and text found as a substring of lines read left to right across neighbouring targets, counted so that "it appeared" means more of it than before (pure).
//!
//! A person reading "echo hello from voxdesk" in a terminal does not care that OCR split the
//! line at every monospace space, glued the text caret to the last word ("milk|") or read one
//! letter wrong; they read the line. So text is looked for in *runs*: the targets of one visual
//! line, left to right, joined while they are neighbours (a column gap starts a new run). Runs
//! are compared in a canonical form: case, whitespace and easily dropped punctuation ignored,
//! easily confused glyphs folded (0/o, 1/l/I/|, 5/s, 8/b, rn/m), and for longer text one slip
//! per six letters allowed (never in a digit). Short text (four letters or fewer) must be whole words, so "Sav" is
//! not found in "Saved" and "12" not in "120".

use voxdesk_core::geometry::Rect;
use voxdesk_perception::Target;

/// Compare a label as spoken with a target's text, tolerating case and small OCR slips
/// (0/O, 1/l/I, 5/S, 8/B, rn/m) — but never a different word.
pub fn label_matches(want: &str, got: &str) -> bool {
    let (w, g) = (Canon::of(want), Canon::of(got));
    !w.chars.is_empty() && w.chars == g.chars
}

/// Neighbouring targets of one line, read left to right.
#[derive(Debug, Clone, PartialEq)]
pub struct Run {
    pub text: String,
    pub rect: Rect,
    /// The run that continues this one on the next line: a name wrapped under an icon, drawn
    /// centred ("invoice_2024-" over "03.pdf").
    pub wraps_to: Option<usize>,
}

/// A gap wider than this many line heights between two targets of a line is a column gap
/// (a menu item and its shortcut, two table columns), not a space between words.
const COLUMN_GAP: f64 = 2.5;

/// The screen's text as a person reads it: lines top to bottom, runs left to right.
pub fn runs(targets: &[Target]) -> Vec<Run> {
    let mut order: Vec<&Target> = targets
        .iter()
        .filter(|t| !t.text.trim().is_empty())
        .collect();
    order.sort_by_key(|t| (t.rect.y * 2 + t.rect.h, t.rect.x));
    // Lines: a target joins the line whose band its vertical centre falls into.
    let mut lines: Vec<(Rect, Vec<&Target>)> = Vec::new();
    for t in order {
        let cy = t.rect.y * 2 + t.rect.h;
        let line = lines.iter_mut().find(|(band, _)| {
            let same_height = t.rect.h * 2 >= band.h && band.h * 2 >= t.rect.h;
            same_height && cy > band.y * 2 && cy < (band.y + band.h) * 2
        });
        match line {
            Some((band, members)) => {
                *band = band.union(&t.rect);
                members.push(t);
            }
            None => lines.push((t.rect, vec![t])),
        }
    }
    let mut out = Vec::new();
    for (_, mut members) in lines {
        members.sort_by_key(|t| t.rect.x);
        let mut run: Option<Run> = None;
        for t in members {
            if let Some(r) = &mut run {
                let gap = t.rect.x - (r.rect.x + r.rect.w);
                let h = r.rect.h.min(t.rect.h).max(1) as f64;
                if (gap as f64) <= COLUMN_GAP * h {
                    r.text.push(' ');
                    r.text.push_str(t.text.trim());
                    r.rect = r.rect.union(&t.rect);
                    continue;
                }
                out.push(run.take().expect("some"));
            }
            run = Some(Run {
                text: t.text.trim().to_string(),
                rect: t.rect,
                wraps_to: None,
            });
        }
        out.extend(run);
    }
    for i in 0..out.len() {
        out[i].wraps_to = (0..out.len()).find(|&j| wraps(&out[i].rect, &out[j].rect));
    }
    out
}

/// Is `b` the next line of a label centred under `a` (an icon's name wrapped)? The same text
/// height, right below, narrower and indented equally on both sides — not a left-aligned list,
/// where the next line is the next item.
fn wraps(a: &Rect, b: &Rect) -> bool {
    let h = a.h.max(1) as f64;
    let same_height = (b.h as f64) >= 0.75 * h && (b.h as f64) <= 1.33 * h;
    let gap = (b.y - a.bottom()) as f64;
    let (left, right) = ((b.x - a.x) as f64, (a.right() - b.right()) as f64);
    same_height
        && (-0.4 * h..=0.6 * h).contains(&gap)
        && left >= 0.3 * h
        && right >= 0.3 * h
        && (left - right).abs() <= (0.5 * h).max(0.15 * a.w as f64)
}

/// Text in its canonical form, with where its words begin and end.
#[derive(Debug, Clone, PartialEq, Default)]
struct Canon {
    chars: Vec<char>,
    /// `chars[i]` was a digit before folding ("0" folds to "o", yet is never a slip).
    digits: Vec<bool>,
    /// `starts[i]`: a word begins at `chars[i]`; `ends[i]`: one ends there.
    starts: Vec<bool>,
    ends: Vec<bool>,
}

impl Canon {
    fn of(s: &str) -> Canon {
        let mut c = Canon::default();
        for word in s.split_whitespace() {
            let folded: Vec<(char, bool)> = word
                .to_lowercase()
                .replace("rn", "m")
                .chars()
                .filter(|c| {
                    !matches!(
                        c,
                        '.' | ',' | ':' | ';' | '\'' | '"' | '`' | '…' | '‘' | '’' | '“' | '”'
                    )
                })
                .map(|c| {
                    let f = match c {
                        '0' => 'o',
                        '1' | 'i' | '|' | '!' => 'l',
                        '5' => 's',
                        '8' => 'b',
                        '–' | '—' => '-',
                        c => c,
                    };
                    (f, c.is_ascii_digit())
                })
                .collect();
            let n = folded.len();
            for (i, (ch, digit)) in folded.into_iter().enumerate() {
                c.chars.push(ch);
                c.digits.push(digit);
                c.starts.push(i == 0);
                c.ends.push(i + 1 == n);
            }
        }
        c
    }

    /// Slips allowed when looking for this text: none up to five letters, then one per six.
    fn slips(&self) -> usize {
        self.chars.len() / 6
    }

    /// Every word of three letters or fewer is in `hay[start..end]` as it is, at the start or
    /// the end of one of its words (OCR may glue words: "SaveAs"): a slip in a short word makes
    /// another word ("Save As" is not "Save All", "Log in" is not "Log on").
    fn short_words_in(&self, hay: &Canon, start: usize, end: usize) -> bool {
        let mut i = 0;
        while i < self.chars.len() {
            let mut e = i;
            while !self.ends[e] {
                e += 1;
            }
            let word = &self.chars[i..=e];
            let n = word.len();
            let found = (start..(end + 1).saturating_sub(n)).any(|at| {
                hay.chars[at..at + n] == *word && (hay.starts[at] || hay.ends[at + n - 1])
            });
            if n <= 3 && !found {
                return false;
            }
            i = e + 1;
        }
        true
    }

    /// Non-overlapping places `self` occurs in `hay`, left to right, as `[start, end)` spans.
    fn find_in(&self, hay: &Canon) -> Vec<(usize, usize)> {
        let m = self.chars.len();
        if m == 0 {
            return Vec::new();
        }
        let k = self.slips();
        let whole_words = m <= 4;
        let mut hits = Vec::new();
        // A digit is never a slip: "2023-04" is not "2024-03", "Order 10" is not "Order 18".
        let cost = |digit: bool| if digit { k + 1 } else { 1 };
        // Sellers' algorithm: edit distance of the want against any substring of the hay, each
        // cell carrying where its match began. Dropping the want's first letters costs what
        // dropping them anywhere costs (a digit: too much).
        let first_col: Vec<usize> = (0..=m)
            .scan(0, |acc, i| {
                if i > 0 {
                    *acc += cost(self.digits[i - 1]);
                }
                Some(*acc)
            })
            .collect();
        let fresh = |at: usize| (first_col.clone(), vec![at; m + 1]);
        let (mut prev, mut prev_s) = fresh(0);
        let (mut cur, mut cur_s) = (vec![0; m + 1], vec![0; m + 1]);
        for j in 0..hay.chars.len() {
            cur[0] = 0;
            cur_s[0] = j + 1;
            for i in 1..=m {
                let (w, h) = (self.chars[i - 1], hay.chars[j]);
                let (wd, hd) = (self.digits[i - 1], hay.digits[j]);
                let sub = prev[i - 1] + if w == h { 0 } else { cost(wd).max(cost(hd)) };
                let skip_hay = prev[i] + cost(hd);
                let skip_want = cur[i - 1] + cost(wd);
                (cur[i], cur_s[i]) = if sub <= skip_hay && sub <= skip_want {
                    (sub, prev_s[i - 1])
                } else if skip_hay <= skip_want {
                    (skip_hay, prev_s[i])
                } else {
                    (skip_want, cur_s[i - 1])
                };
            }
            let (start, end) = (cur_s[m], j + 1);
            let whole = !whole_words || (start < end && hay.starts[start] && hay.ends[end - 1]);
            if cur[m] <= k
                && start < end
                && whole
                && (k == 0 || self.short_words_in(hay, start, end))
            {
                hits.push((start, end));
                (prev, prev_s) = fresh(end);
                continue;
            }
            std::mem::swap(&mut prev, &mut cur);
            std::mem::swap(&mut prev_s, &mut cur_s);
        }
        hits
    }
}

/// Where `text` is on screen: the text of the run it occurs in (the lines of a wrapped label,
/// joined by " / "), once per occurrence. Occurrences inside an occurrence of a longer text of
/// `besides` do not count (text the session typed itself, which contains what it now waits
/// for): the longer text's letters before and after it must be there around it.
pub fn occurrences(text: &str, runs: &[Run], besides: &[String]) -> Vec<String> {
    located(text, runs, besides)
        .into_iter()
        .map(|(read, _)| read)
        .collect()
}

/// [`occurrences`] with where each was read: its run's box (with the lines of a wrapped label
/// it crosses).
pub fn located(text: &str, runs: &[Run], besides: &[String]) -> Vec<(String, Rect)> {
    let want = Canon::of(text);
    // What each of `besides` has before and after the wanted text.
    let besides: Vec<(Vec<char>, Vec<char>)> = besides
        .iter()
        .map(|b| Canon::of(b))
        .filter_map(|b| {
            let (s, e) = *want.find_in(&b).first()?;
            Some((b.chars[..s].to_vec(), b.chars[e..].to_vec()))
        })
        // Longer by more than a slip: the typed text itself, matched a letter short by the
        // slips it is allowed ("plan.od" in "plan.ods"), is not a longer text around it.
        .filter(|(before, after)| before.len() + after.len() > want.slips())
        .collect();
    let mut out = Vec::new();
    let continued: Vec<bool> = (0..runs.len())
        .map(|i| runs.iter().any(|r| r.wraps_to == Some(i)))
        .collect();
    for (i, r) in runs.iter().enumerate() {
        let mut hay = Canon::of(&r.text);
        let mut hits = want.find_in(&hay);
        // A wrapped label read across its lines: only what crosses a line end is new here.
        let mut ends = Vec::new();
        let mut read = r.text.clone();
        let mut area = r.rect;
        let mut next = r.wraps_to;
        while let (Some(j), false, true) = (next, continued[i], ends.len() < 2) {
            ends.push(hay.chars.len());
            read = format!("{read} / {}", runs[j].text);
            area = area.union(&runs[j].rect);
            let more = Canon::of(&runs[j].text);
            hay.chars.extend(more.chars);
            hay.digits.extend(more.digits);
            hay.starts.extend(more.starts);
            hay.ends.extend(more.ends);
            next = runs[j].wraps_to;
        }
        if !ends.is_empty() {
            hits = want
                .find_in(&hay)
                .into_iter()
                .filter(|&(s, e)| ends.iter().any(|&b| s < b && e > b))
                .chain(hits)
                .collect();
        }
        // Inside a longer text of `besides`: what that text has before and after the wanted
        // one is there too, around this occurrence ("$ echo " before "hello from voxdesk").
        let around =
            |chars: &[char], s: usize, e: usize, (before, after): &(Vec<char>, Vec<char>)| {
                let close = |a: &[char], b: &[char]| {
                    let (a, b): (String, String) = (a.iter().collect(), b.iter().collect());
                    strsim::levenshtein(&a, &b) <= a.chars().count() / 6
                };
                close(before, &chars[s.saturating_sub(before.len())..s])
                    && close(after, &chars[e..(e + after.len()).min(chars.len())])
            };
        hits.retain(|&(s, e)| !besides.iter().any(|b| around(&hay.chars, s, e, b)));
        out.extend(hits.iter().map(|&(s, e)| {
            // Where it was read: its line, or the lines of the wrapped label it crosses.
            if ends.iter().any(|&b| s < b && e > b) {
                (read.clone(), area)
            } else {
                (r.text.clone(), r.rect)
            }
        }));
    }
    out
}

/// Is `text` on screen at all?
pub fn present(text: &str, targets: &[Target]) -> bool {
    !occurrences(text, &runs(targets), &[]).is_empty()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(text: &str, x: i32, y: i32, w: i32) -> Target {
        Target {
            id: 0,
            text: text.into(),
            rect: Rect::new(x, y, w, 14),
            conf: 0.9,
            new: false,
            ax: None,
        }
    }

    fn count(want: &str, ts: &[Target]) -> usize {
        occurrences(want, &runs(ts), &[]).len()
    }

    #[test]
    fn a_monospace_line_split_at_its_spaces_is_read_as_one_line() {
        // xterm: every word its own target, one 8 px space apart; a prompt before them.
        let line = [
            t("$", 2, 100, 8),
            t("echo", 18, 101, 32),
            t("hello", 58, 100, 40),
            t("from", 106, 100, 32),
            t("voxdesk", 146, 101, 56),
        ];
        let rs = runs(&line);
        assert_eq!(rs.len(), 1);
        assert_eq!(rs[0].text, "$ echo hello from voxdesk");
        assert_eq!(count("echo hello from voxdesk", &line), 1);
        // Monospace spacing: extra or missing spaces do not matter.
        assert_eq!(count("echo  hello from  voxdesk", &line), 1);
        assert_eq!(count("hello from voxdesk", &line), 1);
    }

    #[test]
    fn a_column_gap_or_another_line_ends_a_run() {
        let menu = [
            t("Save", 10, 40, 32),
            t("Ctrl+S", 200, 40, 48),
            t("As", 10, 60, 16),
        ];
        let rs: Vec<String> = runs(&menu).into_iter().map(|r| r.text).collect();
        assert_eq!(rs, ["Save", "Ctrl+S", "As"]);
        assert_eq!(count("Save Ctrl+S", &menu), 0);
        assert_eq!(count("Save As", &menu), 0, "two lines are not one phrase");
    }

    #[test]
    fn table_of_slips_carets_and_words() {
        let cases: &[(&str, &str, usize)] = &[
            // The caret glued to the last letter, read as "|" or "l".
            ("Buy milk", "Buy milk|", 1),
            ("Buy milk", "Buy milkl", 1),
            // One slip per six letters in longer text.
            ("Ada Lovelace", "Ada Lovelaee", 1),
            ("Ada Lovelace", "Ada Lcvelaee", 0),
            ("Ada Lovelace", "Ava Lcvelaee", 0),
            ("invoice_2024-03.pdf", "invoice_2024-03.pdf", 1),
            ("invoice_2024-03.pdf", "invoice_2O24-O3.pdf", 1),
            ("invoice_2024-03.pdf", "invoice_2024-04.pdf", 0),
            ("invoice_2024-03.pdf", "inv0ice_2024-03.pdt", 1),
            ("invoice_2024-03.pdf", "invoice_2023-04.pdf", 0),
            // Short text must be whole words, with no slip.
            ("12", "12", 1),
            ("12", "120", 0),
            ("Sav", "Saved to notes.txt", 0),
            ("Save", "Saved", 0),
            ("Saved", "Saved to notes.txt", 1),
            ("File", "Fi1e", 1),
            ("OK", "0K", 1),
            // Digits, folded or not, are never slips, also not at the start.
            ("Order 10", "Order 18", 0),
            ("Transfer 1000 EUR", "Transfer 5000 EUR", 0),
            ("Order 1508 shipped", "Order 1805 shipped", 0),
            ("4 items", "items", 0),
            ("3 bananas left", "x bananas left", 0),
            ("Order 10", "0rder 1O", 1),
            // Repeated text is counted once per occurrence.
            ("Buy milk", "Buy milkBuy milkBuy milk", 3),
            ("hello", "hello hello", 2),
        ];
        for &(want, screen, n) in cases {
            assert_eq!(
                count(want, &[t(screen, 0, 0, 200)]),
                n,
                "{want:?} in {screen:?}"
            );
        }
    }

    #[test]
    fn a_slip_in_a_short_word_makes_another_word() {
        // mousepad's File menu: "Save As…" was once said to have appeared "in Save All".
        let count =
            |want: &str, got: &str| occurrences(want, &runs(&[t(got, 0, 0, 120)]), &[]).len();
        assert_eq!(count("Save As", "Save All"), 0);
        assert_eq!(count("Save As", "Save As..."), 1);
        assert_eq!(count("Log in to continue", "Log on to continue"), 0);
        // Long words keep their slip: "Downl0ads", "Docurnents".
        assert_eq!(count("Open Downloads", "Open Downl0ads"), 1);
        assert_eq!(count("Save As", "SaveAs"), 1);
    }

    #[test]
    fn text_the_session_typed_does_not_count_as_what_it_waits_for() {
        let screen = [
            t("$ echo hello from voxdesk", 0, 0, 200),
            t("hello from voxdesk", 0, 20, 150),
        ];
        let rs = runs(&screen);
        let typed = vec!["echo hello from voxdesk".to_string()];
        assert_eq!(occurrences("hello from voxdesk", &rs, &[]).len(), 2);
        let found = occurrences("hello from voxdesk", &rs, &typed);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0], "hello from voxdesk");
        assert!(occurrences("hello from voxdesk", &rs[..1], &typed).is_empty());
        // A long command's output is not taken for the command with "echo" dropped.
        let typed = vec!["echo the build finished successfully".to_string()];
        let screen = [
            t("$ echo the build finished successfully", 0, 0, 300),
            t("the build finished successfully", 0, 20, 250),
        ];
        let found = occurrences("build finished", &runs(&screen), &typed);
        assert_eq!(found, ["the build finished successfully"]);
    }

    #[test]
    fn a_name_wrapped_under_an_icon_is_read_across_its_lines_and_a_list_is_not() {
        // pcmanfm's icon view: the name centred under the icon, broken where it is too wide.
        let icon = [t("invoice_2024-", 100, 200, 96), t("03.pdf", 121, 211, 48)];
        let rs = runs(&icon);
        assert_eq!(rs[0].wraps_to, Some(1));
        assert_eq!(count("invoice_2024-03.pdf", &icon), 1);
        assert_eq!(count("03.pdf", &icon), 1, "the part on one line, once");
        // Three lines.
        let long = [
            t("quarterly_report_", 100, 200, 120),
            t("final_version_", 110, 216, 100),
            t("2.odt", 140, 232, 40),
        ];
        assert_eq!(count("quarterly_report_final_version_2.odt", &long), 1);
        // A left-aligned menu: the next line is another item.
        let menu = [t("Save", 10, 40, 32), t("As", 10, 56, 16)];
        assert_eq!(runs(&menu)[0].wraps_to, None);
        assert_eq!(count("Save As", &menu), 0);
    }

    #[test]
    fn labels_match_with_slips_but_not_other_words() {
        assert!(label_matches("File", "Fi1e"));
        assert!(label_matches("OK", "0K"));
        assert!(label_matches("Save As", "Save  As"));
        assert!(!label_matches("Save", "Saved"));
        assert!(!label_matches("", ""));
    }
}
