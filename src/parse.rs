//! Typed deserialization that names the bad field. Config and options arrive as JSON (CLI,
//! checkpoints, share links; JS objects are written as JSON by src/web.rs); a wrong type, a
//! missing field or an unknown one becomes `invalid \`optimizer.beta1\`: …` with the same path
//! the validators use, and without the parser's "line 1 column 5632" into JSON nobody wrote.

use serde::Deserialize;

use crate::error::{KilnError, Result};

/// `T` from JSON text; `root` names the whole value in an error about it (e.g. `config`).
pub fn from_json<T: for<'de> Deserialize<'de>>(json: &str, root: &str) -> Result<T> {
    let mut de = serde_json::Deserializer::from_str(json);
    let value = serde_path_to_error::deserialize(&mut de).map_err(|e| {
        let path = e.path().to_string();
        let at = if path == "." { root.to_string() } else { path };
        named(&at, &e.into_inner().to_string())
    })?;
    de.end().map_err(|_| KilnError::invalid(root, "has trailing characters after the JSON value"))?;
    Ok(value)
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
    fn the_path_survives_line_breaks_nesting_and_a_tagged_schedule_given_last() {
        // Pretty-printed, as a CLI file is: the error is on line 6.
        let pretty = serde_json::to_string_pretty(&serde_json::from_str::<serde_json::Value>(&format!("{SPIRAL}}}")).unwrap()).unwrap();
        let e = message(&pretty.replace("\"noise\": 0.1", "\"noise\": \"lots\""));
        assert_eq!(e, "invalid `data.points.noise`: must be a finite number, got string \"lots\"");
        let e = message(&SPIRAL.replace("[16]", "{\"width\": 16}").replace("\"batch\":8", "\"batch\":8}"));
        assert!(e.starts_with("invalid `model.mlp.hidden`: must be a list"), "{e}");
        // The schedule is read whole before its kind is known (an internally tagged enum), and it
        // is the optimizer's last member: its error still names it (a path read back from where
        // serde_json stopped named `optimizer` here, session 24).
        let schedule = r#"{"kind":"warmup_cosine","warmup_steps":10,"total_steps":100}"#;
        let e = message(&format!("{SPIRAL},\"optimizer\":{{\"lr\":0.1,\"schedule\":{schedule}}}}}"));
        assert_eq!(e, "invalid `optimizer.schedule.min_lr_fraction`: is missing");
        // A unit variant where a struct variant belongs, as the last member: named too.
        let e = message(r#"{"model":{"mlp":{"input_dim":2,"hidden":[16],"output_dim":2,"activation":"relu"}},"batch":8,"data":"points"}"#);
        assert!(e.starts_with("invalid `data.points`"), "{e}");
    }
}
