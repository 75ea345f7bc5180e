//! Moonshine's token ids back to text, from the `tokenizer.json` its English model ships with: pieces with "▁" for a space and `<0xNN>` bytes for anything else (SentencePiece-style byte fallback), special tokens dropped, the one leading space stripped.
//!
//! Written here rather than taken from the `tokenizers` crate: only decoding is needed (the
//! model's own output), which is a table lookup; the crate would add some forty dependencies and
//! a minute of build on these machines for it.

use std::collections::HashMap;

#[derive(Debug, thiserror::Error)]
#[error("the tokenizer is unusable: {0}")]
pub struct VocabError(String);

/// Id → piece, and which ids are special (`<s>`, `</s>`, `<unk>`, the model's own markers).
pub struct Vocab {
    pieces: Vec<Option<String>>,
    special: Vec<bool>,
}

impl Vocab {
    /// From the text of a Hugging Face `tokenizer.json` (a BPE model with byte fallback).
    pub fn from_json(text: &str) -> Result<Vocab, VocabError> {
        let v: serde_json::Value =
            serde_json::from_str(text).map_err(|e| VocabError(e.to_string()))?;
        let vocab = v["model"]["vocab"]
            .as_object()
            .ok_or_else(|| VocabError("no model.vocab".into()))?;
        let mut by_id: HashMap<usize, String> = HashMap::new();
        for (piece, id) in vocab {
            let id = id
                .as_u64()
                .ok_or_else(|| VocabError(format!("piece {piece:?} has no numeric id")))?;
            by_id.insert(id as usize, piece.clone());
        }
        let mut special_ids = Vec::new();
        for a in v["added_tokens"].as_array().into_iter().flatten() {
            let (Some(id), Some(content)) = (a["id"].as_u64(), a["content"].as_str()) else {
                continue;
            };
            by_id.insert(id as usize, content.to_string());
            if a["special"].as_bool().unwrap_or(false) {
                special_ids.push(id as usize);
            }
        }
        let n = by_id.keys().max().map_or(0, |m| m + 1);
        if n == 0 {
            return Err(VocabError("an empty vocabulary".into()));
        }
        let mut pieces = vec![None; n];
        for (id, p) in by_id {
            pieces[id] = Some(p);
        }
        let mut special = vec![false; n];
        for id in special_ids {
            special[id] = true;
        }
        Ok(Vocab { pieces, special })
    }

    pub fn len(&self) -> usize {
        self.pieces.len()
    }

    pub fn is_empty(&self) -> bool {
        self.pieces.is_empty()
    }

    /// Each token's letters and digits, lowercase (see [`crate::within`]): "" for a piece of
    /// punctuation or space, None for special tokens and raw bytes.
    pub fn letters(&self) -> Vec<Option<String>> {
        self.pieces
            .iter()
            .zip(&self.special)
            .map(|(p, &special)| match p {
                Some(p) if !special && byte_of(p).is_none() => Some(crate::within::letters(p)),
                _ => None,
            })
            .collect()
    }

    /// The text of `ids` as the model's tokenizer decodes it (special tokens skipped).
    pub fn text(&self, ids: &[u32]) -> String {
        let mut bytes: Vec<u8> = Vec::new();
        for &id in ids {
            let id = id as usize;
            if self.special.get(id).copied().unwrap_or(true) {
                continue;
            }
            let Some(Some(p)) = self.pieces.get(id) else {
                continue;
            };
            match byte_of(p) {
                Some(b) => bytes.push(b),
                None => bytes.extend(p.replace('\u{2581}', " ").as_bytes()),
            }
        }
        let s = String::from_utf8_lossy(&bytes).into_owned();
        match s.strip_prefix(' ') {
            Some(rest) => rest.to_string(),
            None => s,
        }
    }
}

/// `<0xNN>` → the byte NN.
fn byte_of(piece: &str) -> Option<u8> {
    let hex = piece.strip_prefix("<0x")?.strip_suffix('>')?;
    (hex.len() == 2).then(|| u8::from_str_radix(hex, 16).ok())?
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vocab() -> Vocab {
        Vocab::from_json(
            r#"{"added_tokens": [
                {"id": 0, "content": "<unk>", "special": true},
                {"id": 1, "content": "<s>", "special": true},
                {"id": 2, "content": "</s>", "special": true}],
              "model": {"type": "BPE", "vocab": {
                "<unk>": 0, "<s>": 1, "</s>": 2, "<0xC3>": 3, "<0xA9>": 4, "<0x2E>": 5,
                "▁Click": 6, "▁plus": 7, "▁caf": 8, "▁▁": 9, ".": 10}}}"#,
        )
        .unwrap()
    }

    #[test]
    fn pieces_bytes_and_specials_decode_as_the_tokenizer_does() {
        let v = vocab();
        let cases: &[(&[u32], &str)] = &[
            (&[1, 6, 7, 10, 2], "Click plus."),
            // Byte fallback: "é" as two bytes; a lone "." as a byte.
            (&[8, 3, 4, 5], "café."),
            // Only the first space goes; a run of them inside stays.
            (&[6, 9, 7], "Click   plus"),
            (&[], ""),
            // An id the vocabulary does not have is skipped, never a panic.
            (&[6, 99_999], "Click"),
        ];
        for (ids, want) in cases {
            assert_eq!(v.text(ids), *want, "{ids:?}");
        }
    }

    #[test]
    fn a_broken_tokenizer_file_is_an_error() {
        for bad in ["", "{}", r#"{"model": {"vocab": {"a": "x"}}}"#, "not json"] {
            assert!(Vocab::from_json(bad).is_err(), "{bad:?}");
        }
    }
}
