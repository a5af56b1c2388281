"""What a hostile sync folder could still do (hostile16's S2 and S3): another device's entry
dated far after this machine's clock waits, in one line, until the clock reaches it (sync
and import agree: no database holds what no import takes); a journal line is bounded, and
one too long is refused before the rest of it is read, its start quoted cut, not open."""

from __future__ import annotations

import json
import os
import re
import time
import tracemalloc
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from prep.engine.store import Store
from prep.engine.store import devices as local
from prep.engine.store.reviewlog import to_us
from prep.engine.study.scheduler import Settings, replay_params
from prep.engine.sync import journal, lines
from prep.engine.sync.run import JournalError, sync
from prep.engine.transfer.importer import AHEAD
from prep.tui.cli import main
from tests.syncfaults import three
from tests.test_sync import T0, rate

FAR = datetime(2280, 5, 1, 12, 0, tzinfo=UTC)
EVIL = "aaaaaaaaaaaaaaaa"


def _cli(*args: str) -> Any:
    return CliRunner().invoke(main, list(args))


def _reviews(db: Path) -> list[str]:
    """The card ids of the database's reviews, one a review, sorted."""
    with Store.open(db) as s:
        return [r[0] for r in s.conn.execute("SELECT card_id FROM reviews ORDER BY 1")]


def _far_review(tmp_path: Path, at: datetime) -> tuple[Path, Path, Path, Path]:
    """c rated "v" and sent it (its file 2), then a rated "y" at ``at`` and sent it (its file
    2); b's database (a's file 1 applied, "x") is what syncs next."""
    a, b, c, folder = three(tmp_path)
    rate(c, "v", 3, T0 + timedelta(days=1))
    sync(c, folder)
    rate(a, "y", 3, at)
    second = sync(a, folder, now=at).journal
    assert second is not None
    dbs = [Path(s.path) for s in (a, b, c)]
    for s in (a, b, c):
        s.close()
    return dbs[1], dbs[2], folder, second


def test_a_review_centuries_ahead_waits_in_one_line_and_an_export_still_imports(
    tmp_path: Path,
) -> None:
    """Before: taken (exit 0); stats then said the clock was behind for good, and b's export
    was refused by every import ("more than a day after this machine's clock")."""
    db, _c, folder, second = _far_review(tmp_path, FAR)
    out = _cli("--db", str(db), "sync", str(folder))
    assert out.exit_code == 2, out.output
    (line,) = out.stderr.splitlines()
    assert line.startswith(f"prep: {second}: line 2: a review dated 2280-05-01T12:00:00")
    assert "more than a day after this machine's clock" in line
    assert "applied once this clock reaches it" in line
    assert line.endswith("its device's later files wait for it")
    assert _reviews(db) == ["v", "x", "z"]  # c's arrived, the far one waits
    export = tmp_path / "b.json"
    assert _cli("--db", str(db), "export", "-o", str(export)).exit_code == 0
    fresh = _cli("--db", str(tmp_path / "fresh.db"), "import", str(export))
    assert fresh.exit_code == 0, fresh.output
    # said again at each sync (never set aside, however long it stays), applied once due
    os.utime(second, (time.time() - 7200, time.time() - 7200))
    for _ in range(2):
        again = _cli("--db", str(db), "sync", str(folder))
        assert again.exit_code == 2 and "a review dated 2280" in again.stderr
    assert "set aside" not in again.output
    with Store.open(db) as s:
        result = sync(s, folder, now=FAR + timedelta(hours=1))
    assert result.refused == []
    assert _reviews(db) == ["v", "x", "y", "z"]


def test_a_clock_running_hours_ahead_still_syncs(tmp_path: Path) -> None:
    """A device whose clock runs 20 hours fast (or keeps local time as UTC) is applied."""
    now = datetime.now(UTC)
    db, _c, folder, _second = _far_review(tmp_path, now + timedelta(hours=20))
    out = _cli("--db", str(db), "sync", str(folder))
    assert out.exit_code == 0, out.output
    assert _reviews(db) == ["v", "x", "y", "z"]


def _params() -> dict[str, Any]:
    return replay_params(Settings(), True, 0)


def _write(folder: Path, entries: list[list[Any]]) -> Path:
    head = {
        "format": "prep-journal",
        "version": 4,
        "device": EVIL,
        "name": "evil",
        "written_at": "2026-12-03T09:42:53.588721Z",
        "params": {"1": _params()},
    }
    return journal.write(folder / EVIL, head, entries)


NOW = to_us(datetime(2026, 12, 3, tzinfo=UTC))
B = "bbbbbbbbbbbbbbbb"


def _each(at: int) -> dict[str, list[Any]]:
    """One entry of each kind with a clock, dated ``at``."""
    return {
        "a review": ["r", 1, "c", 3, at, 0, "1"],
        "a review taken in (v4)": ["r", 1, "c", 3, at, 0, "1", B, 4],
        "a review passed on": ["R", B, 1, "c", 3, at, 0, "1"],
        "an undo": ["u", B, 1, "c", at, 0, 3],
        "a mark": ["m", 1, "c", at, 1, None, 0],
        "a mark passed on": ["M", B, 1, "c", at, 1, None, 0],
        "a settings change": ["s", 1, at, Settings().to_dict()],
        "a settings change passed on": ["S", B, 1, at, Settings().to_dict()],
    }


@pytest.mark.parametrize("kind", list(_each(0)))
def test_every_clock_an_import_checks_is_checked(tmp_path: Path, kind: str) -> None:
    """A review, an undo, a mark and the settings, a device's own or passed on: each dated
    more than a day ahead waits (a mark or settings of 2280 would win every later change);
    a day ahead to the microsecond is taken, as import takes it."""
    limit = NOW + AHEAD // timedelta(microseconds=1)
    assert AHEAD // timedelta(microseconds=1) == journal.AHEAD_US  # sync and import agree
    path = _write(tmp_path, [_each(limit)[kind]])
    assert len(journal.read(path, EVIL, NOW).entries) == 1
    path.unlink()
    path = _write(tmp_path, [["d", 1, _run()], _each(limit + 1)[kind]])
    with pytest.raises(journal.Ahead) as caught:
        journal.read(path, EVIL, NOW)
    what = kind.removesuffix(" passed on").removesuffix(" taken in (v4)")
    assert str(caught.value).startswith(f"{path}: line 3: {what} dated ")
    assert len(journal.read(path, EVIL).entries) == 2  # (read, without a clock: fork, status)


def _run() -> dict[str, Any]:
    return {
        "name": "n",
        "device": "cpu",
        "device_name": None,
        "dtype": None,
        "scale": None,
        "seed": 1,
        "passed": 1,
        "seconds": 1.0,
        "metrics": {},
        "ran_at": "2290-01-01T00:00:00.000000Z",  # (a demo run's time decides nothing)
    }


# --- S3: a line's length is bounded -------------------------------------------------------


def test_the_largest_line_a_prep_writes_fits_the_bound() -> None:
    """The bound's argument, measured: a header with as many scheduler parameters as the
    reader takes (10,000), each with 21 weights and ten steps a list at full precision."""
    weights = [0.2172, 1.1771, 3.2602, 16.1507, 7.0114, 0.57, 2.0966, 0.0069, 1.5261, 0.112]
    weights += [1.0178, 1.849, 0.1133, 0.3127, 2.2934, 0.2191, 3.0004, 0.7536, 0.3332]
    weights = [w + 1e-13 * (i + 1) / 3 for i, w in enumerate([*weights, 0.1367, 0.1542])]
    steps = [i * 100 + 1 / 3 for i in range(1, 11)]
    settings = Settings.from_dict(
        {
            **Settings().to_dict(),
            "parameters": weights,
            "learning_steps_min": steps,
            "relearning_steps_min": steps,
        }
    ).validated()
    one = replay_params(settings, True, 1 << 62)
    head = {
        "format": "prep-journal",
        "version": 4,
        "device": EVIL,
        "name": "\U0001f600" * 64,
        "written_at": "2026-12-03T09:42:53.588721Z",
        "params": {str(i): one for i in range(10_000)},
        "file": 99_999_999,
        "entries": 10**6,
    }
    size = len(json.dumps(head, ensure_ascii=False).encode())
    assert 8_000_000 < size < lines.MAX_LINE  # (~10.4 MB of 16 MiB)


@pytest.mark.parametrize("where", ["header", "entry"])
def test_a_line_over_the_bound_is_refused_without_reading_it_whole(
    tmp_path: Path, where: str
) -> None:
    """Before: a 300 MB line was read whole (0.9-1.2 GB at its peak) and refused quoting the
    300 MB id cut mid-quote. Now: refused once MAX_LINE bytes of it are read (traced peak under
    the line's size), the file and line named, its start quoted closed, then '…'."""
    folder = tmp_path / EVIL
    folder.mkdir()
    path = folder / journal.file_name(1)
    big = 3 * lines.MAX_LINE  # 48 MiB
    with path.open("wb") as f:
        if where == "header":
            f.write(b'{"format": "prep-journal", "name": "' + b"x" * big + b'"}\n')
        else:
            f.write((json.dumps(_head(1)) + "\n").encode())
            f.write(b'["r",1,"' + b"x" * big + b'",3,0,0,"1"]\n')
    tracemalloc.start()
    try:
        with pytest.raises(JournalError) as caught:
            journal.read(path, EVIL, NOW)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    # (the bound and one chunk read, ~17 MB; before: 151 MB as a header, 201 MB as an entry)
    assert peak < lines.MAX_LINE + lines.CHUNK + (2 << 20) < big, peak
    message = str(caught.value)
    line = 1 if where == "header" else 2
    assert message.startswith(f"{path}: line {line}: 16,777,216 bytes or more")
    assert re.search(r"it starts '[^']{30,40}'…\); nothing of it applied$", message), message
    assert len(message) < len(str(path)) + 200


@pytest.mark.parametrize("first", [100, lines.CHUNK - 4, lines.CHUNK - 1])
def test_a_long_lines_start_is_quoted_wherever_a_chunk_cuts_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, first: int
) -> None:
    """The review's finding: the start quoted was the line's first piece of a chunk, so a line
    beginning 1 or 4 bytes before a chunk's end was quoted '' or '["r' (closed, no '…')."""
    monkeypatch.setattr(lines, "MAX_LINE", 3 * lines.CHUNK)
    path = tmp_path / journal.file_name(1)
    with path.open("wb") as f:
        f.write(b"h" * (first - 1) + b"\n")  # line 1 ends `first` bytes into the first chunk
        f.write(b'["r",1,"' + b"x" * (4 * lines.CHUNK) + b'",3,0,0,"1"]\n')
    with pytest.raises(JournalError) as caught:
        lines.read_lines(path)
    message = str(caught.value)
    assert f"line 2: {3 * lines.CHUNK:,} bytes or more" in message, message
    assert 'it starts \'["r",1,"xxxxxxxx' in message and "'…)" in message, message


def test_a_refused_list_or_mapping_is_said_by_kind_never_a_bracket_left_open() -> None:
    """The review's finding: _cut of a long list gave "['xxxx…" (a quote and a bracket open)."""
    assert journal._cut(["x" * 100]) == "a list of 1 item(s)"
    assert journal._cut({"k": "x" * 100, "j": 1}) == "a mapping of 2 item(s)"
    assert journal._cut("x" * 100).endswith("'…")


def _head(entries: int) -> dict[str, Any]:
    return {
        "format": "prep-journal",
        "version": 4,
        "device": EVIL,
        "name": "evil",
        "written_at": "2026-12-03T09:42:53.588721Z",
        "params": {"1": _params()},
        "file": 1,
        "entries": entries,
    }


def test_a_long_card_id_is_quoted_cut_and_closed(tmp_path: Path) -> None:
    """Before: `got 'xxxx…` 40 characters, the quote left open, no ellipsis."""
    path = _write(tmp_path, [])
    path.unlink()
    path.write_text(
        json.dumps(_head(1)) + "\n" + json.dumps(["r", 1, "x" * 5000, 3, 0, 0, "1"]) + "\n"
    )
    with pytest.raises(JournalError) as caught:
        journal.read(path, EVIL)
    # (40 characters at most, as textsafe.quoted cuts: 37 x's; _cut kept 38, 41 in all)
    assert str(caught.value).endswith(f"got '{'x' * 37}'…; nothing of it applied")


def test_a_device_whose_clock_is_far_ahead_leaves_the_others_and_what_it_sent_later(
    tmp_path: Path,
) -> None:
    """The far review holds back its own device's later files (an undo of it may follow),
    and nothing else: a third device's reviews are applied; b's own are sent."""
    db, _c, folder, _second = _far_review(tmp_path, FAR)
    with Store.open(db) as s:
        rate(s, "w", 3, T0 + timedelta(days=2))
        with pytest.raises(journal.Ahead) as caught:
            sync(s, folder)
        result = caught.value.after
        assert result.sent_reviews == 1
        me = local.device_id(s.conn)
    assert (folder / me).is_dir()
    assert _reviews(db) == ["v", "w", "x", "z"]


# --- S1: a sync folder is trusted with undos; the sync backup is the way back --------------


def test_a_foreign_undo_of_this_machines_review_is_undone_by_the_readmes_recipe(
    tmp_path: Path,
) -> None:
    """By design an undo may name any machine's review (relays, imports), so a hostile or
    buggy folder can undo this machine's own; README's way back, followed: remove that
    machine's folder from the sync folder, restore the backup the sync made before applying
    it, sync again: the review is back and stays, another machine's applied again."""
    folder = tmp_path / "shared"
    folder.mkdir()
    db = tmp_path / "b.db"
    with Store.open(db) as s:
        rate(s, "x", 3, T0)
        me = local.device_id(s.conn)
    assert _cli("--db", str(db), "sync", str(folder)).exit_code == 0
    with Store.open(tmp_path / "c.db") as c:  # (what another machine sent meanwhile)
        rate(c, "y", 3, T0 + timedelta(hours=2))
        sync(c, folder)
    _write(folder, [["u", me, 1, "x", to_us(T0 + timedelta(hours=1)), to_us(T0), 3]])
    out = _cli("--db", str(db), "sync", str(folder))
    assert "and 1 undo, 2 cards rescheduled" in out.output
    assert _reviews(db) == ["y"]
    (name,) = [
        line.split()[0]
        for line in _cli("--db", str(db), "backup", "--list").output.splitlines()
        if line.split()[0].endswith("-sync.db")
    ]
    for path in (folder / EVIL).iterdir():
        path.unlink()
    (folder / EVIL).rmdir()
    restored = _cli("--db", str(db), "backup", "--restore", name)
    assert restored.exit_code == 0, restored.output
    assert _reviews(db) == ["x"]
    again = _cli("--db", str(db), "sync", str(folder))
    assert again.exit_code == 0, again.output
    assert "received 1 review from" in again.output
    assert _reviews(db) == ["x", "y"]  # its own back, the other machine's applied again


def test_a_new_machines_first_sync_of_only_a_far_review_makes_no_database(
    tmp_path: Path,
) -> None:
    """As for a file refused (sync15): the line, exit 2, no empty database made; before, the
    2280 review was taken into a new database."""
    folder = tmp_path / "shared"
    folder.mkdir()
    path = _write(folder, [["r", 1, "c", 3, to_us(FAR), 0, "1"]])
    db = tmp_path / "new" / "p.db"
    out = _cli("--db", str(db), "sync", str(folder))
    assert out.exit_code == 2 and out.stdout == "", out.output
    assert out.stderr.startswith(f"prep: {path}: line 2: a review dated 2280-05-01T12:00:00")
    assert out.stderr.endswith("; no database made\n") and len(out.stderr.splitlines()) == 1
    assert not db.parent.exists()


def test_an_applied_file_changed_since_that_holds_an_entry_far_ahead_is_not_held(
    tmp_path: Path,
) -> None:
    """The review's finding: a database that took a review dated 2280 (before the rule, here
    a sync at a clock past it) and then met a new version of that file was refused at every
    sync, its device's later files held, saying 'nothing of the file applied yet' (false)."""
    from tests.test_sync import T0, rate

    far = datetime(2280, 5, 1, 12, 0, tzinfo=UTC)
    folder = tmp_path / "shared"
    folder.mkdir()
    a, b = Store.open(tmp_path / "a.db"), Store.open(tmp_path / "b.db")
    rate(a, "x", 3, T0)
    sync(a, folder)
    rate(a, "far", 3, far)
    sync(a, folder, now=far)
    rate(a, "next", 3, T0 + timedelta(days=1))
    sync(a, folder, now=far)  # a's file 3: file 2 is no longer the last b applied
    sync(b, folder, now=far + timedelta(hours=1))
    (dev,) = [p for p in folder.iterdir() if p.is_dir()]
    second = dev / "00000002.jsonl"
    head, *rest = second.read_text().splitlines()
    changed = {**json.loads(head), "written_at": "2026-12-03T10:00:00.000000Z"}
    second.unlink()
    second.write_text("\n".join([json.dumps(changed), *rest]) + "\n")
    rate(a, "later", 3, T0 + timedelta(days=2))
    sync(a, folder, now=far)  # a's file 4 (b's own journal was written at far)
    sync(b, folder)  # today's clock: no JournalError, a's file 4 applied
    cards = {r[0] for r in b.conn.execute("SELECT card_id FROM reviews")}
    assert cards == {"x", "far", "next", "later"}
    a.close()
    b.close()
