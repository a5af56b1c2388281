"""`prep export --format apkg`: the decks as an Anki package (genanki).

One note per card, in a sub-deck per prep deck (``prep::<deck title>``), with a two-field
model (Front, Back). The front is the prompt (a follow-up card names the question it follows;
a choice or red-flag card lists its options as ``<ol type="a">``). The back is the card's
answer side as every front end shows it (engine/study/present.py): the correct option, the answer,
why, the analogy, the 60-second bullets, the sources and ``prep demo NAME`` per linked demo.
Tags are kept (spaces become underscores) plus ``prep::kind::<kind>``.

Ids are deterministic: the model and deck ids are hashes of their names and each note's guid is
derived from the card id, so importing a newer package into Anki updates the notes instead of
duplicating them.
"""

from __future__ import annotations

import hashlib
import html
import re
import sqlite3
import tempfile
import time
import zipfile
from pathlib import Path

import genanki

from prep.engine.decks.deck import Card
from prep.engine.study.collection import Cards
from prep.engine.study.present import answer_sections, first_line
from prep.engine.transfer.atomic import WriteError, is_stdout_name, write_files
from prep.engine.transfer.export import ExportError

MODEL_NAME = "prep W_O card"
DECK_PREFIX = "prep"

CSS = """\
.card { font-family: sans-serif; font-size: 18px; text-align: left; max-width: 46em; margin: auto; }
.follows { color: #777; font-size: 0.85em; }
.correct { font-weight: bold; }
.why, .analogy, .bullets, .sources, .demo { margin-top: 0.8em; }
code { font-family: monospace; }
"""


def stable_id(name: str) -> int:
    """A deterministic Anki id (model/deck) from a name: in [2^30, 2^31)."""
    digest = hashlib.sha256(name.encode()).digest()
    return (1 << 30) + int.from_bytes(digest[:4], "big") % (1 << 30)


def note_guid(card_id: str) -> str:
    return genanki.guid_for("prep", card_id)


def anki_tag(tag: str) -> str:
    """Anki tags cannot contain spaces; keep them readable."""
    return re.sub(r"\s+", "_", tag.strip()) or "_"


def _html(text: str) -> str:
    return html.escape(text).replace("\n", "<br>")


def _model() -> genanki.Model:
    return genanki.Model(
        stable_id(MODEL_NAME),
        MODEL_NAME,
        fields=[{"name": "Front"}, {"name": "Back"}],
        templates=[
            {
                "name": "Card 1",
                "qfmt": "{{Front}}",
                "afmt": '{{FrontSide}}<hr id="answer">{{Back}}',
            }
        ],
        css=CSS,
    )


def front_html(card: Card, collection: Cards) -> str:
    parts = []
    if card.parent:
        parent = collection.get(card.parent)
        if parent is not None:
            parts.append(f'<div class="follows">Follows: {_html(first_line(parent.prompt))}</div>')
    parts.append(f'<div class="prompt">{_html(card.prompt)}</div>')
    if card.choices:
        items = "".join(f"<li>{_html(c)}</li>" for c in card.choices)
        parts.append(f'<ol type="a">{items}</ol>')
    return "".join(parts)


def back_html(card: Card) -> str:
    """The answer side (engine/study/present.py's sections) as HTML; demos as the command to run,
    since a package carries no run results."""
    parts = []
    for section in answer_sections(card):
        label = f"<b>{_html(section.label)}:</b> "
        if section.key == "correct":
            parts.append(f'<div class="correct">{_html(section.text)}</div>')
        elif section.key == "answer":
            parts.append(f'<div class="answer">{_html(section.text)}</div>')
        elif section.key == "bullets":
            items = "".join(f"<li>{_html(b)}</li>" for b in section.items)
            parts.append(f'<div class="bullets">{label}<ul>{items}</ul></div>')
        elif section.key == "sources":
            parts.append(f'<div class="sources">{label}{_html("; ".join(section.items))}</div>')
        elif section.key == "demos":
            for link in section.demos:
                parts.append(
                    f'<div class="demo">{_html(section.label)}: '
                    f"<code>{_html(link.command)}</code></div>"
                )
        else:  # why, analogy
            parts.append(f'<div class="{section.key}">{label}{_html(section.text)}</div>')
    return "".join(parts)


def build_package(collection: Cards, deck: str | None = None) -> genanki.Package:
    model = _model()
    decks = []
    for name, info in collection.decks.items():
        if deck is not None and name != deck:
            continue
        full_name = f"{DECK_PREFIX}::{info.title}"
        anki_deck = genanki.Deck(
            stable_id(f"{DECK_PREFIX}::{name}"), full_name, description=_html(info.description)
        )
        for card in collection.in_deck(name):
            tags = [anki_tag(t) for t in card.tags] + [f"prep::kind::{card.kind}"]
            anki_deck.add_note(
                genanki.Note(
                    model=model,
                    fields=[front_html(card, collection), back_html(card)],
                    tags=tags,
                    guid=note_guid(card.id),
                    sort_field=card.id,
                )
            )
        decks.append(anki_deck)
    return genanki.Package(decks)


def write_apkg(
    collection: Cards, path: Path | str, *, deck: str | None = None, timestamp: float | None = None
) -> int:
    """Write the package to ``path`` (via a temporary file, so a failure leaves nothing
    behind). Returns the number of notes. Raises ExportError when the path is unwritable."""
    package = build_package(collection, deck)
    notes = sum(len(d.notes) for d in package.decks)

    def write(target: Path) -> None:
        # genanki's write_to_file leaves its temporary database behind; build the zip here.
        ts = time.time() if timestamp is None else timestamp
        with tempfile.TemporaryDirectory() as tmp:
            db_path = Path(tmp) / "collection.anki2"
            conn = sqlite3.connect(db_path)
            try:
                from itertools import count

                package.write_to_db(conn.cursor(), ts, count(int(ts * 1000)))
                conn.commit()
            finally:
                conn.close()
            with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as zf:
                zf.write(db_path, "collection.anki2")
                zf.writestr("media", "{}")

    try:
        write_files({path if is_stdout_name(path) else Path(path): write})
    except WriteError as exc:
        raise ExportError(str(exc)) from None
    return notes
