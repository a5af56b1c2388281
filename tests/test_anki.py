"""`prep export --format apkg`: read the package back (a zip holding an SQLite collection)."""

from __future__ import annotations

import json
import sqlite3
import zipfile
from pathlib import Path

import pytest
from click.testing import CliRunner

from prep.engine.decks.collection import CachedCollection
from prep.engine.decks.deckcache import load_collection
from prep.engine.transfer import anki
from prep.engine.transfer.export import ExportError
from prep.tui.cli import main

FIELD_SEP = "\x1f"

EXTRA_DECK = """\
deck: extra
title: Extra <deck> & co
cards:
  - id: with-demo
    kind: recall
    prompt: "Does 2 < 3 hold for heads & slices?"
    answer: "Yes.\\nSecond line."
    explain: Because.
    analogy: Like a mixing desk.
    demo: block-diagonal
    tags: [two words, roles]
"""


def read_apkg(path: Path) -> dict:
    with zipfile.ZipFile(path) as zf:
        names = zf.namelist()
        data = zf.read("collection.anki2")
        media = json.loads(zf.read("media"))
    db_file = path.with_suffix(".anki2")
    db_file.write_bytes(data)
    conn = sqlite3.connect(db_file)
    try:
        notes = conn.execute("SELECT guid, mid, tags, flds, sfld FROM notes").fetchall()
        cards = conn.execute("SELECT nid, did FROM cards").fetchall()
        col = conn.execute("SELECT models, decks FROM col").fetchone()
    finally:
        conn.close()
    return {
        "names": names,
        "media": media,
        "notes": {
            n[4]: {"guid": n[0], "mid": n[1], "tags": n[2].split(), "fields": n[3].split(FIELD_SEP)}
            for n in notes
        },
        "cards": cards,
        "models": json.loads(col[0]),
        "decks": json.loads(col[1]),
    }


@pytest.fixture
def coll(small_deck_dir: Path) -> CachedCollection:
    (small_deck_dir / "extra.yaml").write_text(EXTRA_DECK, encoding="utf-8")
    c = load_collection([small_deck_dir], include_bundled=False)
    assert not c.errors, c.errors
    return c


def test_one_note_per_card_with_the_back_and_tags(coll: CachedCollection, tmp_path: Path) -> None:
    out = tmp_path / "deck.apkg"
    assert anki.write_apkg(coll, out, timestamp=1_700_000_000) == len(coll)
    pkg = read_apkg(out)
    assert pkg["names"] == ["collection.anki2", "media"] and pkg["media"] == {}
    assert set(pkg["notes"]) == {c.id for c in coll.cards}  # sort field = card id
    assert len(pkg["cards"]) == len(coll)  # one Anki card per note

    model = pkg["models"][str(anki.stable_id(anki.MODEL_NAME))]
    assert [f["name"] for f in model["flds"]] == ["Front", "Back"]
    deck_names = {d["name"] for d in pkg["decks"].values()}
    assert {"prep::A small test deck", "prep::Extra <deck> & co"} <= deck_names

    # a choice card: the options as an <ol type="a"> list, the right one on the back
    front, back = pkg["notes"]["pick-one"]["fields"]
    assert '<ol type="a"><li>concat</li><li>W_O</li><li>softmax</li></ol>' in front
    assert "b) W_O" in back and "W_O (b); concat only stacks slices." in back

    # answer, explanation, analogy, demo command on the back; text is HTML-escaped
    front, back = pkg["notes"]["with-demo"]["fields"]
    assert "2 &lt; 3 hold for heads &amp; slices?" in front
    assert "Yes.<br>Second line." in back
    assert "<b>Why:</b> Because." in back
    assert "<b>Analogy:</b> Like a mixing desk." in back
    assert "<code>prep demo block-diagonal</code>" in back
    assert set(pkg["notes"]["with-demo"]["tags"]) == {"two_words", "roles", "prep::kind::recall"}

    # a follow-up names its parent question on the front
    front, _ = pkg["notes"]["roles-follow"]["fields"]
    assert "Follows: Name two roles of W_O" in front


def test_ids_are_stable_so_anki_updates_instead_of_duplicating(
    coll: CachedCollection, tmp_path: Path
) -> None:
    anki.write_apkg(coll, tmp_path / "a.apkg", timestamp=1)
    anki.write_apkg(coll, tmp_path / "b.apkg", timestamp=2)
    a, b = read_apkg(tmp_path / "a.apkg"), read_apkg(tmp_path / "b.apkg")
    assert {k: v["guid"] for k, v in a["notes"].items()} == {
        k: v["guid"] for k, v in b["notes"].items()
    }
    assert set(a["decks"]) == set(b["decks"])
    assert a["notes"]["roles"]["guid"] == anki.note_guid("roles")
    assert len({v["guid"] for v in a["notes"].values()}) == len(coll)


def test_one_deck_only(coll: CachedCollection, tmp_path: Path) -> None:
    assert anki.write_apkg(coll, tmp_path / "x.apkg", deck="extra") == 1
    assert set(read_apkg(tmp_path / "x.apkg")["notes"]) == {"with-demo"}


def test_unwritable_path_is_a_clear_error(coll: CachedCollection, tmp_path: Path) -> None:
    target = tmp_path / "missing" / "deck.apkg"
    with pytest.raises(ExportError, match="cannot write .*deck.apkg: no folder"):
        anki.write_apkg(coll, target)
    assert not target.parent.exists()


def test_cli_apkg(small_deck_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "prep.apkg"
    runner = CliRunner()
    args = ["--db", str(tmp_path / "p.db"), "--questions", str(small_deck_dir), "export"]
    result = runner.invoke(main, [*args, "--format", "apkg", "-o", str(out), "--deck", "small"])
    assert result.exit_code == 0, result.output
    assert "4 notes for Anki" in result.output
    assert len(read_apkg(out)["notes"]) == 4
    result = runner.invoke(main, [*args, "-o", str(out), "--deck", "nope"])
    assert result.exit_code == 2 and "no deck named 'nope'" in result.stderr
    result = runner.invoke(main, [*args, "-o", str(tmp_path / "gone" / "x.apkg")])
    assert result.exit_code == 2 and result.stderr.startswith("prep: cannot write ")
