"""A card built from the deck cache takes its content hash from the cache row (``chash``),
which the cache wrote from the same parsed card as its text (engine/decks/collection.py
``card_from_fields``): round 13 measured the JSON and sha256 of computing it again at ~1% of
an answer. The hash must be the one Card.content_hash computes from the card's fields, for
cards cached by either parse path, and a changed text must give a new hash either way."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from prep.engine.decks import deck as deck_module
from prep.engine.decks import deckcache
from prep.engine.store import Store

PLAIN = """\
deck: hashes
title: Hashes
cards:
  - id: plain-one
    kind: recall
    prompt: What is a hash?
    answer: A digest.
  - id: plain-two
    kind: choice
    prompt: Which is a hash?
    answer: sha256
    choices: [md5sum, sha256, gzip]
    correct: b
"""
# a block scalar and a comment: outside the fast path's plain shape (the general parse)
GENERAL = """\
deck: hashes2
title: Hashes, parsed the general way
cards:
  # a comment
  - id: general-one
    kind: recall
    prompt: |
      Two lines,
      é and ü
    answer: "yes"
"""


def _fresh(card: deck_module.Card) -> str:
    """The hash computed from the card's fields (a copy: its cached value not carried)."""
    return dataclasses.replace(card).content_hash


def _load(store: Store, folder: Path, texts: dict[str, str]) -> deckcache.CachedCollection:
    for name, text in texts.items():
        (folder / name).write_text(text, encoding="utf-8")
    return deckcache.load(store, [folder], include_bundled=False)


def test_a_card_from_the_cache_has_the_hash_of_its_fields(tmp_path: Path) -> None:
    folder = tmp_path / "decks"
    folder.mkdir()
    with Store.open(tmp_path / "p.db") as store:
        coll = _load(store, folder, {"a.yaml": PLAIN, "b.yaml": GENERAL})
        for cid in ("plain-one", "plain-two", "general-one"):
            card = coll.get(cid)
            assert card is not None
            assert card.content_hash == _fresh(card), cid
        with Store.open(tmp_path / "q.db") as other:  # the bundled decks, every card
            bundled = deckcache.load(other, [], include_bundled=True)
            ids = [r.id for r in bundled.refs()]
            assert len(ids) > 100
            for cid in ids:
                card = bundled.get(cid)
                assert card is not None and card.content_hash == _fresh(card), cid


def test_a_changed_text_gives_a_new_hash(tmp_path: Path) -> None:
    folder = tmp_path / "decks"
    folder.mkdir()
    with Store.open(tmp_path / "p.db") as store:
        before = _load(store, folder, {"a.yaml": PLAIN, "b.yaml": GENERAL})
        old = {}
        for cid in ("plain-one", "plain-two", "general-one"):
            card = before.get(cid)
            assert card is not None
            old[cid] = card.content_hash
        after = _load(
            store,
            folder,
            {
                "a.yaml": PLAIN.replace("A digest.", "A digest of the text."),
                "b.yaml": GENERAL.replace("é and ü", "é and ö"),
            },
        )
        for cid in ("plain-one", "general-one"):
            card = after.get(cid)
            assert card is not None
            assert card.content_hash != old[cid], cid
            assert card.content_hash == _fresh(card), cid
        # the unchanged card keeps its hash
        two = after.get("plain-two")
        assert two is not None and two.content_hash == old["plain-two"] == _fresh(two)


def test_a_card_shown_does_not_hash_its_text_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "decks"
    folder.mkdir()
    with Store.open(tmp_path / "p.db") as store:
        coll = _load(store, folder, {"a.yaml": PLAIN})

        def no_hash(*_args: object) -> None:
            raise AssertionError("the card's hash was computed again")

        monkeypatch.setattr(deck_module, "sha256", no_hash)
        card = coll.get("plain-two")
        assert card is not None and len(card.content_hash) == 16
