"""An upgrade from v4 or older converts the JSON review log straight to v13's compact form in
one pass (engine/store/fused13.py): the result is what the two passes it replaces (v4 -> v5,
then v12 -> v13, still run by the chain step by step) wrote, row for row and byte for byte,
whatever the log holds: usual states, and the odd ones real logs and hand edits leave (a state
that is not one, numbers that do not fit the v5 record, non-canonical or non-ASCII text, NaN,
an odd state in the middle of a card's chain with usual ones after it)."""

from __future__ import annotations

import json
import shutil
import sqlite3
from datetime import timedelta
from pathlib import Path

import pytest
import sqlite_utils

from prep.engine.store import SCHEMA_VERSION, Store, fused13
from prep.engine.store.schema import MIGRATIONS
from tests.benchmarks import gencoll
from tests.test_migration_v5 import NOW, v3_database, v3_export

TABLES = ("revlog", "review_cards", "review_tally")


def _last_next(conn: sqlite3.Connection, card_id: str) -> dict:
    row = conn.execute(
        "SELECT next FROM reviews WHERE card_id = ? ORDER BY id DESC", (card_id,)
    ).fetchone()
    return json.loads(row[0])


def odd_v3(path: Path) -> None:
    """v3_database's log (12 cards, 4 reviews each, 3 odd rows) and, on other cards, every
    kind of state that does not take the usual path, each followed by a usual review that
    continues its chain (its prev is the odd next's text)."""
    v3_database(path)
    conn = sqlite3.connect(path, isolation_level=None)
    at = NOW + timedelta(days=1)
    rows = []

    def review(cid: str, prev: str | None, nxt: str, ps: int | None = 2) -> None:
        nonlocal at
        at += timedelta(seconds=7)
        rows.append((cid, 3, gencoll.fmt(at), 1500, ps, prev, nxt))

    def then_usual(cid: str, text: str, last: dict) -> None:
        after = {**last, "reps": last["reps"] + 1, "last_review": gencoll.fmt(at)}
        review(cid, text, json.dumps(after))

    odd = {
        "c-0000000": lambda s: json.dumps({**s, "reps": 2**65}),  # too big for v5's record
        "c-0000001": lambda s: json.dumps({**s, "state": 200}),  # not an fsrs state
        "c-0000002": lambda s: json.dumps({**s, "step": 1.0}),  # a float step
        "c-0000004": lambda s: json.dumps(s).replace(  # non-canonical number text
            f'"difficulty": {json.dumps(s["difficulty"])}', '"difficulty": 5.50'
        ),
        "c-0000006": lambda s: json.dumps({**s, "stability": float("nan")}),  # NaN
        "c-0000008": lambda s: json.dumps({**s, "deck": "déjà vu"}),  # non-ASCII (json path)
        "c-0000009": lambda s: json.dumps({**s, "state": True}),  # a bool where an int goes
        "c-0000010": lambda s: json.dumps({**s, "reps": -3}),  # negative: v5's wide record
        "c-0000011": lambda s: json.dumps({**s, "stability": 12}),  # a whole number
    }
    for cid, make in odd.items():
        last = _last_next(conn, cid)
        text = make(last)
        review(cid, json.dumps(last), text)
        then_usual(cid, text, last)
        # and the usual next of that one, its prev given as the same state in other text
        # (the chain's compare, not the text's)
        usual = json.loads(rows[-1][-1])
        review(cid, json.dumps(usual, indent=None, separators=(", ", ": ")), json.dumps(usual))
    # a card whose prev is given in full although it is the last next (a new card after)
    last = _last_next(conn, "c-0000005")
    review("c-0000005", json.dumps(last), json.dumps({**last, "reps": last["reps"] + 1}), None)
    conn.executemany(
        "INSERT INTO reviews (card_id, rating, reviewed_at, duration_ms, prev_state, prev, next) "
        "VALUES (?, ?, ?, ?, ?, ?, ?)",
        rows,
    )
    conn.close()


def rows_of(path: Path) -> dict[str, list[tuple]]:
    conn = sqlite3.connect(path)
    try:
        return {t: conn.execute(f"SELECT * FROM {t} ORDER BY 1, 2").fetchall() for t in TABLES}
    finally:
        conn.close()


def step_by_step(path: Path) -> None:
    """The chain run a step at a time, without an upgrade's tracker: the two passes."""
    conn = sqlite3.connect(path, isolation_level=None)
    db = sqlite_utils.Database(conn)
    for step in range(3, SCHEMA_VERSION):
        MIGRATIONS[step](db, None)
    conn.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", (str(SCHEMA_VERSION),))
    conn.close()


@pytest.fixture(scope="module")
def upgraded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path, int]:
    folder = tmp_path_factory.mktemp("fused")
    v3 = folder / "v3.db"
    odd_v3(v3)
    fused, two = folder / "fused.db", folder / "two.db"
    shutil.copyfile(v3, fused)
    shutil.copyfile(v3, two)
    calls = []
    real = fused13.v4_log_to_v13
    fused13.v4_log_to_v13 = lambda conn, progress: calls.append(1) or real(conn, progress)
    try:
        Store.open(fused).close()
    finally:
        fused13.v4_log_to_v13 = real
    step_by_step(two)
    return v3, fused, two, len(calls)


def test_the_store_converts_an_old_log_in_one_pass(upgraded) -> None:
    *_, calls = upgraded
    assert calls == 1


def test_one_pass_writes_what_the_two_passes_wrote_byte_for_byte(upgraded) -> None:
    _, fused, two, _ = upgraded
    got, want = rows_of(fused), rows_of(two)
    assert len(got["revlog"]) == 51 + 9 * 3 + 1
    for table in TABLES:
        assert got[table] == want[table], table
    # the odd states took the careful path: some kept verbatim, none damaged
    blobs = [b for r in got["revlog"] for b in r[6:8] if b]
    assert any(b[:1] == b"\xff" for b in blobs)


def test_every_review_comes_back_as_the_v3_log_had_it(upgraded) -> None:
    v3, fused, _, _ = upgraded
    want = v3_export(v3)["reviews"]
    with Store.open(fused) as store:
        got = store.dump()["reviews"]
    cols = ("card_id", "reviewed_at", "rating", "duration_ms", "prev_state")
    assert [{k: r[k] for k in cols} for r in got] == [{k: r[k] for k in cols} for r in want]
    for g, w in zip(got, want, strict=True):
        for key in ("prev", "next"):
            assert _numbers_as_floats(g[key]) == _numbers_as_floats(w[key])


def _numbers_as_floats(state: dict | None) -> str | None:
    """A state's JSON with every number a float: the v5 record read a whole stability back
    as a float and a bool state as 1 (so did the two passes); NaN compared as text."""
    if state is None:
        return None
    return json.dumps(
        {k: float(v) if isinstance(v, int | float) else v for k, v in state.items()},
        sort_keys=True,
    )
