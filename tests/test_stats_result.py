"""`stats.compute` returns a typed result (engine/study/statsresult.py) that the front ends
render; `prep stats --json` prints its ``to_dict()``, which is byte for byte the dict the
untyped compute returned (tests/golden/stats.json, written by that code before the change)."""

from __future__ import annotations

import json
from dataclasses import fields, is_dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from prep.engine.store import Mark, Store
from prep.engine.study import stats as stats_mod
from prep.tui.testing import NOW, add_history, fixed_collection

GOLDEN = Path(__file__).parent / "golden"


def scenario() -> tuple[Store, object]:
    """A week of history, marks, an imported run of an unknown demo and an interview ahead."""
    store = Store.memory()
    coll = fixed_collection()
    add_history(store, coll)
    store.set_mark("two-roles", Mark(suspended=True), at=NOW)
    store.set_mark("wo-shape", Mark(flagged=True), at=NOW)
    store.record_demo_run(
        name="made-up", device="cpu", passed=True, seconds=1.5, ran_at=NOW - timedelta(days=1)
    )
    store.update_settings(interview_date="2025-03-14")
    return store, coll


def render(since: datetime | None) -> tuple[str, str]:
    from prep.tui.reports import stats_text

    store, coll = scenario()
    result = stats_mod.compute(store, coll, NOW, since=since, known_demos=["block-diagonal"])  # type: ignore[arg-type]
    out = result if isinstance(result, dict) else result.to_dict()
    return json.dumps(out, indent=2), stats_text(result)


CASES = {"all": None, "since": datetime(2025, 3, 7, tzinfo=UTC)}


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_json_and_the_text_are_the_untyped_computes(utc_local_time, case: str) -> None:
    as_json, text = render(CASES[case])
    assert as_json == (GOLDEN / f"stats-{case}.json").read_text(encoding="utf-8")
    assert text == (GOLDEN / f"stats-{case}.txt").read_text(encoding="utf-8")


def test_the_result_is_dataclasses_all_the_way_down(utc_local_time) -> None:
    """No dict read by string keys: every part is a dataclass, or a dict/list of them, or a
    plain value."""
    store, coll = scenario()
    result = stats_mod.compute(store, coll, NOW, known_demos=["block-diagonal"])  # type: ignore[arg-type]

    def walk(value: object, where: str) -> None:
        if is_dataclass(value):
            for f in fields(value):
                walk(getattr(value, f.name), f"{where}.{f.name}")
        elif isinstance(value, dict):
            for k, v in value.items():
                assert isinstance(k, str), where
                assert is_dataclass(v) or not isinstance(v, dict), f"{where}[{k!r}] is a dict"
                walk(v, f"{where}[{k!r}]")
        elif isinstance(value, list):
            for i, v in enumerate(value):
                assert not isinstance(v, dict), f"{where}[{i}] is a dict"
                walk(v, f"{where}[{i}]")

    assert is_dataclass(result)
    walk(result, "stats")
    assert result.interview is not None and result.interview.all.cards == len(coll)
    assert result.marked.suspended == ["two-roles"] and result.marks.flagged == 1
    assert [d.name for d in result.demos.latest if not d.known] == ["made-up"]
