#!/usr/bin/env python3
"""Compare two step listings of `KILN_PROFILE_EACH=1 kiln bench ...` (saved stdout): align their
dispatches by entry point and grid, and print each stretch that differs with its microseconds.
With `KILN_PLAN_FORCE` this shows what one product's alternative plan (its split and reduction
included) costs against the planned one, while the unchanged dispatches line up.

    python3 bench/profile_diff.py main.txt forced.txt
"""
import difflib
import re
import sys

# "  llama-d256 #12  matmul_wide   [96, 1, 1]   62.1 µs" (a preset's name may hold a space:
# "llama-small Mixed")
LINE = re.compile(r"^\s+(.+? #\d+)\s+(\S+)\s+(\[[^\]]*\])\s+([\d.]+) µs")


def dispatches(path):
    """(entry point, grid, µs, "preset #i") of every dispatch in the listing, in step order."""
    with open(path, encoding="utf-8") as f:
        return [(m[2], m[3], float(m[4]), m[1]) for m in map(LINE.match, f) if m]


def describe(rows):
    return " + ".join(f"{entry}{grid} {us:.1f}" for entry, grid, us, _ in rows) or "nothing"


def main(base_path, run_path):
    base, run = dispatches(base_path), dispatches(run_path)
    total = lambda rows: sum(us for _, _, us, _ in rows)
    print(f"sum {total(base):.0f} -> {total(run):.0f} µs, {len(base)} -> {len(run)} dispatches")
    matcher = difflib.SequenceMatcher(a=[r[:2] for r in base], b=[r[:2] for r in run], autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag != "equal":
            a, b = base[i1:i2], run[j1:j2]
            where = (a or b)[0][3]
            print(f"  {where}: {describe(a)}  ->  {describe(b)}   ({total(a):.1f} -> {total(b):.1f})")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
