"""The deck cache's tables (deck_files, deck_cards, ...): engine/decks/deckcache.py decides,
these methods hold its SQL.

Part of the one `Store` (engine/store/__init__.py combines the tables' classes).
"""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager, suppress
from datetime import datetime
from typing import Any

from prep.engine.store.core import StoreCore
from prep.engine.store.schema14 import NOT_REVIEW_SQL
from prep.engine.study.scheduler import State
from prep.engine.textsafe import is_utf8
from prep.engine.timeutil import fmt


def _key_range(fid: int) -> tuple[int, int]:
    """The deck_cards keys of the cached file ``fid`` (its id << 32 | line)."""
    return fid << 32, (fid << 32) | 0xFFFFFFFF


# The meta key holding the deck state progress was last reconciled with. The stored name is kept
# from when reconciling was called "sync", so existing databases read it (schema.py clears it).
_RECONCILED_KEY = "deck_sync"
# The meta key holding the format the cached rows were written under (see deck_cache_reset).
_FORMAT_KEY = "deck_cache_format"
# The deck_cards keys of one cached file named by its path (bound twice), looked up in the
# statement that reads them: the file's row and its cards come from one snapshot, so a prune or
# reset by another prep between a lookup and a read cannot split them (a file not cached any
# more: NULL bounds, no row), where a lookup of its own was a statement before the read.
_IN_FILE = (
    "BETWEEN (SELECT fid FROM deck_files WHERE path = ?) << 32 "
    "AND ((SELECT fid FROM deck_files WHERE path = ?) << 32) | 0xFFFFFFFF"
)
# ids a statement of deck_cache_locate_many names (under SQLite's oldest variable limit, 999)
_LOCATE_BATCH = 500


class DeckCacheStore(StoreCore):
    """The deck cache's tables."""

    # --- deck cache (engine/decks/deckcache.py decides; these are its tables) -----------------

    # A cache private to this connection (deck_cache_private): its keys (format, assembly,
    # reconciliation) in memory; None while the cache is the database's own.
    _private: dict[str, str] | None = None
    # A bulk fill keeps its files' tags in a TEMP table as they are put (store/deckfill.py).
    _bulk_tags = False
    _bulk_cards = 0  # the cards it put

    def deck_cache_private(self) -> None:
        """Keep this connection's deck cache in TEMP tables, which shadow the database's own
        (left as they are), and its keys in memory: for a database that cannot be written
        now (read-only, or another prep holds the write lock), so that its decks are still
        read through the one cache, beside its progress. Nothing of it is saved."""
        if self._private is not None:
            return
        rows = self.conn.execute(
            "SELECT type, sql FROM main.sqlite_master WHERE sql IS NOT NULL AND "
            "tbl_name IN ('deck_files', 'deck_cards', 'deck_tags') ORDER BY type DESC"
        ).fetchall()  # the tables, then their indexes
        for kind, sql in rows:
            if kind == "table":
                sql = re.sub(r"^CREATE TABLE ", "CREATE TEMP TABLE ", sql)
            else:
                sql = re.sub(r"^CREATE (UNIQUE )?INDEX ", r"CREATE \1INDEX temp.", sql)
            self.conn.execute(sql)
        self._private = {}

    def deck_cache_is_private(self) -> bool:
        return self._private is not None

    @contextmanager
    def _cache_tx(self) -> Iterator[None]:
        """A write of the cache: the store's transaction, or (a private cache, TEMP tables
        only) a deferred one, which takes no lock of the database's."""
        if self._private is None:
            with self.transaction():
                yield
            return
        self.conn.execute("BEGIN")
        try:
            yield
            self.conn.execute("COMMIT")
        except BaseException:
            if self.conn.in_transaction:
                self.conn.execute("ROLLBACK")
            raise

    @contextmanager
    def deck_cache_snapshot(self) -> Iterator[None]:
        """Reads of the cache from one snapshot: a deferred read transaction (in WAL mode it
        takes no lock and blocks no writer), so that a load's reads of several files and
        tables see one state of the cache, whatever another prep commits meanwhile. Inside a
        transaction already: that one's."""
        if self.conn.in_transaction:
            yield
            return
        self.conn.execute("BEGIN")
        try:
            yield
        except BaseException:
            if self.conn.in_transaction:  # (nothing was written: only the snapshot ends)
                with suppress(sqlite3.Error):
                    self.conn.execute("ROLLBACK")
            raise
        if self.conn.in_transaction:
            self.conn.execute("COMMIT")

    def _cache_meta(self, key: str) -> str | None:
        return self.get_meta(key) if self._private is None else self._private.get(key)

    def _set_cache_meta(self, key: str, value: str | None) -> None:
        if self._private is not None:
            if value is None:
                self._private.pop(key, None)
            else:
                self._private[key] = value
        elif value is None:
            self.conn.execute("DELETE FROM meta WHERE key = ?", (key,))
        else:
            self.set_meta(key, value)

    def deck_cache_format(self) -> str | None:
        """The format key (engine/decks/deckcache.py's ``format_key``) the cache was written
        under; None for a cache from before the key was kept."""
        return self._cache_meta(_FORMAT_KEY)

    def deck_cache_reset(self, format_key: str) -> None:
        """Drop every cached parse and assembly, and record the format the cache is rebuilt
        under, in one transaction. Only the cache: progress is another set of tables (the
        next reconciliation runs, since the decks' state key names the format)."""
        with self._cache_tx():
            self.conn.execute("DELETE FROM deck_tags")
            self.conn.execute("DELETE FROM deck_cards")
            self.conn.execute("DELETE FROM deck_files")
            self._set_cache_meta("deck_assembly", None)
            self._set_cache_meta(_FORMAT_KEY, format_key)

    def deck_cache_adopt(self, format_key: str) -> bool:
        """Reset the cache unless it is kept under ``format_key`` already, asked again inside
        the reset's transaction: two preps opening one fresh database both see no format, and
        the second reset dropped the first one's fill (then filled again). True when reset."""
        if self._private is not None:  # (this connection's own tables: nobody else resets them)
            if self._cache_meta(_FORMAT_KEY) == format_key:
                return False
            self.deck_cache_reset(format_key)
            return True
        with self.transaction():  # (BEGIN IMMEDIATE: what it reads is the latest commit)
            if self._cache_meta(_FORMAT_KEY) == format_key:
                return False
            self.deck_cache_reset(format_key)  # (its transaction is this one)
            return True

    def deck_cache_files(self) -> dict[str, dict[str, Any]]:
        keys = ("path", "shown", "size", "mtime_ns", "sha256", "checked_ns", "ident")
        rows = self.conn.execute(f"SELECT {', '.join(keys)} FROM deck_files")
        return {r[0]: dict(zip(keys, r, strict=True)) for r in rows}

    def deck_cache_touch(
        self, path: str, size: int, mtime_ns: int, checked_ns: int, ident: str | None = None
    ) -> None:
        """The file was read and its hash is unchanged: remember its new size, mtime and
        identity (device, inode, ctime)."""
        with self._cache_tx():
            self.conn.execute(
                "UPDATE deck_files SET size = ?, mtime_ns = ?, checked_ns = ? WHERE path = ?",
                (size, mtime_ns, checked_ns, path),
            )
            if ident is not None:
                self.conn.execute("UPDATE deck_files SET ident = ? WHERE path = ?", (ident, path))

    def deck_cache_put(
        self,
        path: str,
        *,
        shown: str,
        size: int,
        mtime_ns: int,
        sha256: str,
        checked_ns: int,
        info: str | None,
        declared: list[tuple[str, int]],
        errors: list[tuple[int, str]],
        cards: list[tuple[int, str, str, str | None, str, list[str], str, str, str, int]],
        ident: str | None = None,
        tags: bool = True,
    ) -> None:
        """Replace one file's parse: its entry and its cards (line, id, deck, parent, demos,
        tags, content hash, fields, kind, level rank). The checks across files are then redone (assembly dropped).
        ``tags=False``: the cards' tags are left to a bulk fill's end (store/deckfill.py)."""
        with self._cache_tx():
            self.conn.execute(
                "INSERT INTO deck_files "
                "(path, shown, size, mtime_ns, sha256, checked_ns, info, declared, errors, ord) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, NULL) ON CONFLICT(path) DO UPDATE SET "
                "shown = excluded.shown, size = excluded.size, mtime_ns = excluded.mtime_ns, "
                "sha256 = excluded.sha256, checked_ns = excluded.checked_ns, "
                "info = excluded.info, declared = excluded.declared, errors = excluded.errors, "
                "ord = NULL",
                (
                    path,
                    shown,
                    size,
                    mtime_ns,
                    sha256,
                    checked_ns,
                    info,
                    json.dumps(declared),
                    json.dumps(errors),
                ),
            )
            self.conn.execute("UPDATE deck_files SET ident = ? WHERE path = ?", (ident, path))
            (fid,) = self.conn.execute(  # (written just above, in this transaction)
                "SELECT fid FROM deck_files WHERE path = ?", (path,)
            ).fetchone()
            lo, hi = _key_range(fid)
            if tags:  # (the bulk fill's end rebuilds them all instead)
                self._delete_tags(lo, hi)
            self.conn.execute("DELETE FROM deck_cards WHERE key BETWEEN ? AND ?", (lo, hi))
            self.conn.executemany(
                "INSERT INTO deck_cards (key, id, deck, parent, demos, chash, data, kind, level) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [(lo + c[0], *c[1:5], *c[6:]) for c in cards],
            )
            if tags:
                self.conn.executemany(
                    "INSERT OR IGNORE INTO deck_tags (id, tag, key) VALUES (?, ?, ?)",
                    [(c[1], tag, lo + c[0]) for c in cards for tag in c[5]],
                )
            elif self._bulk_tags:
                self.conn.executemany(
                    "INSERT INTO temp.deck_fill_tags (id, tag, key) VALUES (?, ?, ?)",
                    [(c[1], tag, lo + c[0]) for c in cards for tag in c[5]],
                )
                self._bulk_cards += len(cards)
            self._set_cache_meta("deck_assembly", None)

    def deck_cache_prune(self, paths: list[str]) -> None:
        """Forget the cached parse of these files (entry, cards, tags), in one transaction.
        Only the cache: progress (cards, reviews, marks) is another set of tables."""
        with self._cache_tx():
            for path in paths:
                row = self.conn.execute(
                    "SELECT fid FROM deck_files WHERE path = ?", (path,)
                ).fetchone()
                if row is None:
                    continue  # pruned meanwhile by another prep
                lo, hi = _key_range(row[0])
                self._delete_tags(lo, hi)
                self.conn.execute("DELETE FROM deck_cards WHERE key BETWEEN ? AND ?", (lo, hi))
                self.conn.execute("DELETE FROM deck_files WHERE fid = ?", (row[0],))

    def _delete_tags(self, lo: int, hi: int) -> None:
        """The tags of the cached cards keyed ``lo``..``hi`` (one file's), found by those cards'
        own ids (deck_tags' key is (id, tag, key)): a search per card, where asking for the key
        range alone scanned every tag of the collection for each file written (before its cards
        go: they name the ids)."""
        self.conn.execute(
            "DELETE FROM deck_tags WHERE key BETWEEN ?1 AND ?2 AND id IN "
            "(SELECT id FROM deck_cards WHERE key BETWEEN ?1 AND ?2)",
            (lo, hi),
        )

    def deck_cache_parsed(
        self, paths: list[str]
    ) -> dict[str, tuple[str | None, list[tuple[int, str]]]]:
        """(info JSON, parse errors) of each of ``paths`` that is cached (one pruned by
        another prep meanwhile is left out): one read of the files' table."""
        wanted = set(paths)
        rows = self.conn.execute("SELECT path, info, errors FROM deck_files").fetchall()
        found = {path: (info, errors) for path, info, errors in rows if path in wanted}
        return {  # (most files have no error: "[]" is not decoded, 256 times at 1M cards)
            path: (found[path][0], _errors(found[path][1])) for path in paths if path in found
        }

    def deck_cache_outline(self, paths: list[str]) -> Iterator[tuple]:
        """(file, line, id, deck, parent, demos) of every cached card of ``paths``, in order."""
        for path in paths:
            yield from self.conn.execute(
                "SELECT ?, key & 0xFFFFFFFF, id, deck, parent, demos FROM deck_cards "
                f"WHERE key {_IN_FILE} ORDER BY key",
                (path, path, path),
            )

    def deck_cache_card(
        self, path: str, line: int, card_id: str
    ) -> tuple[int, str, str | None, str, str, str] | None:
        """(line, deck, parent, demos, fields, content hash) of the cached card ``card_id``
        of one file: at ``line``, or (the file was parsed again since, by another prep,
        and the card moved) wherever it is in that file now; None when it is no longer
        there."""
        cols = "key & 0xFFFFFFFF, deck, parent, demos, data, chash FROM deck_cards"
        row = self.conn.execute(  # (the file's id and the card at its line: one statement)
            f"SELECT {cols} WHERE key = (SELECT fid FROM deck_files WHERE path = ?) << 32 | ? "
            "AND id = ?",
            (path, line, card_id),
        ).fetchone()
        if row is None:  # (None too when the file is not cached any more)
            row = self.conn.execute(
                f"SELECT {cols} WHERE key {_IN_FILE} AND id = ? AND dup = 0 LIMIT 1",
                (path, path, card_id),
            ).fetchone()
        return row

    def deck_cache_ids(self, path: str) -> list[tuple[int, str, int]]:
        """(line, id, left out as a duplicate) of each cached card of one file, in order
        (from the covering index: the cards' text is not read)."""
        return self.conn.execute(
            f"SELECT key & 0xFFFFFFFF, id, dup FROM deck_cards WHERE key {_IN_FILE} ORDER BY key",
            (path, path),
        ).fetchall()

    def deck_cache_fids(self, paths: Iterable[str]) -> dict[str, tuple[int, str]]:
        """(file id, sha256 of the text cached) of each of ``paths`` that is cached."""
        wanted = set(paths)
        rows = self.conn.execute("SELECT path, fid, sha256 FROM deck_files")
        return {path: (fid, sha) for path, fid, sha in rows if path in wanted}

    def deck_cache_sha(self, fid: int) -> str | None:
        """The sha256 of the text cached now for the file ``fid`` (None: no longer cached)."""
        row = self.conn.execute("SELECT sha256 FROM deck_files WHERE fid = ?", (fid,)).fetchone()
        return None if row is None else row[0]

    def deck_cache_locate(self, card_id: str) -> list[tuple[int, int, str]]:
        """(file id, line, the file's sha256) of each cached card with id ``card_id`` (one
        probe of the id index; usually one row, more for an id that several files declare)."""
        if not is_utf8(card_id):
            return []
        return self.conn.execute(
            "SELECT dc.key >> 32, dc.key & 0xFFFFFFFF, f.sha256 FROM deck_cards dc "
            "JOIN deck_files f ON f.fid = dc.key >> 32 WHERE dc.id = ?",
            (card_id,),
        ).fetchall()

    def deck_cache_locate_many(self, card_ids: list[str]) -> list[tuple[str, int, int, str]]:
        """(id, file id, line, the file's sha256) of each cached card whose id is one of
        ``card_ids``: ``deck_cache_locate`` for many ids in one statement per 500 (the id
        index probed once an id, not one query an id)."""
        rows: list[tuple[str, int, int, str]] = []
        card_ids = [i for i in card_ids if is_utf8(i)]
        for i in range(0, len(card_ids), _LOCATE_BATCH):
            chunk = card_ids[i : i + _LOCATE_BATCH]
            rows += self.conn.execute(
                "SELECT dc.id, dc.key >> 32, dc.key & 0xFFFFFFFF, f.sha256 FROM deck_cards dc "
                "JOIN deck_files f ON f.fid = dc.key >> 32 "
                f"WHERE dc.id IN ({', '.join('?' * len(chunk))})",
                chunk,
            ).fetchall()
        return rows

    def deck_cache_counts(self, paths: list[str]) -> dict[str, int]:
        """How many cards are cached for each file (counted in the key index)."""
        return {
            path: self.conn.execute(
                f"SELECT count(*) FROM deck_cards WHERE key {_IN_FILE}", (path, path)
            ).fetchone()[0]
            for path in paths
        }

    def deck_cache_declared(self, paths: list[str]) -> dict[str, list[tuple[str, int]]]:
        """(id, line) of every card entry of each file that names an id, valid or not (none of
        a file not cached any more)."""
        out = {}
        for path in paths:
            row = self.conn.execute(
                "SELECT declared FROM deck_files WHERE path = ?", (path,)
            ).fetchone()
            out[path] = [] if row is None else [(cid, line) for cid, line in json.loads(row[0])]
        return out

    def deck_cache_card_data(self, paths: list[str]) -> Iterator[tuple[str, int, str]]:
        for path in paths:
            yield from self.conn.execute(
                f"SELECT ?, key & 0xFFFFFFFF, data FROM deck_cards WHERE key {_IN_FILE}",
                (path, path, path),
            )

    def deck_cache_assembly(self, key: str) -> dict[str, Any] | None:
        """The checks across files, if they were last run on exactly this state of the decks."""
        value = self._cache_meta("deck_assembly")
        if value is None:
            return None
        saved = json.loads(value)
        return saved if saved.get("key") == key else None

    def deck_cache_save_assembly(
        self, key: str, paths: list[str], assembly: dict[str, Any]
    ) -> None:
        """Record which files are loaded now (in order) and which cards the checks across
        files left out (duplicate ids), for the queue's and the reconciliation's SQL."""
        with self._cache_tx():
            self.conn.execute("UPDATE deck_files SET ord = NULL WHERE ord IS NOT NULL")
            self.conn.executemany(
                "UPDATE deck_files SET ord = ? WHERE path = ?",
                [(i, p) for i, p in enumerate(paths)],
            )
            self.conn.execute("UPDATE deck_cards SET dup = 0 WHERE dup = 1")
            self.conn.executemany(  # (a file pruned by another prep meanwhile: none)
                "UPDATE deck_cards SET dup = 1 "
                "WHERE key = ((SELECT fid FROM deck_files WHERE path = ?) << 32) | ?",
                [(path, line) for path, line in assembly["excluded_keys"]],
            )
            self._set_cache_meta("deck_assembly", json.dumps({"key": key, **assembly}))

    def deck_reconcile_key(self) -> str | None:
        return self._cache_meta(_RECONCILED_KEY)

    _LIVE_DECK_CARDS = (
        "SELECT dc.id, dc.deck, dc.chash FROM deck_cards dc JOIN deck_files f ON f.fid = dc.key >> 32 "
        "WHERE f.ord IS NOT NULL AND +dc.dup = 0"
    )

    def reconcile_with_deck_cache(
        self, key: str, step: Callable[[int, int], None] | None = None
    ) -> dict[str, int]:
        """Store.reconcile in SQL, against the cached cards of the loaded deck files: the same
        flags (changed, removed, restored), no card hashed, no Python loop over cards; only
        the files that changed since the last reconciliation are matched when it is known
        what that one saw (engine/store/reconcile.py). One transaction, done file by file:
        ``step(done, steps)`` is called before each step (an exception it raises rolls the
        whole reconciliation back)."""
        from prep.engine.store import reconcile

        tell = step if step is not None else (lambda done, steps: None)
        with self.transaction():
            last = self.get_meta(_RECONCILED_KEY)
            out = reconcile.reconcile(self.conn, key, last, self.deck_cache_format(), tell)
            self.set_meta(_RECONCILED_KEY, key)
        return out

    def deck_cache_alias_claims(
        self, path: str, field: int, without: tuple[str, ...] = ()
    ) -> list[tuple[int, str, str]]:
        """(line, card id, alias) of every alias the cached cards of ``path`` list
        (``field``: the index of ``aliases`` in the cached card's JSON), in file order.
        ``without``: endings of the JSON of a card that lists none (its JSON is not parsed:
        reading every card's JSON here took ~1 s at 400k cards)."""
        skip = "".join(f" AND substr(dc.data, -{len(end)}) != ?" for end in without)
        return self.conn.execute(
            "SELECT dc.key & 0xFFFFFFFF, dc.id, a.value FROM deck_cards dc, "
            f"json_each(dc.data, ?) a WHERE dc.key {_IN_FILE}{skip} ORDER BY dc.key",
            (f"$[{field}]", path, path, *without),
        ).fetchall()

    def deck_cache_aliases(self, field: int) -> dict[str, str]:
        """{alias: kept id} for the stored ids (progress or marks) that no loaded card has
        but a loaded card lists as an alias (``field``: the index of ``aliases`` in the
        cached card's JSON). Reads the cards' JSON only when such ids exist."""
        live = self._LIVE_DECK_CARDS
        orphans = [
            r[0]
            for r in self.conn.execute(
                "SELECT id FROM (SELECT id FROM cards UNION SELECT card_id FROM card_marks) "
                f"WHERE id NOT IN (SELECT id FROM ({live}))"
            )
        ]
        if not orphans:
            return {}
        out: dict[str, str] = {}
        for i in range(0, len(orphans), 900):
            chunk = orphans[i : i + 900]
            rows = self.conn.execute(
                "SELECT a.value, dc.id FROM deck_cards dc "
                "JOIN deck_files f ON f.fid = dc.key >> 32, json_each(dc.data, ?) a "
                "WHERE f.ord IS NOT NULL AND +dc.dup = 0 "
                f"AND a.value IN ({','.join('?' * len(chunk))}) ORDER BY f.ord, dc.key",
                [f"$[{field}]", *chunk],
            )
            for alias, kept in rows:
                out.setdefault(alias, kept)
        return out

    def deck_cache_tag_progress(self, mature_days: float) -> dict[str, tuple[int, int, int]]:
        """Per tag of the loaded deck cards: (cards, seen, mature), one grouped query that
        walks the tags in card-id order beside the cards' id index. The cards left out as
        duplicates are read once from their partial index (a handful, usually none): probing
        deck_cards by key for every tag row would read the cached cards' pages (their text)."""
        rows = self.conn.execute(
            "SELECT t.tag, count(*), count(c.id), "
            "coalesce(sum(c.id IS NOT NULL AND coalesce(c.stability, 0) >= ?), 0) "
            "FROM deck_tags t JOIN deck_files f ON f.fid = t.key >> 32 "
            "LEFT JOIN cards c INDEXED BY sqlite_autoindex_cards_1 "
            "ON c.id = t.id AND c.removed = 0 "
            "WHERE f.ord IS NOT NULL "
            "AND t.key NOT IN (SELECT key FROM deck_cards INDEXED BY deck_cards_dup WHERE dup = 1) "
            "GROUP BY t.tag",
            [mature_days],
        )
        return {tag: (int(n), int(seen), int(mature)) for tag, n, seen, mature in rows}

    def deck_cache_unseen(
        self, deck: str | None = None
    ) -> Iterator[tuple[str, str, str, str | None, bool]]:
        """(id, deck, kind, parent, parent seen) of each loaded deck card without progress,
        in deck order: file by file, each a rowid range that SQLite steps only as far as the
        caller reads (no sort, no set of seen ids)."""
        sql = (
            "SELECT id, deck, kind, parent, parent IS NOT NULL AND EXISTS "
            "(SELECT 1 FROM cards p WHERE p.id = deck_cards.parent) "
            "FROM deck_cards WHERE key BETWEEN ? AND ? AND +dup = 0 "
            "AND NOT EXISTS (SELECT 1 FROM cards c WHERE c.id = deck_cards.id)"
        )
        if deck is not None:
            sql += " AND deck = ?"
        files = self.conn.execute(
            "SELECT fid FROM deck_files WHERE ord IS NOT NULL ORDER BY ord"
        ).fetchall()
        for (fid,) in files:
            args: list[Any] = [fid << 32, (fid << 32) | 0xFFFFFFFF]
            if deck is not None:
                args.append(deck)
            for cid, cdeck, kind, parent, parent_seen in self.conn.execute(
                sql + " ORDER BY key", args
            ):
                yield cid, cdeck, kind, parent, bool(parent_seen)

    def deck_cache_unseen_from(
        self, path: str, kind: str, after: int | None, limit: int, level: int | None = None
    ) -> list[tuple[int, str, str, str | None, bool]]:
        """Up to ``limit`` cached cards of one file and one kind (and curriculum level, when
        given) without progress (and not left out as duplicates), after key ``after`` (None:
        from the file's start), in file order: (key, id, deck, parent, parent seen). One
        range of the (kind, level, key) index: the new-card rotation reads only as far as
        the day's limit needs."""
        where = "kind = ?" if level is None else "kind = ? AND level = ?"
        fid = "(SELECT fid FROM deck_files WHERE path = ?)"  # (in this statement: see _IN_FILE)
        start = f"key >= {fid} << 32" if after is None else "key > ?"
        end = f"key <= ({fid} << 32) | 0xFFFFFFFF"
        index = "deck_cards_level"  # (kind, level, key, id, dup): a kind alone is its prefix
        sql = (
            "SELECT key, id, deck, parent, parent IS NOT NULL AND EXISTS "
            "(SELECT 1 FROM cards p WHERE p.id = dc.parent) "
            f"FROM deck_cards dc INDEXED BY {index} "
            f"WHERE {where} AND {start} AND {end} AND dup = 0 "
            "AND NOT EXISTS (SELECT 1 FROM cards c WHERE c.id = dc.id)"
        )
        args = [kind, *([] if level is None else [level])]
        args += [path if after is None else after, path, limit]
        rows = self.conn.execute(sql + " ORDER BY key LIMIT ?", args)
        return [(key, cid, d, parent, bool(seen)) for key, cid, d, parent, seen in rows]

    def deck_cache_citing(self, path: str) -> list[tuple[int, str, str]]:
        """(line, id, demos) of the cached cards of one file that cite a demo, in file order
        (from their partial index: the other cards are not read)."""
        return self.conn.execute(
            "SELECT key & 0xFFFFFFFF, id, demos FROM deck_cards INDEXED BY deck_cards_demos "
            f"WHERE demos != '' AND key {_IN_FILE} ORDER BY key",
            (path, path),
        ).fetchall()

    def due_counts(
        self, now: datetime, learning_until: datetime | None = None, *, steps: bool = True
    ) -> dict[str, tuple[int, int]]:
        """Per deck: (learning or relearning cards due by ``learning_until`` (default
        ``now``), review cards due by ``now``), of the cards still in the decks (the queue
        passes the end of today as ``now``: reviews are due by day, engine/study/due.py).
        One grouped count over an index that holds the deck, per state as ``due_ids`` reads
        them (schema v14: the learning cards' partial index, the due index for Review
        cards); no card row is read. ``steps`` False: the learning column is not counted (0)."""
        others = [int(x) for x in State if x != State.Review]
        out: dict[str, list[int]] = {}
        learning = (
            "SELECT deck, count(*) FROM cards INDEXED BY cards_learning WHERE removed = 0 "
            f"AND {NOT_REVIEW_SQL} AND state IN ({', '.join('?' * len(others))}) AND due <= ? "
            "GROUP BY deck"
        )
        review = (
            "SELECT deck, count(*) FROM cards INDEXED BY cards_due WHERE removed = 0 "
            "AND due <= ? AND state = ? GROUP BY deck"
        )
        queries = (
            (learning, [*others, fmt(learning_until or now)]),
            (review, [fmt(now), int(State.Review)]),
        )
        for column, (sql, args) in enumerate(queries):
            if column == 0 and not steps:
                continue
            rows = self.conn.execute(sql, args)
            for deck, n in rows:
                out.setdefault(deck, [0, 0])[column] += n
        return {deck: (n[0], n[1]) for deck, n in out.items()}


def _errors(text: str) -> list[tuple[int, str]]:
    """A file's cached parse errors, (line, message) each."""
    return [] if text == "[]" else [(line, msg) for line, msg in json.loads(text)]
