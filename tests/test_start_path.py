"""What the TUI's first card costs beyond a minimal Textual app (issue 26, item 3), held as
structure, not as time (tests/benchmarks/pty_bench.py measures the time):

- the day's due cards are looked up in the deck cache in one query, not one query a card,
  and found exactly as one by one;
- the console script (tui/entry.py) opens the app without importing click when that is all
  it is asked: it reads those arguments exactly as click does, and leaves everything else
  (help, other commands, bad or unusual values, missing folders) to click, untouched;
- in a real terminal, the first frame of `prep` is drawn without click.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import pty
import random
import select
import subprocess
import sys
import time
from pathlib import Path

import click
import pytest

from prep.engine.decks import deckcache
from prep.engine.decks.deckcache import load_collection
from prep.engine.store import Store
from prep.engine.study.session import build_queue
from prep.tui import entry
from prep.tui.commands import common
from tests.conftest import FIXED_NOW
from tests.test_lookups import add_progress, write_mixed_decks

pytestmark = pytest.mark.usefixtures("utc_local_time")


def test_the_due_cards_are_found_in_one_query(tmp_path: Path) -> None:
    decks = write_mixed_decks(tmp_path / "decks", size=500)
    db = tmp_path / "prep.db"
    with Store.open(db) as store:
        full = load_collection([decks], include_bundled=False)
        add_progress(store, full, seed=5, fraction=0.8)
        store.update_settings(review_limit=5000)
        deckcache.load(store, [decks], include_bundled=False)  # the cache filled once
    with Store.open(db) as store:
        one_by_one = deckcache.load(store, [decks], include_bundled=False)
        want = build_queue(store, one_by_one, FIXED_NOW, new_limit=0)
        ids = [*want.due, "gone", "m0-004", "m1-000", *(c.id for c in full.cards[:50])]
        expected = [c for c in ids if c in one_by_one]  # looked up one id at a time
        statements: list[str] = []
        store.conn.set_trace_callback(statements.append)
        coll = deckcache.load(store, [decks], include_bundled=False)
        got = build_queue(store, coll, FIXED_NOW, new_limit=0)
        store.conn.set_trace_callback(None)
        assert got == want
        assert len(want.due) > 500  # (more than one statement's worth of ids)
        lookups = [s for s in statements if "FROM deck_cards dc" in s]
        assert lookups and all("dc.id IN (" in s for s in lookups), lookups[:3]
        assert len(lookups) == math.ceil(len(want.due) / 500)
        assert coll._where_map is None  # (not by reading every cached id instead)
        fresh = deckcache.load(store, [decks], include_bundled=False)
        assert fresh.known(ids) == expected
        assert "gone" not in expected and len(expected) < len(ids)
        assert fresh.known([]) == []


def _click_opens(args: list[str], monkeypatch) -> dict | None:
    """What click's command line runs the app with for ``args`` (None: it does something
    else, or refuses them)."""
    import prep.tui.app
    from prep.tui.cli import main

    seen: dict = {}

    def app(**kwargs) -> int:
        seen.update(kwargs)
        return 0

    monkeypatch.setattr(prep.tui.app, "run", app)
    monkeypatch.setattr(common, "line_mode_reason", lambda: None)  # (a terminal)
    refused = (click.ClickException, click.exceptions.Exit, click.exceptions.Abort, SystemExit)
    with contextlib.suppress(refused):
        main.main(args=list(args), prog_name="prep", standalone_mode=False)
    if not seen:
        return None
    assert seen.pop("review_first") is True
    return seen


def _fragments(folder: str, missing: str) -> list[list[str]]:
    return [
        ["--db", "a.db"],
        ["--db=b.db"],
        ["--db", "-x.db"],
        ["--db="],
        ["--questions", folder],
        [f"--questions={folder}"],
        ["--questions", missing],
        ["quiz"],
        ["quiz"],
        ["--deck", "wo-core"],
        ["--deck=x y"],
        ["--new", "0"],
        ["--new=7"],
        ["--new", "-1"],
        ["--new", "+3"],
        ["--new", " 4"],
        ["--new", "\u0663"],  # an Arabic-Indic three: int() reads it, so may click
        ["--limit", "1"],
        ["--limit=0"],
        ["--limit", "12"],
        ["--plain"],
        ["--help"],
        ["-h"],
        ["--version"],
        ["stats"],
        ["--"],
        ["extra"],
        ["--db"],
        ["--dbx", "c.db"],
    ]


def test_the_quick_way_in_reads_what_click_reads(tmp_path: Path, monkeypatch, capsys) -> None:
    folder = tmp_path / "decks"
    folder.mkdir()
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(entry, "line_mode_reason", lambda: None)  # (a terminal)
    fragments = _fragments(str(folder), str(tmp_path / "missing"))
    rng = random.Random(26)
    cases = [[], ["quiz"], ["--db", "a.db", "quiz"], ["--questions", str(folder), "quiz"]]
    cases += [["--db", "a.db", "quiz", "--deck", "d", "--new", "3", "--limit", "9"]]
    for _ in range(400):  # anything, in any order
        cases.append([t for _ in range(rng.randint(1, 5)) for t in rng.choice(fragments)])
    for _ in range(200):  # the usual shape: options, quiz, its options
        head = [t for _ in range(rng.randint(0, 3)) for t in rng.choice(fragments[:7])]
        tail = [t for _ in range(rng.randint(0, 3)) for t in rng.choice(fragments[9:20])]
        cases.append([*head, "quiz", *tail] if tail or rng.random() < 0.5 else head)
    opened = 0
    for env in ({}, {"PREP_DB": "env.db", "PREP_QUESTIONS": str(folder)}, {"PREP_DB": ""}):
        for name in ("PREP_DB", "PREP_QUESTIONS"):
            monkeypatch.delenv(name, raising=False)
        for name, value in env.items():
            monkeypatch.setenv(name, value)
        for args in cases:
            quick = entry._app_now(list(args))
            if quick is None:
                continue  # click reads them (always right)
            assert _click_opens(args, monkeypatch) == quick, (args, env)
            opened += 1
        capsys.readouterr()
    assert opened > 150  # (not vacuous: the quick way in is taken for the common forms)
    for args in (["--questions", str(tmp_path / "missing")], ["--new", "1"], ["--help"]):
        assert entry._app_now(args) is None, args  # a missing folder, quiz's option alone
    monkeypatch.setenv("_PREP_COMPLETE", "bash_source")
    assert entry._app_now([]) is None  # click's shell completion answers, not the app
    monkeypatch.delenv("_PREP_COMPLETE")
    monkeypatch.setattr(entry, "line_mode_reason", lambda: "not a terminal")
    assert entry._app_now([]) is None  # the line mode is click's


FIRST_FRAME = """
import json, sys
from prep.tui import startup

first, seen_at = startup.Startup.post_display_hook, sys.argv[1]

def hook(self):
    if self._first_frame is not None and not self._batch_count:
        with open(seen_at, "w") as f:
            json.dump({"modules": sorted(sys.modules), "screen": type(self.screen).__name__,
                       "card": self.screen.session.current.prompt, "quick": quick}, f)
        self.exit(0)
    return first(self)

startup.Startup.post_display_hook = hook
sys.argv = ["prep", *sys.argv[2:]]
from prep.tui import entry

quick = repr(entry._app_now(sys.argv[1:]))  # (what the quick way in reads)
from prep.tui.entry import run

run()
"""


def _in_a_terminal(cmd: list[str], timeout: float = 120.0) -> int:
    """Run ``cmd`` in a pseudo-terminal (its screen read and dropped); its exit status."""
    pid, fd = pty.fork()
    if pid == 0:
        try:
            env = {**os.environ, "TERM": "xterm-256color"}
            os.execvpe(cmd[0], cmd, env)
        finally:
            os._exit(127)
    end = time.monotonic() + timeout
    try:
        while time.monotonic() < end:
            if select.select([fd], [], [], 0.2)[0]:
                try:
                    if not os.read(fd, 65536):
                        break
                except OSError:
                    break
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                return os.waitstatus_to_exitcode(status)
        os.kill(pid, 9)
        return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
    finally:
        os.close(fd)


def test_the_console_script_draws_the_first_card_without_click(tmp_path: Path) -> None:
    out = tmp_path / "seen.json"
    db = tmp_path / "prep.db"
    # not a terminal: click's line mode, as before (and the database made, the decks cached:
    # a new database is made through sqlite_utils, which imports click)
    plain = subprocess.run(
        [sys.executable, "-m", "prep.tui.entry", "--db", str(db)],
        input="q\n",
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert plain.returncode == 0, plain.stderr
    assert "not a terminal; running the line-oriented session" in plain.stderr
    code = _in_a_terminal([sys.executable, "-c", FIRST_FRAME, str(out), "--db", str(db)])
    assert code == 0 and out.exists()
    seen = json.loads(out.read_text())
    assert seen["screen"] == "ReviewScreen" and seen["card"]
    assert " ".join(seen["card"].split())[:40] in " ".join(plain.stdout.split())
    assert seen["quick"] != "None"  # the quick way in was taken
    assert "click" not in seen["modules"]
    assert "prep.tui.cli" not in seen["modules"]


def test_the_console_script_imports_the_standard_library_only_at_its_top() -> None:
    import ast

    tree = ast.parse(Path(entry.__file__).read_text(encoding="utf-8"))
    for node in tree.body:
        names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
        if isinstance(node, ast.ImportFrom):
            names = [node.module or ""]
        for name in names:
            assert name.split(".")[0] in {*sys.stdlib_module_names, "__future__"} or (
                name == "prep.tui.startup"  # (the collector's pause: the standard library)
            ), name
