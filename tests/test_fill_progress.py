"""The first open of a large collection fills the deck cache with progress shown (issue 19,
item 11): the engine reports each file, the line mode prints it on stderr, the app shows a
screen while a thread fills the cache, and nothing is parsed twice."""

from __future__ import annotations

import asyncio
import io
import subprocess
import sys
from pathlib import Path

import pytest

from prep.engine.decks import deckcache
from prep.engine.decks.fill import DONE, PARSE, STORE, Fill, describe
from prep.engine.store import Store
from prep.tui import startup as startup_module
from prep.tui.app import PrepApp
from prep.tui.screens.fill import FillScreen
from prep.tui.upgrade import FillLine

pytestmark = pytest.mark.usefixtures("utc_local_time")


def write_decks(folder: Path, n_files: int = 3, per_file: int = 40) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for f in range(n_files):
        lines = [f"deck: gen-{f}", f"title: Generated {f}", "cards:"]
        for i in range(per_file):
            lines += [
                f"  - id: gen-{f}-{i}",
                "    kind: recall",
                f"    prompt: What does head {i} of deck {f} write?",
                "    answer: Its slice of W_O, mixed back into d_model.",
            ]
        (folder / f"gen-{f}.yaml").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return folder


def test_load_reports_each_changed_file_and_nothing_when_cached(tmp_path: Path) -> None:
    decks = write_decks(tmp_path / "decks")
    store = Store.open(tmp_path / "p.db")
    seen: list[tuple[str, str, int, int, float]] = []

    def progress(fill: Fill) -> None:
        seen.append((fill.stage, fill.file, fill.files_done, fill.cards, fill.fraction))

    pending = deckcache.pending_fill(store, [decks], include_bundled=False)
    assert (pending.files_total, pending.bytes_total) == (
        3,
        sum(p.stat().st_size for p in decks.iterdir()),
    )
    coll = deckcache.load(store, [decks], include_bundled=False, progress=progress)
    assert len(coll) == 120
    parses = [s for s in seen if s[0] == PARSE]
    assert [Path(s[1]).name for s in parses] == ["gen-0.yaml", "gen-1.yaml", "gen-2.yaml"]
    assert [s[2] for s in parses] == [0, 1, 2]  # files done before each parse
    assert [s[3] for s in seen if s[0] == STORE] == [40, 80, 120]
    fractions = [s[4] for s in seen]
    assert fractions == sorted(fractions) and seen[-1][0] == DONE and fractions[-1] == 1.0
    # warm: nothing to read, nothing reported
    seen.clear()
    assert deckcache.pending_fill(store, [decks], include_bundled=False).files_total in (0, 3)
    deckcache.load(store, [decks], include_bundled=False, progress=progress)
    assert [s for s in seen if s[0] == PARSE] == []
    # one file edited: only it is parsed, and said so
    (decks / "gen-1.yaml").write_text(
        (decks / "gen-1.yaml").read_text().replace("head 3 ", "head three "), encoding="utf-8"
    )
    seen.clear()
    deckcache.load(store, [decks], include_bundled=False, progress=progress)
    assert [Path(s[1]).name for s in seen if s[0] == PARSE] == ["gen-1.yaml"]


def test_describe_says_what_how_far_and_when_done() -> None:
    fill = Fill(files_total=3, bytes_total=30_000_000, files_done=1, bytes_done=10_000_000)
    fill.file, fill.cards = "big.yaml", 40_000
    line = describe(fill)
    assert "parsing big.yaml (file 2 of 3, 33% of 30 MB)" in line
    assert "40,000 cards so far" in line and "left" in line
    fill.stage = DONE
    assert describe(fill).startswith("read 40,000 cards from 3 deck files into the cache in")


def test_fill_line_on_a_pipe_prints_after_a_second_and_the_end() -> None:
    out = io.StringIO()
    line = FillLine(out, after=0.0)
    fill = Fill(files_total=1, bytes_total=1000)
    fill.file = "big.yaml"
    line(fill)
    fill.stage, fill.cards, fill.files_done, fill.bytes_done = DONE, 5, 1, 1000
    line(fill)
    text = out.getvalue().splitlines()
    assert text[0].startswith("prep: reading the decks into the cache") and "big.yaml" in text[0]
    assert text[-1].startswith("prep: read 5 cards from 1 deck file into the cache in")
    quiet = io.StringIO()
    fast = FillLine(quiet)  # the default: a fill over within a second prints nothing
    fast(Fill(files_total=1, bytes_total=10))
    assert quiet.getvalue() == ""


def test_plain_quiz_shows_the_fill_on_stderr(tmp_path: Path) -> None:
    decks = write_decks(tmp_path / "decks", n_files=2, per_file=30)
    code = (
        "import sys\n"
        "import prep.tui.upgrade as u\n"
        "u.FILL_SHOW_AFTER_S = 0.0\n"  # every fill shows, however quick (a small test deck)
        "from prep.tui.cli import main\n"
        "sys.exit(main())\n"
    )
    db = tmp_path / "p.db"
    args = ["--db", str(db), "--questions", str(decks), "quiz", "--plain"]
    result = subprocess.run(
        [sys.executable, "-c", code, *args],
        input="q\n",
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert "prep: reading the decks into the cache" in result.stderr
    assert "into the cache in" in result.stderr.splitlines()[-1]
    again = subprocess.run(
        [sys.executable, "-c", code, *args], input="q\n", capture_output=True, text=True
    )
    assert "reading the decks" not in again.stderr  # filled once


def test_app_fills_a_large_collection_behind_a_progress_screen(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    decks = write_decks(tmp_path / "decks")
    monkeypatch.setattr(startup_module, "FILL_SCREEN_BYTES", 1)  # the test decks count as large
    lines: list[str] = []
    shown = FillScreen.on_fill_screen_progress

    def record(self, message) -> None:  # noqa: ANN001
        shown(self, message)
        lines.append(self.line)

    monkeypatch.setattr(FillScreen, "on_fill_screen_progress", record)
    db = tmp_path / "p.db"
    app = PrepApp(db=str(db), questions=[decks], include_bundled=False, demos={})

    async def run() -> None:
        async with app.run_test(size=(100, 30)) as pilot:
            for _ in range(600):
                if not isinstance(app.screen, FillScreen) and len(app.collection) == 120:
                    break
                await pilot.pause(0.05)
            assert len(app.collection) == 120
            await pilot.pause(0.3)  # let the home screen finish mounting before the test ends

    asyncio.run(run())
    assert lines and lines[0].startswith("Reading the decks into the cache")
    assert any("parsing" in line and "gen-0.yaml (file 1 of 3" in line for line in lines)
    assert lines[-1].startswith("Read 120 cards from 3 deck files")
    stages: list[str] = []
    with Store.open(db) as store:  # filled: a second open parses nothing
        deckcache.load(
            store, [decks], include_bundled=False, progress=lambda f: stages.append(f.stage)
        )
    assert PARSE not in stages


def test_a_big_fill_parses_on_every_core_with_the_same_result(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from concurrent.futures import Future

    from prep.engine.decks import parsepool
    from prep.engine.decks.deckcache import load_collection

    decks = write_decks(tmp_path / "decks", n_files=4, per_file=25)
    (decks / "broken.yaml").write_text("deck: broken\ncards:\n  - id: [unclosed\n")
    (decks / "dup.yaml").write_text(
        "deck: dup\ncards:\n  - id: gen-0-1\n    kind: recall\n    prompt: p\n    answer: a\n"
    )
    monkeypatch.setattr(parsepool, "PARALLEL_BYTES", 0)  # every fill counts as big
    monkeypatch.setattr(parsepool, "cores", lambda: 2)
    started: list[str] = []
    real_submit = parsepool.ParsePool.submit

    def submit(self, key, text, shown, stem) -> None:  # noqa: ANN001
        real_submit(self, key, text, shown, stem)  # (as each file is read: fill7)
        if key in self._futures:
            started.append(key)

    monkeypatch.setattr(parsepool.ParsePool, "submit", submit)
    store = Store.open(tmp_path / "p.db")
    pooled = deckcache.load(store, [decks], include_bundled=False)
    assert len(started) == 6  # every file went to the worker processes
    plain = load_collection([decks], include_bundled=False)
    assert [c.id for c in pooled.cards] == [c.id for c in plain.cards]
    assert [c.content_hash for c in pooled.cards] == [c.content_hash for c in plain.cards]
    assert [str(e) for e in pooled.errors] == [str(e) for e in plain.errors]
    assert any("broken.yaml" in str(e) for e in pooled.errors)

    # a worker that fails leaves the file to be parsed here, with the same result
    pool = parsepool.ParsePool([], 0)
    failed: Future = Future()
    failed.set_exception(RuntimeError("worker died"))
    pool._futures["k"] = failed
    calls: list[str] = []

    def parse(text: str, shown: str, stem: str) -> str:
        calls.append(stem)
        return "parsed here"

    assert pool.result("k", parse, "text", "k.yaml", "k") == "parsed here" and calls == ["k"]


def test_a_small_fill_or_one_core_starts_no_process(monkeypatch: pytest.MonkeyPatch) -> None:
    from prep.engine.decks import parsepool

    jobs = [("a", "x" * 10, "a.yaml", "a"), ("b", "x" * 10, "b.yaml", "b")]
    assert parsepool.ParsePool(jobs, 20)._pool is None  # under PARALLEL_BYTES
    monkeypatch.setattr(parsepool, "cores", lambda: 1)
    assert parsepool.ParsePool(jobs, 10**9)._pool is None
