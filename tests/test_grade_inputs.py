"""`prep grade` reads its rubric, its answers file and an answer on standard input within
bounds and as UTF-8: a device that never ends (/dev/zero), a folder, a missing file or bytes
that are not text are one line naming what, exit 2 — not a read until the memory runs out,
not an internal error, not an exception's class name."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

RUBRIC = "question: q\npoints:\n  - id: p1\n    text: W_O mixes heads\n"
ANSWERS = '{"answer_id": 1, "answer": "W_O mixes heads"}\n'


def _capped() -> None:  # the old reader took all the memory it could: keep a failure small
    resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))


def grade(tmp_path: Path, *args: str, stdin: bytes | str = b"") -> subprocess.CompletedProcess:
    """`prep grade ARGS`, its standard input ``stdin`` (bytes, or a path to read it from)."""
    command = [sys.executable, "-m", "prep.tui.cli", "--db", str(tmp_path / "p.db"), "grade"]
    run = {"capture_output": True, "timeout": 120, "preexec_fn": _capped}
    env = {**os.environ, "PREP_DEBUG": ""}
    if isinstance(stdin, bytes):
        return subprocess.run([*command, *args], input=stdin, env=env, **run)  # type: ignore[call-overload]
    with open(stdin, "rb") as source:
        return subprocess.run([*command, *args], stdin=source, env=env, **run)  # type: ignore[call-overload]


def one_line(done: subprocess.CompletedProcess) -> str:
    err = done.stderr.decode()
    assert done.returncode == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path]:
    (tmp_path / "r.yaml").write_text(RUBRIC)
    (tmp_path / "a.jsonl").write_text(ANSWERS)
    return tmp_path / "r.yaml", tmp_path / "a.jsonl"


def test_an_endless_rubric_or_answers_file_is_refused(tmp_path: Path, files) -> None:
    rubric, answers = files
    line = one_line(grade(tmp_path, "--rubric", "/dev/zero", "--answers", str(answers)))
    assert line.startswith("prep: /dev/zero: more than") and "too big" in line
    line = one_line(grade(tmp_path, "--rubric", str(rubric), "--answers", "/dev/zero"))
    assert line.startswith("prep: /dev/zero: more than")


def test_an_endless_answer_on_stdin_is_refused(tmp_path: Path) -> None:
    line = one_line(grade(tmp_path, "wo-two-roles", stdin="/dev/zero"))
    assert line.startswith("prep: standard input: more than")


def test_bytes_that_are_not_text_are_named(tmp_path: Path, files) -> None:
    rubric, answers = files
    line = one_line(grade(tmp_path, "wo-two-roles", stdin=b"\xff\xfe an answer\n"))
    assert line == "prep: standard input: not UTF-8 text (byte 1)"
    bad = tmp_path / "bad.yaml"
    bad.write_bytes(b"question: q\xff\n")
    line = one_line(grade(tmp_path, "--rubric", str(bad), "--answers", str(answers)))
    assert line == f"prep: {bad}: not UTF-8 text (byte 12)"


def test_a_folder_or_a_missing_file_is_said_in_words(tmp_path: Path, files) -> None:
    rubric, answers = files
    line = one_line(grade(tmp_path, "--rubric", str(tmp_path), "--answers", str(answers)))
    assert line == f"prep: {tmp_path}: cannot read it (is a folder, not a file)"
    missing = tmp_path / "nope.jsonl"
    line = one_line(grade(tmp_path, "--rubric", str(rubric), "--answers", str(missing)))
    assert line == f"prep: {missing}: cannot read it (no such file)"
