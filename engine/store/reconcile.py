"""Progress reconciled with the deck cache (Store.reconcile_with_deck_cache), in proportion to
what changed since the last reconciliation.

A card's row follows the live row of its id in the cache (a loaded file's row not left out as
a duplicate): ``removed`` when there is none, its deck and content hash (``changed`` set when
the hash moved) when there is. After a reconciliation every card not removed is live, so
until the decks change again only these can be out of step:

- the cards of a file whose text changed, that is new to the loaded set, or that gained or
  lost a duplicate: its live rows are matched (restored, deck and hash) file by file;
- the cards that such a file held before, and those of a file no longer loaded: they are
  found by their deck (the name that file's cards had, kept in the record), and removed
  unless still live;
- card rows written since by something other than a rating of a live card (an import): the
  rows past the last reconciliation's highest rowid are checked as above.

What the last reconciliation saw is kept in ``meta`` (``deck_sync_files``: its key, the
cache's format, each loaded file's text hash and deck, the duplicate rows, the highest card
rowid). Anything else redoes the whole reconciliation: no record, a record of another key
than the reconciliation's (a sync that brought new cards and an upgrade clear that key), a
cache written under another format (its parse of the same text may differ).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from typing import Any

RECORD_KEY = "deck_sync_files"

_LIVE = (
    "SELECT dc.id, dc.deck, dc.chash FROM deck_cards dc JOIN deck_files f ON f.fid = dc.key >> 32 "
    "WHERE f.ord IS NOT NULL AND +dc.dup = 0"
)
_ONE = "SELECT id, deck, chash FROM deck_cards WHERE key BETWEEN ? AND ? AND +dup = 0"


def _range(fid: int) -> tuple[int, int]:
    return fid << 32, (fid << 32) | 0xFFFFFFFF


def _loaded(conn: sqlite3.Connection) -> dict[str, tuple[int, str, str | None]]:
    """path -> (fid, text hash, its cards' deck) of each loaded file, in load order."""
    out = {}
    for fid, path, sha in conn.execute(
        "SELECT fid, path, sha256 FROM deck_files WHERE ord IS NOT NULL ORDER BY ord"
    ):
        row = conn.execute(
            "SELECT deck FROM deck_cards WHERE key BETWEEN ? AND ? LIMIT 1", _range(fid)
        ).fetchone()
        out[path] = (fid, sha, None if row is None else row[0])
    return out


def _dups(conn: sqlite3.Connection) -> set[tuple[str, int]]:
    return {
        (path, line)
        for path, line in conn.execute(
            "SELECT f.path, dc.key & 0xFFFFFFFF FROM deck_cards dc INDEXED BY deck_cards_dup "
            "JOIN deck_files f ON f.fid = dc.key >> 32 WHERE dc.dup = 1"
        )
    }


def _match_file(conn: sqlite3.Connection, fid: int) -> tuple[int, int]:
    """(restored, changed) of the cards of one loaded file's live rows."""
    restored = conn.execute(
        f"UPDATE cards SET removed = 0 WHERE removed = 1 AND id IN (SELECT id FROM ({_ONE}))",
        _range(fid),
    ).rowcount
    changed = conn.execute(
        "UPDATE cards SET changed = (cards.content_hash IS NOT l.chash) OR cards.changed, "
        f"content_hash = l.chash, deck = l.deck FROM ({_ONE}) AS l WHERE cards.id = l.id AND "
        "(cards.content_hash IS NOT l.chash OR cards.deck != l.deck)",
        _range(fid),
    ).rowcount
    return restored, changed


def reconcile(
    conn: sqlite3.Connection,
    key: str,
    last_key: str | None,
    format_key: str | None,
    tell: Callable[[int, int], None],
) -> dict[str, int]:
    """Reconcile inside the caller's transaction; ``last_key``: the key of the last
    reconciliation (None: cleared). Returns the counts and ``files`` (how many files were
    matched: every loaded file when the whole was redone)."""
    files = _loaded(conn)
    dups = _dups(conn)
    record = _record(conn)
    whole = (
        record is None
        or last_key is None
        or record.get("key") != last_key
        or record.get("format") != format_key
    )
    if whole:
        todo = list(files)
        steps = len(todo) + 1
        tell(0, steps)
        removed = conn.execute(
            f"UPDATE cards SET removed = 1 WHERE removed = 0 AND id NOT IN (SELECT id FROM ({_LIVE}))"
        ).rowcount
    else:
        assert record is not None
        old_files: dict[str, list[Any]] = record["files"]
        moved = {path for path, _ in dups ^ {(p, line) for p, line in record["dups"]}}
        todo = [
            path
            for path, (_, sha, _) in files.items()
            if path not in old_files or old_files[path][0] != sha or path in moved
        ]
        left = [path for path in old_files if path not in files]
        decks = sorted(
            {old_files[p][1] for p in (*todo, *left) if p in old_files and old_files[p][1]}
        )
        steps = len(todo) + 1
        tell(0, steps)
        removed = conn.execute(
            "UPDATE cards SET removed = 1 WHERE removed = 0 AND (rowid > ? OR deck IN "
            f"(SELECT value FROM json_each(?))) AND id NOT IN (SELECT id FROM ({_LIVE}))"
            if len(decks) > 64  # (many: the live ids' list once)
            else "UPDATE cards SET removed = 1 WHERE removed = 0 AND (rowid > ? OR deck IN "
            "(SELECT value FROM json_each(?))) AND NOT EXISTS (SELECT 1 FROM deck_cards dc "
            "JOIN deck_files f ON f.fid = dc.key >> 32 WHERE dc.id = cards.id "
            "AND f.ord IS NOT NULL AND +dc.dup = 0)",
            (record["rowid"], json.dumps(decks)),
        ).rowcount
    restored = changed = 0
    for i, path in enumerate(todo):
        tell(i + 1, steps)
        r, c = _match_file(conn, files[path][0])
        restored, changed = restored + r, changed + c
    (rowid,) = conn.execute("SELECT coalesce(max(rowid), 0) FROM cards").fetchone()
    new = {
        "key": key,
        "format": format_key,
        "files": {path: [sha, deck] for path, (_, sha, deck) in files.items()},
        "dups": sorted(dups),
        "rowid": rowid,
    }
    conn.execute(
        "INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET "
        "value = excluded.value",
        (RECORD_KEY, json.dumps(new)),
    )
    return {
        "changed": changed,
        "removed": removed,
        "restored": restored,
        "files": len(files) if whole else len(todo),
    }


def _record(conn: sqlite3.Connection) -> dict[str, Any] | None:
    row = conn.execute("SELECT value FROM meta WHERE key = ?", (RECORD_KEY,)).fetchone()
    if row is None:
        return None
    try:
        record = json.loads(row[0])
    except ValueError:
        return None
    ok = isinstance(record, dict) and all(
        k in record for k in ("key", "format", "files", "dups", "rowid")
    )
    return record if ok else None
