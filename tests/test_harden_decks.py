"""`prep check` on chained follow-ups is linear; cycles are reported once each, exactly."""

from __future__ import annotations

import time
from pathlib import Path

from prep.engine.decks.deckcache import load_collection


def chain_deck(folder: Path, n: int, *, cycle: bool = False) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    lines = [f"deck: chain{n}", "cards:"]
    first = f"    parent: c{n - 1}" if cycle else None
    lines += ["  - id: c0", "    kind: follow-up" if cycle else "    kind: recall"]
    lines += [first] if first else []
    lines += ["    prompt: p0", "    answer: a0"]
    for i in range(1, n):
        lines += [f"  - id: c{i}", "    kind: follow-up", f"    parent: c{i - 1}"]
        lines += [f"    prompt: p{i}", f"    answer: a{i}"]
    path = folder / f"chain{n}.yaml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def timed_load(folder: Path) -> float:
    start = time.perf_counter()
    coll = load_collection([folder], include_bundled=False)
    took = time.perf_counter() - start
    assert not coll.errors
    return took


def test_a_long_chain_of_follow_ups_is_checked_in_linear_time(tmp_path: Path) -> None:
    small, large = tmp_path / "small", tmp_path / "large"
    chain_deck(small, 500)
    chain_deck(large, 4000)
    timed_load(small)  # warm: imports, the YAML loader
    t_small = min(timed_load(small) for _ in range(2))
    t_large = timed_load(large)
    # 8x the cards: linear is ~8x; the quadratic walk (every card walking its whole chain and
    # searching it as a list) was ~500x (4000 cards: 106 s)
    assert t_large < 30 * t_small + 1.0, (t_small, t_large)


def test_cycles_are_reported_once_each_at_their_smallest_id(tmp_path: Path) -> None:
    (tmp_path / "f.yaml").write_text(
        "deck: f\ncards:\n"
        "  - {id: x-lead, kind: follow-up, parent: m, prompt: Q?, answer: A.}\n"
        "  - {id: m, kind: follow-up, parent: k, prompt: Q?, answer: A.}\n"
        "  - {id: k, kind: follow-up, parent: z, prompt: Q?, answer: A.}\n"
        "  - {id: z, kind: follow-up, parent: m, prompt: Q?, answer: A.}\n"
        "  - {id: solo, kind: follow-up, parent: solo, prompt: Q?, answer: A.}\n"
        "  - {id: p, kind: follow-up, parent: q, prompt: Q?, answer: A.}\n"
        "  - {id: q, kind: follow-up, parent: p, prompt: Q?, answer: A.}\n",
        encoding="utf-8",
    )
    coll = load_collection([tmp_path], include_bundled=False)
    cycles = sorted(
        (e.line, e.message) for e in coll.errors if e.message.startswith("parent cycle")
    )
    assert cycles == [(5, "parent cycle: k -> z -> m -> k"), (8, "parent cycle: p -> q -> p")]
    assert any("'solo' is its own parent" in e.message for e in coll.errors)
    assert coll.cards == []


def test_a_long_cycle_is_one_error(tmp_path: Path) -> None:
    chain_deck(tmp_path, 3000, cycle=True)
    coll = load_collection([tmp_path], include_bundled=False)
    cycles = [e for e in coll.errors if e.message.startswith("parent cycle")]
    assert len(cycles) == 1
    assert cycles[0].message == (
        "parent cycle: c0 -> c2999 -> c2998 -> c2997 -> ... -> c2 -> c1 -> c0 (3000 cards)"
    )
    assert coll.cards == []


def test_a_file_of_broken_cards_is_a_few_lines_and_stops_early(tmp_path: Path) -> None:
    import subprocess
    import sys

    from prep.engine.decks.deck import MAX_ERRORS_PER_FILE

    (tmp_path / "empty.yaml").write_text("deck: empty\ncards:\n" + "- {}\n" * 100_000)
    start = time.perf_counter()
    coll = load_collection([tmp_path], include_bundled=False)
    took = time.perf_counter() - start
    lines = [str(e) for e in coll.errors]
    assert len(lines) <= MAX_ERRORS_PER_FILE + 2, len(lines)
    assert lines[-1].endswith(
        "... 99,987 more cards from here on not checked (over 50 problems above; fix those first)"
    ), lines[-3:]
    assert took < 30, took  # every card validated, 400,000 errors built: minutes on a busy box
    done = subprocess.run(
        [sys.executable, "-m", "prep.tui.cli", "--db", str(tmp_path / "p.db"), "check"]
        + [str(tmp_path / "empty.yaml")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 2 and len(done.stderr.splitlines()) <= MAX_ERRORS_PER_FILE + 2


def test_problems_found_across_files_are_capped_per_file_with_a_count(tmp_path: Path) -> None:
    cards = "".join(
        f"  - {{id: f{i}, kind: follow-up, parent: ghost{i}, prompt: Q?, answer: A.}}\n"
        for i in range(200)
    )
    (tmp_path / "orphans.yaml").write_text("deck: orphans\ncards:\n" + cards)
    (tmp_path / "other.yaml").write_text(
        "deck: other\ncards:\n  - {id: o, kind: follow-up, parent: nope, prompt: Q?, answer: A.}\n"
    )
    coll = load_collection([tmp_path], include_bundled=False)
    mine = [e for e in coll.errors if e.file.endswith("orphans.yaml")]
    assert len(mine) == 51 and mine[-1].message == "... and 150 more problems"
    assert [e.message for e in coll.errors if e.file.endswith("other.yaml")] == [
        "card 'o': parent 'nope' does not exist"
    ]
