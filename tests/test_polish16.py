"""Round sixteen's polish: the small things the hostile pass left (report_hostile16.md,
"Noticed, left alone"). Each test failed before its fix."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from prep.engine.textsafe import one_line_safe, quoted, quoted_all
from prep.tui.cli import main

ODD = os.fsdecode(b"d\xffe")  # an argument with a byte that is not UTF-8: Python holds \udcff


def test_quoted_writes_a_byte_that_is_not_utf8_as_one_line_safe_does() -> None:
    assert quoted(ODD) == "'d\\xffe'" and one_line_safe(ODD) == "d\\xffe"
    assert quoted("a\\udcff") == "'a\\\\udcff'"  # a typed backslash stays a typed backslash
    assert quoted("\x1b[31m") == "'\\x1b[31m'" and quoted("it's") == '"it\'s"'
    assert quoted_all(["a", ODD]) == "'a', 'd\\xffe'"
    assert quoted(os.fsdecode(b"\xff" * 100)).endswith("…") and len(quoted("x" * 100)) == 60


@pytest.mark.parametrize(
    "args",
    [
        ["cram", "--deck", ODD],
        ["quiz", "--plain", "--deck", ODD],
        ["export", "--format", "apkg", "--deck", ODD, "-o", str(Path("/tmp/polish16-x.apkg"))],
        ["config", "plan_decks", f"small,{ODD}"],
        ["stats", "--since", ODD],
        ["config", ODD, "1"],
        ["config", "parameters", ODD],
        ["config", "new_per_day", ODD],
        ["grade", ODD],
        ["backup", "--restore", ODD],
    ],
    ids=lambda a: a[0] + ("-" + a[1] if a[1].startswith("-") or a[0] == "config" else ""),
)
def test_a_value_that_is_not_utf8_is_quoted_as_its_byte(
    args: list[str], small_deck_dir: Path, tmp_path: Path
) -> None:
    """`cram --deck $'d\\xffe'` said "no deck named 'd\\udcffe'", where sync and export write
    the byte as \\xff: every message that quotes a user's value now quotes it alike."""
    db = tmp_path / "p.db"
    CliRunner().invoke(main, ["--db", str(db), "config", "new_per_day", "20"])  # (a database)
    done = CliRunner().invoke(main, ["--db", str(db), "--questions", str(small_deck_dir), *args])
    assert done.exit_code == 2, done.output
    assert "udc" not in done.stderr and "'d\\xffe'" in done.stderr, done.stderr
