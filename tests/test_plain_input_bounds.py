"""`prep quiz --plain` and `prep mock --plain` read standard input a bounded line at a time:
an endless line (`< /dev/zero`, a binary file piped in) is refused in one line on stderr,
exit 2, with every rating made before it saved; it used to be read whole until the memory
ran out (an internal error, or the kernel's kill)."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from prep.engine.store import Store

MESSAGE = (
    "prep: standard input: a line longer than 100,000 characters; stopped there "
    "(every rating before it is saved)"
)


def _capped() -> None:  # the old reader took all the memory it could: keep a failure small
    resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))


def plain(db: Path, command: str, stdin: bytes | Path) -> subprocess.CompletedProcess:
    args = [sys.executable, "-m", "prep.tui.cli", "--db", str(db), command, "--plain"]
    run = {"capture_output": True, "timeout": 120, "preexec_fn": _capped, "env": os.environ}
    if isinstance(stdin, bytes):
        return subprocess.run(args, input=stdin, **run)  # type: ignore[call-overload]
    with open(stdin, "rb") as source:
        return subprocess.run(args, stdin=source, **run)  # type: ignore[call-overload]


def reviews(db: Path) -> int:
    with Store.open(db) as store:
        return len(store.reviews())


@pytest.mark.parametrize("command", ["quiz", "mock"])
def test_an_endless_line_is_refused_in_one_line(tmp_path: Path, command: str) -> None:
    done = plain(tmp_path / "p.db", command, Path("/dev/zero"))
    assert done.returncode == 2, done.stderr.decode()
    assert done.stderr.decode().strip().splitlines() == [MESSAGE]


def test_the_ratings_before_a_long_line_are_kept(tmp_path: Path) -> None:
    db = tmp_path / "p.db"
    done = plain(db, "quiz", b"\n3\n" + b"x" * 200_000 + b"\n3\n")
    assert done.returncode == 2, done.stderr.decode()
    assert done.stderr.decode().strip().splitlines() == [MESSAGE]
    assert "Session over: 1 reviewed" in done.stdout.decode()
    assert reviews(db) == 1  # the one before; nothing after the refused line


def test_a_long_answer_within_the_bound_is_still_read(tmp_path: Path) -> None:
    db = tmp_path / "p.db"
    done = plain(db, "quiz", b"\n3\n" + b"x" * 50_000 + b"\nq\n")
    assert done.returncode == 0, done.stderr.decode()
    assert reviews(db) == 1
