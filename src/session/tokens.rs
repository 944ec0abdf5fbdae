//! Which of a tokenizer's ids is which of Kiln's. Kiln's tokens are the text's characters in
//! sorted order (id = index); a char-level Hugging Face tokenizer may number them any way and
//! hold tokens the text never uses (special tokens such as `<unk>`, characters of other texts).
//! `token_order` gives, for every Kiln id, the file's id: the text's characters first, then
//! the file's other ids in increasing order (Kiln never samples those; they keep their rows so
//! the logits' softmax is the file's). Permuting the embedding's and the head's rows this way
//! computes exactly the same function.

use serde_json::Value;

use crate::error::Result;
use crate::session::hf_import::refuse;

/// `order[kiln id]` = the tokenizer's id, for `vocab` ids; `chars` are the text's characters.
pub fn token_order(tokenizer: &[u8], chars: &[char], vocab: usize) -> Result<Vec<usize>> {
    let t: Value = serde_json::from_slice(tokenizer).map_err(|e| refuse("tokenizer.json", format!("is not JSON: {e}")))?;
    for stage in ["normalizer", "pre_tokenizer"] {
        if !t.get(stage).unwrap_or(&Value::Null).is_null() {
            return Err(refuse(
                &format!("tokenizer.json: {stage}"),
                "is set: Kiln's tokens are the text's characters as they are (no normalizer, no pre-tokenizer)",
            ));
        }
    }
    if t["model"]["merges"].as_array().is_some_and(|m| !m.is_empty()) {
        return Err(refuse("tokenizer.json: model.merges", "is another tokenizer: Kiln's has one token per character and no merges"));
    }
    let table = t["model"]["vocab"].as_object().ok_or_else(|| refuse("tokenizer.json: model.vocab", "is missing"))?;
    let mut order = Vec::with_capacity(vocab);
    for c in chars {
        let id = table.get(&c.to_string()).and_then(Value::as_u64).map(|id| id as usize);
        match id {
            Some(id) if id < vocab => order.push(id),
            Some(id) => return Err(refuse("tokenizer.json: model.vocab", format!("gives {c:?} the id {id}, past vocab_size {vocab}"))),
            None => {
                return Err(refuse("tokenizer.json: model.vocab", format!("has no token for the character {c:?} of the text: Kiln's tokens are characters")))
            }
        }
    }
    let mut taken = vec![false; vocab];
    for &id in &order {
        taken[id] = true;
    }
    order.extend((0..vocab).filter(|&id| !taken[id]));
    if order.len() != vocab {
        return Err(refuse("tokenizer.json: model.vocab", "maps two characters of the text to one id"));
    }
    Ok(order)
}
