"""Minor cases, each one line and exit 2 (or a message), never exit 70 or silence: times out of
range in an import, a clock in year 9999, card ids with a trailing newline, hand-edited times
in the cards table."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from prep.engine.decks.deckcache import load_collection
from prep.engine.store import Store
from prep.engine.study.scheduler import Rating
from prep.engine.study.session import ReviewSession
from prep.engine.transfer.export import export_json
from tests.conftest import FIXED_NOW
from tests.test_cli_boundary import one_line, prep


def exported(tmp_path: Path) -> dict:
    with Store.open(tmp_path / "a.db") as store:
        session = ReviewSession(store, load_collection([]), clock=lambda: FIXED_NOW)
        session.rate(Rating.Good, duration_ms=900)
        export_json(store, tmp_path / "x.json", FIXED_NOW)
    return json.loads((tmp_path / "x.json").read_text())


@pytest.mark.parametrize("year", ["0001", "0999", "1969", "9999"])
@pytest.mark.parametrize("where", ["reviews", "cards"])
def test_an_import_with_a_year_out_of_range_is_one_line(
    tmp_path: Path, year: str, where: str
) -> None:
    data = exported(tmp_path)
    row = data[where][0]
    key = "reviewed_at" if where == "reviews" else "last_review"
    row[key] = f"{year}{row[key][4:]}"
    (tmp_path / "y.json").write_text(json.dumps(data))
    done = prep(tmp_path / "b.db", "import", str(tmp_path / "y.json"))
    assert done.returncode == 2, done.stderr
    assert "is outside the years 1970 to 9899" in one_line(done.stderr)


@pytest.mark.skipif(shutil.which("faketime") is None, reason="faketime not installed")
@pytest.mark.parametrize("args", [["stats"], ["quiz", "--plain"], ["marks"]])
def test_a_clock_in_year_9999_is_one_line(tmp_path: Path, args: list[str]) -> None:
    done = subprocess.run(
        ["faketime", "9999-12-31 20:00:00", sys.executable, "-m", "prep.tui.cli"]
        + ["--db", str(tmp_path / "p.db"), *args],
        input="b\nq\n",
        capture_output=True,
        text=True,
        env={**os.environ, "TZ": "Pacific/Kiritimati", "FAKETIME_DONT_FAKE_MONOTONIC": "1"},
        timeout=120,
    )
    assert done.returncode == 2, done
    assert "fix the system clock" in one_line(done.stderr)


@pytest.mark.skipif(shutil.which("faketime") is None, reason="faketime not installed")
@pytest.mark.parametrize("when", ["2240-06-01 12:00:00", "1960-01-01 12:00:00"])
def test_a_clock_beyond_prep_s_dates_is_one_line(tmp_path: Path, when: str) -> None:
    done = subprocess.run(
        ["faketime", when, sys.executable, "-m", "prep.tui.cli"]
        + ["--db", str(tmp_path / "p.db"), "stats"],
        capture_output=True,
        text=True,
        env={**os.environ, "FAKETIME_DONT_FAKE_MONOTONIC": "1"},
        timeout=120,
    )
    assert done.returncode == 2, done
    line = one_line(done.stderr)
    assert f"the clock says {when[:10]}" in line and "fix the system clock" in line


@pytest.mark.parametrize("card_id", ["good-id\n", "good-id\n\n"])
def test_a_card_id_ending_in_a_newline_is_refused(tmp_path: Path, card_id: str) -> None:
    (tmp_path / "d.yaml").write_text(
        "deck: d\ncards:\n"
        f"  - id: {json.dumps(card_id)}\n    kind: recall\n    prompt: p\n    answer: a\n"
    )
    coll = load_collection([tmp_path], include_bundled=False)
    assert any("is not a slug" in e.message or "id" in e.message for e in coll.errors)
    assert coll.cards == []
    data = exported(tmp_path)
    data["cards"][0]["id"] = data["reviews"][0]["card_id"] = card_id
    (tmp_path / "y.json").write_text(json.dumps(data))
    done = prep(tmp_path / "b.db", "import", str(tmp_path / "y.json"))
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr


@pytest.mark.parametrize(
    ("column", "value"),
    [("last_review", "not a time"), ("due", "tomorrow"), ("due", 12345), ("last_review", "")],
)
def test_a_hand_edited_time_skips_its_card_with_a_message(
    tmp_path: Path, small_deck_dir: Path, column: str, value: object
) -> None:
    db = tmp_path / "p.db"
    with Store.open(db) as store:
        coll = load_collection([small_deck_dir], include_bundled=False)
        session = ReviewSession(store, coll, clock=lambda: FIXED_NOW, requeue=False)
        rated = session.current.id
        session.rate(Rating.Good, duration_ms=500)
    conn = sqlite3.connect(db)
    conn.execute(f"UPDATE cards SET {column} = ? WHERE id = ?", (value, rated))
    conn.commit()
    conn.close()
    with Store.open(db) as store:
        # the card is not hidden: the session comes to it and skips it, saying why
        later = FIXED_NOW.replace(year=FIXED_NOW.year + 1)
        session = ReviewSession(store, coll, clock=lambda: later, requeue=False)
        while not session.finished:
            session.rate(Rating.Good, duration_ms=500)
        notices = session.take_notices()
        assert any(rated in n and column in n for n in notices), notices
        assert rated in [cid for cid, _ in session.skipped]
    done = prep(db, "--questions", str(small_deck_dir), "stats")
    assert done.returncode == 0, done.stderr
    done = prep(db, "export", "-o", str(tmp_path / "rescue.json"))
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("side", ["cards", "marks", "demo_runs", "settings", "CARDS"])
def test_a_csv_export_named_like_a_side_file_is_refused(tmp_path: Path, side: str) -> None:
    Store.open(tmp_path / "p.db").close()  # (read-only commands create no database)
    db = tmp_path / "p.db"
    old = tmp_path / "NAME.csv"
    old.write_text("an older export\n")
    done = prep(db, "export", "--format", "csv", "-o", str(tmp_path / f"NAME.{side}.csv"))
    assert done.returncode == 2
    line = one_line(done.stderr)
    assert "side file of a csv export named NAME.csv" in line, line
    assert sorted(p.name for p in tmp_path.iterdir()) == ["NAME.csv", "p.db"]
    done = prep(db, "export", "-o", str(tmp_path / f"NAME.{side}.csv"))  # csv by its extension
    assert done.returncode == 2


@pytest.mark.parametrize(
    "damage",
    ["next = x'00ff'", "prev = x'0102', prev_state = 2", "rating = 9", "at = 'abc'", "at = -5"],
)
def test_a_damaged_review_row_is_named_and_the_rest_exported(tmp_path: Path, damage: str) -> None:
    db = tmp_path / "p.db"
    with Store.open(db) as store:
        session = ReviewSession(store, load_collection([]), clock=lambda: FIXED_NOW, requeue=False)
        for _ in range(4):
            session.rate(Rating.Good, duration_ms=100)
        store.conn.execute("UPDATE reviews SET duration_ms = -7 WHERE id = 3")  # an older prep's
        victim = store.conn.execute("SELECT card_id FROM reviews WHERE id = 2").fetchone()[0]
    conn = sqlite3.connect(db)
    conn.execute(f"UPDATE reviews SET {damage} WHERE id = 2")
    conn.commit()
    conn.close()
    for fmt_, name in (("json", "x.json"), ("csv", "x.csv")):
        done = prep(db, "export", "--format", fmt_, "-o", str(tmp_path / name))
        assert done.returncode == 0, done.stderr
        # (the damaged row left out; what else the file holds said after it: user13)
        said = next(x for x in done.stdout.splitlines() if x.startswith("Wrote "))
        assert said.endswith(": 3 reviews and 4 card states."), done.stdout  # (csv: files below)
        line = one_line(done.stderr)
        assert f"review 2 (card {victim!r})" in line and "left out" in line, line
        other = tmp_path / f"other-{fmt_}.db"
        done = prep(other, "import", str(tmp_path / name))  # what prep wrote imports back
        assert done.returncode == 0, done.stderr
        with Store.open(other) as store:
            assert sorted(r.duration_ms for r in store.reviews()) == [0, 100, 100]
    done = prep(db, "optimize", "--dry-run")
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert f"review 2 (card {victim!r})" in done.stderr and "not enough reviews" in done.stderr
