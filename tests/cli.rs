//! The command-line trainer refuses what it does not understand, before touching a GPU: an
//! unknown option (a typo, or `--help` after a subcommand) is an error that names it and
//! shows the usage, rather than being ignored while a long benchmark or training run starts.

use std::process::Command;

fn kiln(args: &[&str]) -> (bool, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_kiln")).args(args).output().expect("the kiln binary runs");
    (out.status.success(), String::from_utf8_lossy(&out.stderr).into_owned())
}

#[test]
fn unknown_options_are_refused_with_the_usage() {
    for (args, bad, usage) in [
        (&["bench", "--help"][..], "--help", "kiln bench [--quick] [--scaling | --mixed]"),
        (&["bench", "--quick", "--secnds", "2"][..], "--secnds", "kiln bench [--quick] [--scaling | --mixed]"),
        (&["train", "mlp-spiral", "--stpes", "3"][..], "--stpes", "kiln train <preset>"),
    ] {
        let (ok, err) = kiln(args);
        assert!(!ok, "{args:?} must fail");
        assert!(err.contains(&format!("unexpected `{bad}`")) && err.contains(usage), "{args:?}: {err}");
    }
}
