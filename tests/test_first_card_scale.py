"""What keeps the TUI's first card from growing with the collection (issue 26, item 3), held as
structure, not as time (tests/benchmarks/pty_bench.py measures the time):

- the deck files are listed, resolved, looked up in the cache and stat'ed once per open: the
  app's question "is there much to fill?" hands its scan to the load;
- a folder's deck files are resolved and shown once per folder, not once per file, with the
  same result as resolving each file;
- opening prep from another working directory (which changes how paths are shown) does not
  redo the checks across files, nor the reconciliation of progress (a minute at 1M cards);
  an assembly that has errors is redone, so its messages name files as shown from here.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from prep.engine.decks import assembly, changed, deckcache
from prep.engine.decks.files import (
    bundled_deck_files,
    collect_deck_files,
    deck_files_in,
    display_path,
)
from prep.engine.store import Store
from prep.tui.app import PrepApp
from prep.tui.screens.review import ReviewScreen
from tests.conftest import SMALL_DECK
from tests.pilot import async_test, wait_until

pytestmark = pytest.mark.usefixtures("utc_local_time")


@contextmanager
def cwd(path: Path) -> Iterator[None]:
    before = os.getcwd()
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(before)


def one_by_one(paths: list[Path]) -> list[tuple[str, Path, str]]:
    """collect_deck_files as it was: each file resolved and shown on its own."""
    out, seen = [], set()
    for p in paths:
        for f in deck_files_in(p):
            key = os.path.realpath(f)
            if key not in seen:
                seen.add(key)
                out.append((key, f, display_path(f)))
    return out


def test_a_folder_resolved_once_gives_what_each_file_resolved_gives(tmp_path: Path) -> None:
    decks = tmp_path / "work" / "decks"
    decks.mkdir(parents=True)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "far.yaml").write_text(SMALL_DECK)
    for name in ("a.yaml", "b.yml", ".hidden.yaml", "c.YAML", "notes.txt", "tab\tname.yaml"):
        (decks / name).write_text(SMALL_DECK)
    (decks / "sub.yaml").mkdir()  # a folder named like a deck: listed (and refused on read)
    (decks / "link.yaml").symlink_to(elsewhere / "far.yaml")  # resolved on its own
    (decks / "dangling.yaml").symlink_to(tmp_path / "gone.yaml")
    (decks / "same.yaml").symlink_to(decks / "a.yaml")  # the same file twice: once
    linked = tmp_path / "linked"
    linked.symlink_to(decks)  # the folder through a link
    folders = [
        [decks],
        [linked],
        [Path(os.path.relpath(decks, tmp_path / "work"))],
        [decks, linked, elsewhere],
    ]
    for here in (tmp_path, tmp_path / "work", decks, elsewhere, Path("/")):
        with cwd(here):
            for paths in folders:
                if not all(p.exists() for p in paths):
                    continue  # (a relative path from elsewhere)
                fast = collect_deck_files(paths, False, [])
                assert fast == one_by_one(paths), (here, paths)
                assert [s for _, _, s in fast if "\t" in s] == []  # (shown on one line)


def test_a_folder_of_many_decks_is_resolved_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    decks = tmp_path / "decks"
    decks.mkdir()
    for i in range(60):
        (decks / f"deck-{i:02}.yaml").write_text(SMALL_DECK)
    resolved: list[str] = []
    real = os.path.realpath

    def realpath(path, *args, **kwargs):
        resolved.append(str(path))
        return real(path, *args, **kwargs)

    monkeypatch.setattr(os.path, "realpath", realpath)
    files = collect_deck_files([decks], True, [])
    assert len(files) == 60 + len(bundled_deck_files())
    assert len(resolved) <= 2  # the bundled folder and this one, not each of 60 files


class Counted:
    """How often each of the deck-file steps of an open ran."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.collects = 0
        self.reads = 0
        self.assemblies = 0
        real_collect = changed.collect_deck_files
        real_files = Store.deck_cache_files
        real_refs = assembly._refs

        def collect(*args, **kwargs):
            self.collects += 1
            return real_collect(*args, **kwargs)

        def files(store):
            self.reads += 1
            return real_files(store)

        def refs(*args, **kwargs):
            self.assemblies += 1  # (the checks across files read every file's outline)
            return real_refs(*args, **kwargs)

        monkeypatch.setattr(changed, "collect_deck_files", collect)
        monkeypatch.setattr(deckcache, "collect_deck_files", collect)
        monkeypatch.setattr(Store, "deck_cache_files", files)
        monkeypatch.setattr(assembly, "_refs", refs)


@async_test
async def test_the_app_lists_and_reads_the_deck_files_once_per_open(
    tmp_path: Path, small_deck_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "prep.db"
    with Store.open(db) as store:  # the cache filled by an earlier open
        deckcache.load(store, [small_deck_dir], include_bundled=False)
    counted = Counted(monkeypatch)
    app = PrepApp(db=str(db), questions=[small_deck_dir], include_bundled=False, demos={})
    app.review_first = True
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_until(pilot, lambda: isinstance(app.screen, ReviewScreen))
        assert (counted.collects, counted.reads) == (1, 1)
        assert counted.assemblies == 0  # nothing changed: the checks are read back
        app.action_reload()  # a reload looks at the files again (once)
        await pilot.pause()
        assert (counted.collects, counted.reads) == (2, 2)


def test_a_scan_of_other_paths_or_of_an_older_format_is_not_used(
    tmp_path: Path, small_deck_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    other = tmp_path / "other"
    other.mkdir()
    (other / "other.yaml").write_text(SMALL_DECK.replace("deck: small", "deck: other"))
    with Store.open(tmp_path / "prep.db") as store:
        scan = deckcache.scan_decks(store, [small_deck_dir], include_bundled=False)
        coll = deckcache.load(store, [other], include_bundled=False, scan=scan)
        assert list(coll.decks) == ["other"]
        scan = deckcache.scan_decks(store, [other], include_bundled=False)
        monkeypatch.setattr(deckcache, "LOADER_VERSION", deckcache.LOADER_VERSION + 1)
        counted = Counted(monkeypatch)
        coll = deckcache.load(store, [other], include_bundled=False, scan=scan)
        assert counted.collects == 1  # the format changed: the cache was reset, scanned anew
        assert list(coll.decks) == ["other"] and len(coll.cards) > 0


def test_another_working_directory_redoes_neither_the_checks_nor_the_reconciliation(
    tmp_path: Path, small_deck_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    with Store.open(tmp_path / "prep.db") as store:
        with cwd(tmp_path):  # the deck shown as decks/small.yaml
            deckcache.load(store, [small_deck_dir], include_bundled=False)
            key = store.deck_reconcile_key()
        reconciles: list[str] = []
        real = Store.reconcile_with_deck_cache

        def reconcile(self, state_key):
            reconciles.append(state_key)
            return real(self, state_key)

        monkeypatch.setattr(Store, "reconcile_with_deck_cache", reconcile)
        counted = Counted(monkeypatch)
        with cwd(elsewhere):  # now shown as ../decks/small.yaml: the same files
            coll = deckcache.load(store, [small_deck_dir], include_bundled=False)
        assert counted.assemblies == 0 and reconciles == []
        assert store.deck_reconcile_key() == key
        card = coll.get(coll.cards[0].id)
        assert card is not None and card.file == display_path(small_deck_dir / "small.yaml")


def test_errors_name_the_files_as_shown_from_the_working_directory(
    tmp_path: Path, small_deck_dir: Path
) -> None:
    # a second file that defines an id again: an error across files, naming both files
    (small_deck_dir / "again.yaml").write_text(SMALL_DECK.replace("deck: small", "deck: again"))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    with Store.open(tmp_path / "prep.db") as store:
        for here in (tmp_path, tmp_path / "elsewhere", small_deck_dir):
            with cwd(here):  # decks/small.yaml, then /.../decks/small.yaml, then small.yaml
                shown = {display_path(small_deck_dir / n) for n in ("small.yaml", "again.yaml")}
                coll = deckcache.load(store, [small_deck_dir], include_bundled=False)
                assert coll.errors and {e.file for e in coll.errors} <= shown
                assert all(any(s in e.message for s in shown) for e in coll.errors)


V13_DECK_FILES = (  # v4's table and v12's ``ident``, as a v13 database has it
    "CREATE TABLE deck_files (fid INTEGER PRIMARY KEY, path TEXT NOT NULL UNIQUE, "
    "shown TEXT NOT NULL, size INTEGER NOT NULL, mtime_ns INTEGER NOT NULL, "
    "sha256 TEXT NOT NULL, checked_ns INTEGER NOT NULL, info TEXT, declared TEXT NOT NULL, "
    "errors TEXT NOT NULL, ord INTEGER, ident TEXT)"
)


def test_v15_keeps_every_cached_file_with_its_big_column_last(
    tmp_path: Path, small_deck_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (small_deck_dir / "other.yaml").write_text(SMALL_DECK.replace("deck: small", "deck: other"))
    path = tmp_path / "prep.db"
    with Store.open(path) as store:
        deckcache.load(store, [small_deck_dir], include_bundled=False)
        before = {r[1]: r for r in store.conn.execute("SELECT * FROM deck_files")}
        columns = [r[1] for r in store.conn.execute("PRAGMA table_info(deck_files)")]
        assert columns[-1] == "declared"  # read only when the checks are redone
        assert columns.index("ident") < columns.index("info")
        # the table as v14 (and v13) had it, the same rows
        with store.transaction():
            store.conn.execute("ALTER TABLE deck_files RENAME TO v14")
            store.conn.execute(V13_DECK_FILES)
            names = ", ".join(columns)
            store.conn.execute(f"INSERT INTO deck_files ({names}) SELECT {names} FROM v14")
            store.conn.execute("DROP TABLE v14")
            store.set_meta("schema_version", "14")
    with Store.open(path) as store:  # upgraded
        assert store.schema_version() == 17
        assert [r[1] for r in store.conn.execute("PRAGMA table_info(deck_files)")] == columns
        after = {r[1]: r for r in store.conn.execute("SELECT * FROM deck_files")}
        assert after == before  # every file, its fid (the cards' keys) and every value
        counted = Counted(monkeypatch)
        coll = deckcache.load(store, [small_deck_dir], include_bundled=False)
        assert counted.assemblies == 0  # the cached parse and checks are used as they were
        assert len(coll.cards) > 0 and list(coll.decks) == ["other", "small"]
