"""Cards carry their rubric: `points:`, else the single-idea bullets; `prep check` names the
cards without one; the deck cache keeps the points (and an older cache is parsed again)."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from prep.engine.decks.deck import parse_deck_text
from prep.engine.decks.deckcache import load_collection
from prep.engine.decks.rubric import card_rubric, suggest_rating
from prep.engine.store import Store

DECK = """\
deck: r
title: Rubrics
cards:
  - id: with-points
    kind: recall
    prompt: P?
    answer: A.
    bullets: [one long bullet; with two ideas]
    points: [First idea., Second idea., Third idea.]
  - id: with-bullets
    kind: recall
    prompt: P?
    answer: A.
    bullets: [First idea., Second idea., "Two ideas; in one bullet."]
  - id: too-few
    kind: recall
    prompt: P?
    answer: A.
    bullets: [Only one idea., "One sentence. Then another one."]
  - id: nothing
    kind: recall
    prompt: P?
    answer: A.
"""


def cards():
    info, parsed, errors = parse_deck_text(DECK, "r.yaml", "r")
    assert not errors, errors
    return {c.id: c for c in parsed}


def test_points_else_single_idea_bullets_else_a_reason():
    by_id = cards()
    assert card_rubric(by_id["with-points"]).points == (
        "First idea.",
        "Second idea.",
        "Third idea.",
    )
    found = card_rubric(by_id["with-bullets"])
    assert found.points == ("First idea.", "Second idea.") and found.source == "bullets"
    assert "1 of its 2 bullets are single ideas" in card_rubric(by_id["too-few"]).problem
    assert card_rubric(by_id["nothing"]).problem == "no points: and no bullets"


def test_points_must_be_a_list_of_texts(tmp_path: Path):
    bad = DECK.replace("points: [First idea., Second idea., Third idea.]", "points: {a: 1}")
    _, _, errors = parse_deck_text(bad, "r.yaml", "r")
    assert any("'points' must be text or a list of texts" in e.message for e in errors)
    assert errors[0].line == 9


def test_suggested_rating_from_a_grade():
    assert suggest_rating(3, 3) == 3
    assert suggest_rating(3, 2) == 2
    assert suggest_rating(4, 2) == 2
    assert suggest_rating(3, 1) == 1
    assert suggest_rating(3, 0) == 1


def test_prep_check_names_cards_without_a_rubric(tmp_path: Path):
    from prep.tui.cli import main

    (tmp_path / "r.yaml").write_text(DECK, encoding="utf-8")
    runner = CliRunner()
    result = runner.invoke(main, ["--questions", str(tmp_path), "check"])
    assert result.exit_code == 0, result.output
    assert "without a usable rubric" in result.output and "--rubrics" in result.output
    result = runner.invoke(main, ["--questions", str(tmp_path), "check", "--rubrics"])
    lines = [ln for ln in result.output.splitlines() if str(tmp_path) in ln]
    assert any(":15: card too-few: no usable rubric" in ln for ln in lines)
    assert any(
        ":20: card nothing: no usable rubric: no points: and no bullets" in ln for ln in lines
    )
    assert not any("with-points" in ln or "with-bullets" in ln for ln in lines)


def test_the_deck_cache_keeps_points_and_reparses_an_older_cache(tmp_path: Path):
    import os
    import time

    from prep.engine.decks import deckcache

    (tmp_path / "r.yaml").write_text(DECK, encoding="utf-8")
    past = time.time() - 100  # not racy: an unchanged file is served without being read
    os.utime(tmp_path / "r.yaml", (past, past))
    store = Store.open(tmp_path / "p.db")
    try:
        first = deckcache.load(store, [tmp_path], include_bundled=False)
        assert first.get("with-points").points == ("First idea.", "Second idea.", "Third idea.")
        again = deckcache.load(store, [tmp_path], include_bundled=False)  # served from the cache
        assert again.get("with-points").points == ("First idea.", "Second idea.", "Third idea.")
        # a cache written by the previous parser (no points field; its file unchanged since)
        # is parsed again, not served
        import hashlib
        import json

        old_sha = hashlib.sha256(b"parser 2\n" + DECK.encode()).hexdigest()
        store.conn.execute("UPDATE deck_files SET sha256 = ?", (old_sha,))
        for key, data in store.conn.execute("SELECT key, data FROM deck_cards").fetchall():
            old = json.dumps(json.loads(data)[:-1])  # the fields before `points`
            store.conn.execute("UPDATE deck_cards SET data = ? WHERE key = ?", (old, key))
        # (a database from before the cache kept its format key: engine/decks/deckcache.py)
        store.conn.execute("DELETE FROM meta WHERE key = 'deck_cache_format'")
        store.conn.commit()
        third = deckcache.load(store, [tmp_path], include_bundled=False)
        assert third.get("with-points").points == ("First idea.", "Second idea.", "Third idea.")
    finally:
        store.close()
    assert load_collection([tmp_path], include_bundled=False).get("with-bullets").points == ()
