//! Algorithmic sequence tasks, written as lines of text for the character-level Llama:
//! reverse (`3141>1413`), sort (`3141>1134`) and multi-digit addition (`123+45=168`). Each line
//! is one example; the model learns to continue a prompt up to `>` or `=` with the answer.

use serde::{Deserialize, Serialize};

use crate::error::{ensure, Result};
use crate::rng::Rng;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
#[serde(rename_all = "lowercase")]
pub enum SequenceTask {
    Reverse,
    Sort,
    Addition,
}

pub const MAX_EXAMPLES: usize = 50_000;
pub const MAX_DIGITS: usize = 12;

/// One example: (prompt, answer). The training line is prompt + answer + "\n".
pub fn example(task: SequenceTask, digits: usize, rng: &mut Rng) -> (String, String) {
    let number = |rng: &mut Rng, len: usize| -> String { (0..len).map(|_| char::from(b'0' + rng.below(10) as u8)).collect() };
    match task {
        SequenceTask::Reverse | SequenceTask::Sort => {
            let len = 1 + rng.below(digits);
            let s = number(rng, len);
            let answer: String = if task == SequenceTask::Reverse {
                s.chars().rev().collect()
            } else {
                let mut c: Vec<char> = s.chars().collect();
                c.sort_unstable();
                c.into_iter().collect()
            };
            (format!("{s}>"), answer)
        }
        SequenceTask::Addition => {
            let (len_a, len_b) = (1 + rng.below(digits), 1 + rng.below(digits));
            let (a, b) = (number(rng, len_a), number(rng, len_b));
            let sum = a.parse::<u64>().unwrap_or(0) + b.parse::<u64>().unwrap_or(0);
            (format!("{}+{}=", a.trim_start_matches('0').max("0"), b.trim_start_matches('0').max("0")), sum.to_string())
        }
    }
}

/// `examples` lines of the task, seeded, as one text.
pub fn generate_text(task: SequenceTask, examples: usize, digits: usize, seed: u64) -> Result<String> {
    ensure((16..=MAX_EXAMPLES).contains(&examples), "data.sequence.examples", || format!("must be 16..={MAX_EXAMPLES}, got {examples}"))?;
    ensure((1..=MAX_DIGITS).contains(&digits), "data.sequence.digits", || format!("must be 1..={MAX_DIGITS}, got {digits}"))?;
    let mut rng = Rng::new(seed);
    let mut text = String::new();
    for _ in 0..examples {
        let (prompt, answer) = example(task, digits, &mut rng);
        text.push_str(&prompt);
        text.push_str(&answer);
        text.push('\n');
    }
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn examples_are_right() {
        let mut rng = Rng::new(1);
        for _ in 0..200 {
            let (p, a) = example(SequenceTask::Addition, 4, &mut rng);
            let (x, y) = p.trim_end_matches('=').split_once('+').unwrap();
            assert_eq!(x.parse::<u64>().unwrap() + y.parse::<u64>().unwrap(), a.parse::<u64>().unwrap(), "{p}{a}");
            let (p, a) = example(SequenceTask::Reverse, 5, &mut rng);
            assert_eq!(p.trim_end_matches('>').chars().rev().collect::<String>(), a);
            let (p, a) = example(SequenceTask::Sort, 5, &mut rng);
            let mut c: Vec<char> = p.trim_end_matches('>').chars().collect();
            c.sort();
            assert_eq!(c.into_iter().collect::<String>(), a);
        }
        assert_eq!(generate_text(SequenceTask::Sort, 100, 3, 9).unwrap(), generate_text(SequenceTask::Sort, 100, 3, 9).unwrap());
        assert!(generate_text(SequenceTask::Sort, 100, 0, 9).unwrap_err().to_string().contains("digits"));
    }
}
