//! Decoding held to a list of phrases (pure): the phrases as a trie of their letters and digits (case, spaces and punctuation ignored), and at each step the tokens that continue one of them; the model then picks among those only, so its ear decides between the commands the screen allows instead of writing whatever sentence it likes best.

use std::collections::HashMap;

/// The phrases, as a trie of their letters and digits.
pub struct Phrases {
    /// Per node: next character → node.
    next: Vec<HashMap<char, usize>>,
    /// Per node: the phrases that end there.
    ends: Vec<Vec<usize>>,
    pub count: usize,
}

/// A phrase's letters and digits, lowercase ("Click 7." → "click7").
pub fn letters(text: &str) -> String {
    text.chars()
        .filter(|c| c.is_alphanumeric())
        .flat_map(char::to_lowercase)
        .collect()
}

impl Phrases {
    pub fn new(phrases: &[String]) -> Phrases {
        let mut p = Phrases {
            next: vec![HashMap::new()],
            ends: vec![Vec::new()],
            count: phrases.len(),
        };
        for (i, ph) in phrases.iter().enumerate() {
            let mut node = 0;
            for c in letters(ph).chars() {
                node = match p.next[node].get(&c) {
                    Some(&n) => n,
                    None => {
                        p.next.push(HashMap::new());
                        p.ends.push(Vec::new());
                        let n = p.next.len() - 1;
                        p.next[node].insert(c, n);
                        n
                    }
                };
            }
            if node != 0 {
                p.ends[node].push(i);
            }
        }
        p
    }

    /// The node after `piece` (its letters) from `node`, if some phrase goes on that way.
    pub fn walk(&self, node: usize, piece: &str) -> Option<usize> {
        piece
            .chars()
            .try_fold(node, |n, c| self.next[n].get(&c).copied())
    }

    /// The phrases complete at `node`.
    pub fn ends(&self, node: usize) -> &[usize] {
        &self.ends[node]
    }
}

/// Of the tokens (`pieces[id]`: a token's letters, None for special or byte tokens), the best
/// by `logits` that keeps to the phrases from `node`: a token that continues one, the end
/// (`end`) where one is complete, or punctuation there. (token, node after it).
pub fn best_allowed(
    phrases: &Phrases,
    node: usize,
    pieces: &[Option<String>],
    logits: &[f32],
    end: usize,
) -> Option<(usize, usize)> {
    let complete = !phrases.ends(node).is_empty();
    let mut best: Option<(usize, usize, f32)> = None;
    for (id, &l) in logits.iter().enumerate() {
        if best.is_some_and(|b| l <= b.2) {
            continue;
        }
        let after = if id == end {
            complete.then_some(node)
        } else {
            match pieces.get(id).and_then(|p| p.as_deref()) {
                // Punctuation only: allowed once a phrase is complete; it moves nothing.
                Some("") => complete.then_some(node),
                Some(p) => phrases.walk(node, p),
                None => None,
            }
        };
        if let Some(n) = after {
            best = Some((id, n, l));
        }
    }
    best.map(|(id, n, _)| (id, n))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_tokens_that_continue_a_phrase_are_allowed() {
        let p = Phrases::new(&["click seven".into(), "click 7".into(), "press enter".into()]);
        let pieces: Vec<Option<String>> = vec![
            None,                  // 0 <unk>
            None,                  // 1 <s>
            None,                  // 2 </s>
            Some("click".into()),  // 3
            Some("seven".into()),  // 4
            Some("7".into()),      // 5
            Some("heaven".into()), // 6
            Some("".into()),       // 7 "."
            Some("pre".into()),    // 8
            Some("ss".into()),     // 9
        ];
        // "heaven" is likelier, but no phrase goes on with it.
        let root = 0;
        let (t, n) = best_allowed(
            &p,
            root,
            &pieces,
            &[0., 0., 0., 5., 0., 0., 9., 0., 1., 0.],
            2,
        )
        .unwrap();
        assert_eq!(t, 3);
        let (t, n) =
            best_allowed(&p, n, &pieces, &[0., 0., 0., 0., 1., 2., 9., 8., 0., 0.], 2).unwrap();
        assert_eq!(
            t, 5,
            "7, not heaven nor a full stop before a phrase is complete"
        );
        assert_eq!(p.ends(n), &[1]);
        // Complete: the end, or punctuation, may come.
        let (t, _) =
            best_allowed(&p, n, &pieces, &[0., 0., 3., 0., 0., 0., 9., 1., 0., 0.], 2).unwrap();
        assert_eq!(t, 2);
        assert_eq!(letters("Click 7."), "click7");
        assert_eq!(
            p.walk(0, "pre").and_then(|n| p.walk(n, "ss")).is_some(),
            true
        );
        assert!(p.walk(0, "x").is_none());
    }
}
