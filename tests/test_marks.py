"""Marks (suspend, bury, flag) after their session: they survive export/import, `prep marks`
lists them and `prep unmark` clears them."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner

from prep.engine.decks.collection import CachedCollection
from prep.engine.decks.deck import ParsedDecks
from prep.engine.decks.deckcache import from_parsed
from prep.engine.store import Mark, Store
from prep.engine.transfer import export as ex
from prep.engine.transfer import importer
from prep.tui.cli import main

from .test_export import T0, history

LATER = datetime.now(UTC) + timedelta(days=2)  # a bury still in force when the CLI runs


def cli(db: Path, decks: Path, *args: str):
    return CliRunner().invoke(main, ["--db", str(db), "--questions", str(decks), *args])


def mark_some(store: Store) -> None:
    """The user pass's marks: 1 suspended, 1 buried, 2 flagged; one on a card never reviewed."""
    store.set_mark("roles", Mark(suspended=True, flagged=True))
    store.set_mark("pick-one", Mark(buried_until=LATER))
    store.set_mark("flag", Mark(flagged=True))


@pytest.fixture
def marked(tmp_path: Path, small_collection: CachedCollection) -> Store:
    store = Store.open(tmp_path / "src.db")
    history(store, small_collection, days=1)
    mark_some(store)
    yield store
    store.close()


# --- export and import -------------------------------------------------------------------


@pytest.mark.parametrize("fmt", ["json", "csv"])
def test_marks_survive_export_and_import(marked: Store, tmp_path: Path, fmt: str) -> None:
    now = datetime.now(UTC)
    assert marked.mark_counts(now) == {"suspended": 1, "buried": 1, "flagged": 2}
    out = tmp_path / f"p.{fmt}"
    if fmt == "json":
        ex.export_json(marked, out, T0)
        rows = json.loads(out.read_text())["marks"]
        assert [r["card_id"] for r in rows] == ["flag", "pick-one", "roles"]
        assert all(list(r) == list(ex.MARK_COLUMNS) for r in rows)
    else:
        ex.export_csv(marked, out)
        lines = (tmp_path / "p.marks.csv").read_text().splitlines()
        assert lines[0] == ",".join(ex.MARK_COLUMNS) and len(lines) == 4
    with Store.open(tmp_path / "dst.db") as dst:
        result = importer.import_file(dst, out)
        assert result.marks_added == 3 and "3 marks added" in result.summary()
        assert dst.mark_counts(now) == {"suspended": 1, "buried": 1, "flagged": 2}
        for cid in ("roles", "pick-one", "flag"):
            assert dst.mark(cid) == marked.mark(cid)
        assert dst.dump() == marked.dump()
        # idempotent: the same file again adds nothing and changes nothing
        before = dst.dump()
        again = importer.import_file(dst, out)
        assert again.marks_added == 0 and again.marks_skipped == 3
        assert dst.dump() == before


def test_cli_round_trip_keeps_the_counts_stats_shows(
    marked: Store, tmp_path: Path, small_deck_dir: Path
) -> None:
    out = tmp_path / "all.json"
    assert cli(Path(marked.path), small_deck_dir, "export", "-o", str(out)).exit_code == 0
    dst = tmp_path / "dst.db"
    result = cli(dst, small_deck_dir, "import", str(out))
    assert result.exit_code == 0, result.output
    stats = cli(dst, small_deck_dir, "stats")
    assert "1 suspended · 1 buried · 2 flagged" in stats.output


def test_an_old_export_without_marks_still_imports(marked: Store, tmp_path: Path) -> None:
    ex.export_json(marked, tmp_path / "p.json", T0)
    data = json.loads((tmp_path / "p.json").read_text())
    del data["marks"]
    (tmp_path / "old.json").write_text(json.dumps(data))
    ex.export_csv(marked, tmp_path / "old.csv")
    (tmp_path / "old.marks.csv").unlink()
    for name in ("old.json", "old.csv"):
        with Store.open(tmp_path / f"{name}.db") as dst:
            result = importer.import_file(dst, tmp_path / name)
            assert result.reviews_added == marked.count_reviews() > 0
            assert result.marks_added == 0 and "mark" not in result.summary()
            assert dst.mark_counts(datetime.now(UTC))["flagged"] == 0


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("card_id", "Not A Slug", "card_id 'Not A Slug' is not a slug"),
        ("card_id", None, "missing card_id"),
        ("suspended", 2, "suspended must be between 0 and 1, got 2"),
        ("flagged", "yes", "flagged must be a whole number, got 'yes'"),
        ("flagged", 10**30, "flagged must be between 0 and 1"),
        ("buried_until", "tomorrow", "buried_until is not a time: 'tomorrow'"),
        ("buried_until", 5, "buried_until must be a UTC time"),
        ("buried_until", "9999-12-31T23:59:59-01:00", "buried_until is not a time"),
    ],
)
def test_a_bad_mark_is_a_clear_error_and_changes_nothing(
    marked: Store, tmp_path: Path, small_deck_dir: Path, field: str, value, message: str
) -> None:
    ex.export_json(marked, tmp_path / "p.json", T0)
    data = json.loads((tmp_path / "p.json").read_text())
    data["marks"][1][field] = value
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(data))
    dst = tmp_path / "dst.db"
    result = cli(dst, small_deck_dir, "import", str(bad))
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith(f"prep: {bad}: marks[1]: {message}"), result.stderr
    assert "\n" not in result.stderr.strip() and "Traceback" not in result.output
    with Store.open(dst) as store:
        assert store.count_reviews() == 0 and store.mark_rows() == []


def test_a_bad_mark_in_csv_names_the_file_and_line(marked: Store, tmp_path: Path) -> None:
    ex.export_csv(marked, tmp_path / "p.csv")
    marks_csv = tmp_path / "p.marks.csv"
    lines = marks_csv.read_text().splitlines()
    lines[2] = lines[2].replace(LATER.strftime("%Y-"), "20x6-")
    marks_csv.write_text("\n".join(lines) + "\n")
    with Store.open(tmp_path / "dst.db") as dst:
        with pytest.raises(ex.ExportError, match=r"p\.marks\.csv:3: buried_until is not a time"):
            importer.import_file(dst, tmp_path / "p.csv")
        assert dst.count_reviews() == 0 and dst.mark_rows() == []


def test_a_card_marked_twice_in_the_file_is_refused(marked: Store, tmp_path: Path) -> None:
    ex.export_json(marked, tmp_path / "p.json", T0)
    data = json.loads((tmp_path / "p.json").read_text())
    data["marks"].append(dict(data["marks"][0]))
    (tmp_path / "twice.json").write_text(json.dumps(data))
    with Store.open(tmp_path / "dst.db") as dst:
        with pytest.raises(ex.ExportError, match=r"marks\[3\]: card 'flag' is marked twice"):
            importer.import_file(dst, tmp_path / "twice.json")
        assert dst.count_reviews() == 0


def test_a_differing_mark_stays_as_marked_here(marked: Store, tmp_path: Path) -> None:
    """A mark is last-writer-wins; an export's marks carry no time, so a card marked
    differently here keeps this database's mark, and the rest is imported."""
    out = tmp_path / "p.json"
    ex.export_json(marked, out, T0)
    with Store.open(tmp_path / "dst.db") as dst:
        importer.import_file(dst, out)
        dst.set_mark("roles", Mark(suspended=True))  # unflagged here since the export
        dst.set_mark("roles-follow", Mark(flagged=True))  # a card the file does not mark
        before = dst.dump()
        result = importer.import_file(dst, out)
        assert result.marks_kept == 1 and "1 mark kept as marked here" in result.summary()
        assert dst.dump() == before
    # a bury here that ran out is no mark: the file's flag is imported
    with Store.open(tmp_path / "stale.db") as stale:
        stale.set_mark("flag", Mark(buried_until=T0))
        assert importer.import_file(stale, out).marks_added == 3
        assert stale.mark("flag") == Mark(flagged=True)
    with Store.open(tmp_path / "other.db") as other:
        other.set_mark("flag", Mark(suspended=True))
        result = importer.import_file(other, out)
        assert other.mark("flag") == Mark(suspended=True)
        assert other.mark("roles") == marked.mark("roles") and result.marks_added == 2
        assert other.count_reviews() == marked.count_reviews()


# --- prep marks, prep unmark ----------------------------------------------------------------


def test_prep_marks_lists_each_marked_card(
    marked: Store, small_deck_dir: Path, utc_local_time
) -> None:
    marked.set_mark("gone-card", Mark(suspended=True))  # a card no longer in any deck
    marked.set_mark("roles-follow", Mark(buried_until=T0))  # a bury that ran out: not listed
    db = Path(marked.path)
    result = cli(db, small_deck_dir, "marks")
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert [line.split()[0] for line in lines[:-1]] == ["flag", "gone-card", "pick-one", "roles"]
    by_id = {line.split()[0]: line for line in lines[:-1]}
    assert "small" in by_id["roles"] and "suspended, flagged" in by_id["roles"]
    assert by_id["roles"].endswith("Name two roles of W_O beyond shape preservation.")
    assert f"buried until {LATER:%Y-%m-%d %H:%M}" in by_id["pick-one"]
    assert "(in no deck)" in by_id["gone-card"]
    assert lines[-1].startswith("4 cards: 2 suspended · 1 buried · 2 flagged")

    data = json.loads(cli(db, small_deck_dir, "marks", "--json").output)
    assert data["counts"] == {"suspended": 2, "buried": 1, "flagged": 2}
    roles = next(c for c in data["cards"] if c["id"] == "roles")
    assert roles == {
        "id": "roles",
        "deck": "small",
        "prompt": "Name two roles of W_O beyond shape preservation.",
        "suspended": True,
        "buried_until": None,
        "flagged": True,
    }
    assert next(c for c in data["cards"] if c["id"] == "pick-one")["buried_until"].startswith(
        LATER.strftime("%Y-%m-%dT%H:%M")
    )


def test_prep_marks_with_nothing_marked(db_path: Path, small_deck_dir: Path) -> None:
    Store.open(db_path).close()  # (read-only commands create no database)
    result = cli(db_path, small_deck_dir, "marks")
    assert result.exit_code == 0 and result.output == "No suspended, buried or flagged cards.\n"
    data = json.loads(cli(db_path, small_deck_dir, "marks", "--json").output)
    assert data == {"cards": [], "counts": {"suspended": 0, "buried": 0, "flagged": 0}}


def test_prep_unmark_clears_only_what_is_asked(marked: Store, small_deck_dir: Path) -> None:
    db = Path(marked.path)
    result = cli(db, small_deck_dir, "unmark", "roles", "--flag")
    assert result.exit_code == 0 and result.output == "roles: unflagged\n"
    assert marked.mark("roles") == Mark(suspended=True)
    result = cli(db, small_deck_dir, "unmark", "pick-one", "--suspend")
    assert result.output == "pick-one: nothing to clear\n"
    assert marked.mark("pick-one").buried_until is not None
    result = cli(db, small_deck_dir, "unmark", "pick-one", "--bury")
    assert result.output == "pick-one: unburied\n" and marked.mark("pick-one") == Mark()


def test_prep_unmark_without_options_clears_every_mark(marked: Store, small_deck_dir: Path) -> None:
    marked.set_mark("gone-card", Mark(suspended=True, buried_until=LATER, flagged=True))
    db = Path(marked.path)
    result = cli(db, small_deck_dir, "unmark", "roles", "gone-card", "flag", "roles-follow")
    assert result.exit_code == 0, result.output
    assert result.output.splitlines() == [
        "roles: unsuspended, unflagged",
        "gone-card: unsuspended, unburied, unflagged",
        "flag: unflagged",
        "roles-follow: nothing to clear",
    ]
    assert [r["card_id"] for r in marked.mark_rows()] == ["pick-one"]  # not named: kept
    # the queue serves the unsuspended card again
    assert "roles" not in marked.hidden_ids(datetime.now(UTC))


def test_prep_unmark_an_unknown_card_is_one_line_and_changes_nothing(
    marked: Store, small_deck_dir: Path
) -> None:
    db = Path(marked.path)
    before = marked.mark_rows()
    result = cli(db, small_deck_dir, "unmark", "roles", "no-such-card")
    assert result.exit_code == 2
    assert result.stderr.startswith("prep: no card 'no-such-card' ")
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.output
    assert marked.mark_rows() == before  # roles kept its marks: nothing changed
    assert cli(db, small_deck_dir, "unmark").exit_code == 2  # an id is required


# --- the stats screen and `prep stats` list the suspended and the flagged cards ---------------


def test_stats_lists_suspended_and_flagged_cards(marked: Store, small_deck_dir: Path) -> None:
    from prep.tui.screens.stats import StatsScreen
    from prep.tui.testing import make_app
    from tests.test_tui import async_test, text_of

    text = cli(Path(marked.path), small_deck_dir, "stats").output
    assert "\nSuspended    roles\n" in text and "\nFlagged      flag, roles\n" in text
    data = json.loads(cli(Path(marked.path), small_deck_dir, "stats", "--json").output)
    assert data["marked"] == {"suspended": ["roles"], "flagged": ["flag", "roles"]}

    @async_test
    async def drive() -> None:
        app = make_app(store=marked, collection=from_parsed(ParsedDecks()))
        async with app.run_test(size=(100, 30)) as pilot:
            await pilot.press("s")
            assert isinstance(app.screen, StatsScreen)
            summary = text_of(app, "#stats-summary")
            assert "Suspended  roles" in summary and "Flagged    flag, roles" in summary

    drive()
    marked.set_mark("roles", Mark())
    marked.set_mark("flag", Mark())
    text = cli(Path(marked.path), small_deck_dir, "stats").output
    assert "Suspended" not in text and "Flagged" not in text
