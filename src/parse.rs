//! Typed deserialization that names the bad field. Config and options arrive as JSON (CLI,
//! checkpoints, share links; JS objects are written as JSON by src/web.rs); a wrong type, a
//! missing field or an unknown one becomes `invalid \`optimizer.beta1\`: …` with the same path
//! the validators use, and without the parser's "line 1 column 5632" into JSON nobody wrote.
//!
//! The path comes from where serde_json stopped: `path_at` walks the text up to that point.
//! (serde_path_to_error tracks it during deserialization instead, at 15 KB of the page's first
//! wasm, gzipped: every struct's visitor instantiated once more through its wrappers.)

use serde::Deserialize;

use crate::error::{KilnError, Result};

/// `T` from JSON text; `root` names the whole value in an error about it (e.g. `config`).
pub fn from_json<T: for<'de> Deserialize<'de>>(json: &str, root: &str) -> Result<T> {
    let mut de = serde_json::Deserializer::from_str(json);
    let value = T::deserialize(&mut de).map_err(|e| {
        let path = path_at(json, offset_of(json, e.line(), e.column()));
        named(if path.is_empty() { root } else { &path }, &e.to_string())
    })?;
    de.end().map_err(|_| KilnError::invalid(root, "has trailing characters after the JSON value"))?;
    Ok(value)
}

/// The byte offset of serde_json's (1-based line, column): just past what it read last.
fn offset_of(json: &str, line: usize, column: usize) -> usize {
    let line_start: usize = json.split_inclusive('\n').take(line.saturating_sub(1)).map(str::len).sum();
    (line_start + column).min(json.len())
}

/// One object or array open at a point of the text: the key being read, or the element index.
enum Open {
    Object(Option<String>),
    Array(usize),
}

/// The path (`model.mlp.hidden[0]`) of the value open at byte `end` of `json`: after a value,
/// the key or index it was read for; after a key, that key; after a closing brace, the key of
/// the object it closed. Keys are taken as written (Kiln's fields have no escapes).
fn path_at(json: &str, end: usize) -> String {
    let mut open: Vec<Open> = vec![];
    let (mut in_string, mut escaped) = (false, false);
    let mut text = vec![];
    for &b in &json.as_bytes()[..end] {
        if in_string {
            match (escaped, b) {
                (false, b'\\') => escaped = true,
                (false, b'"') => {
                    in_string = false;
                    // A key fills its object's empty slot; a string value leaves its key there.
                    if let Some(Open::Object(key @ None)) = open.last_mut() {
                        *key = Some(String::from_utf8_lossy(&text).into_owned());
                    }
                }
                _ => {
                    escaped = false;
                    text.push(b);
                }
            }
            continue;
        }
        match (b, open.last_mut()) {
            (b'"', _) => {
                (in_string, escaped) = (true, false);
                text.clear();
            }
            (b'{', _) => open.push(Open::Object(None)),
            (b'[', _) => open.push(Open::Array(0)),
            (b'}' | b']', _) => drop(open.pop()),
            (b',', Some(Open::Object(key))) => *key = None,
            (b',', Some(Open::Array(i))) => *i += 1,
            _ => {}
        }
    }
    let mut path = String::new();
    for frame in &open {
        match frame {
            Open::Object(Some(key)) if path.is_empty() => path.push_str(key),
            Open::Object(Some(key)) => path.push_str(&format!(".{key}")),
            Open::Array(i) => path.push_str(&format!("[{i}]")),
            Open::Object(None) => {}
        }
    }
    path
}

/// Turns serde's message about the value at `at` into Kiln's field-naming error.
fn named(at: &str, message: &str) -> KilnError {
    // serde_json appends where in the text it was: meaningless to a user who wrote an object.
    let message = message.find(" at line ").map_or(message, |i| &message[..i]);
    if let Some(field) = between(message, "missing field `", "`") {
        return KilnError::invalid(join(at, field), "is missing");
    }
    if let Some(field) = between(message, "unknown field `", "`") {
        let allowed = message.split_once("expected ").map_or(String::new(), |(_, a)| format!("; allowed: {a}"));
        // The path already ends at the unknown key.
        let at = if at == field || at.ends_with(&format!(".{field}")) { at.to_string() } else { join(at, field) };
        return KilnError::invalid(at, format!("is not a known field{allowed}"));
    }
    let reworded = ["invalid type: ", "invalid value: "].iter().find_map(|p| message.strip_prefix(p)).and_then(|rest| {
        let (got, expected) = rest.split_once(", expected ")?;
        Some(format!("must be {}, got {}", expected_as_words(expected), got_as_words(got)))
    });
    KilnError::invalid(at, reworded.unwrap_or_else(|| message.to_string()))
}

fn join(at: &str, field: &str) -> String {
    if at.is_empty() || at == "config" || at == "options" {
        field.to_string()
    } else {
        format!("{at}.{field}")
    }
}

fn between<'a>(s: &'a str, start: &str, end: &str) -> Option<&'a str> {
    let rest = &s[s.find(start)? + start.len()..];
    Some(&rest[..rest.find(end)?])
}

fn expected_as_words(expected: &str) -> String {
    match expected {
        "usize" | "u64" | "u32" | "u16" | "u8" => "a whole number ≥ 0".into(),
        "f32" | "f64" => "a finite number".into(),
        "a boolean" | "a string" => expected.into(),
        other => other.replace("a sequence", "a list"),
    }
}

fn got_as_words(got: &str) -> String {
    if got == "null" {
        return "null (NaN and Infinity become null in JSON)".into();
    }
    for kind in ["integer ", "floating point "] {
        if let Some(v) = got.strip_prefix(kind) {
            return v.trim_matches('`').to_string();
        }
    }
    got.to_string()
}

#[cfg(test)]
mod tests {
    use crate::config::SessionConfig;

    fn message(json: &str) -> String {
        SessionConfig::from_json(json).unwrap_err().to_string()
    }

    const SPIRAL: &str = r#"{"model":{"mlp":{"input_dim":2,"hidden":[16],"output_dim":2,"activation":"relu"}},"data":{"points":{"task":"spiral","points":100,"noise":0.1,"validation_fraction":0.2}},"batch":8"#;

    #[test]
    fn type_errors_name_the_field_in_words() {
        let e = message(&format!("{SPIRAL},\"optimizer\":{{\"lr\":null}}}}"));
        assert_eq!(e, "invalid `optimizer.lr`: must be a finite number, got null (NaN and Infinity become null in JSON)");
        let e = message(&SPIRAL.replace("\"batch\":8", "\"batch\":-1}"));
        assert_eq!(e, "invalid `batch`: must be a whole number ≥ 0, got -1");
        let e = message(&SPIRAL.replace("[16]", "[1.5]").replace("\"batch\":8", "\"batch\":8}"));
        assert_eq!(e, "invalid `model.mlp.hidden[0]`: must be a whole number ≥ 0, got 1.5");
        let e = message(&SPIRAL.replace(",\"validation_fraction\":0.2", "").replace("\"batch\":8", "\"batch\":8}"));
        assert_eq!(e, "invalid `data.points.validation_fraction`: is missing");
        let e = message(&SPIRAL.replace("\"noise\"", "\"nois\"").replace("\"batch\":8", "\"batch\":8}"));
        assert!(e.starts_with("invalid `data.points.nois`: is not a known field; allowed: "), "{e}");
        let e = message(&format!("{SPIRAL},\"optimizer\":{{\"beta1\":\"high\"}}}}"));
        assert_eq!(e, "invalid `optimizer.beta1`: must be a finite number, got string \"high\"");
        let e = message(&format!("{SPIRAL},\"seed\":1e3}}"));
        assert!(e.starts_with("invalid `seed`: must be a whole number ≥ 0"), "{e}");
        assert!(!message(&format!("{SPIRAL},\"optimizer\":{{\"lr\":1e300}}}}")).contains("inf"));
    }

    #[test]
    fn the_path_survives_line_breaks_strings_and_nesting() {
        // Pretty-printed, as a CLI file is: the error is on line 6.
        let pretty = serde_json::to_string_pretty(&serde_json::from_str::<serde_json::Value>(&format!("{SPIRAL}}}")).unwrap()).unwrap();
        let e = message(&pretty.replace("\"noise\": 0.1", "\"noise\": \"lots\""));
        assert_eq!(e, "invalid `data.points.noise`: must be a finite number, got string \"lots\"");
        // A map where a list belongs, and a string holding quotes, braces and commas before it.
        let text = r#"{"a": "x\"}],{", "b": [0, {"c": [1, 2]}, {"d": {"#;
        assert_eq!(super::path_at(text, text.len()), "b[2].d");
        assert_eq!(super::path_at(text, text.find("2]").unwrap() + 1), "b[1].c[1]");
        assert_eq!(super::path_at(text, text.find("[1").unwrap()), "b[1].c");
        let e = message(&SPIRAL.replace("[16]", "{\"width\": 16}").replace("\"batch\":8", "\"batch\":8}"));
        assert!(e.starts_with("invalid `model.mlp.hidden`: must be a list"), "{e}");
        let e = message(&SPIRAL.replace("\"mlp\"", "\"mpl\"").replace("\"batch\":8", "\"batch\":8}"));
        assert!(e.starts_with("invalid `model.mpl`: unknown variant `mpl`"), "{e}");
    }
}
