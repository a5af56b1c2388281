"""Import a progress export back (`prep import`): read and validate a JSON or CSV export
(engine/transfer/export.py writes them), then merge it into the store.

Importing is all or nothing (one transaction) and idempotent: a review's identity is its id
(the device that made it and its number there, which exports carry; an older export's
reviews have none and are matched by card, time and previous state). A review already held
(by import or sync, even with states a replay rewrote) or undone here is skipped, as is a card state or demo run already stored
unchanged. A review for the same card and time from the same state with different data is a
conflict (a damaged or edited file): the import stops with an error naming the card and
nothing is changed. A card whose history went on both here and in the file (since the export
was made) is merged by `prep sync`'s rules (engine/sync/merge.py): the file's reviews not held
here join this database's log with their own ids, and the card is replayed from the union in
time order. An undo in the file (a tombstone, engine/transfer/clocks.py) removes the review
here too, however it came, and its card is replayed. Marks (suspended, buried, flagged) and
settings are last-writer-wins registers: with their clocks (an export of this prep), the later
one wins, as by a sync; an older export's carry no time, so its marks are added only for cards
with no mark here (a bury that has run out counts as no mark) and its settings taken only
when the database has none saved.

Cost: a card's log here is decoded once per import, not per review (inserting and looking up
per review was quadratic in one card's history: 2,000 reviews of a card took 67 s to import,
134 s to import again; now about 2 s each).

Size: the merge (``import_data``) is here; reading the files is engine/transfer/readers.py,
the field checks engine/transfer/fields.py.
"""

from __future__ import annotations

import json
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from prep.engine.store import Mark, Store
from prep.engine.store.cards import state_from_json
from prep.engine.store.devices import origin_of
from prep.engine.store.reviewlog import Chain
from prep.engine.store.reviews import _review_dict
from prep.engine.store.schema import DEMO_RUN_COLUMNS, REVIEW_COLUMNS_V1, SCHEDULE_COLUMNS
from prep.engine.store.schema14 import catch_up_tally
from prep.engine.study.marks import in_force
from prep.engine.study.present import count
from prep.engine.study.scheduler import Settings
from prep.engine.timeutil import fmt, parse, utcnow
from prep.engine.transfer import clocks
from prep.engine.transfer.export import ExportError
from prep.engine.transfer.fields import _review_key, loads_strict
from prep.engine.transfer.readers import ExportData, Piped, read_csv, read_export, read_json
from prep.engine.transfer.rows import ReviewIds, Rows

__all__ = [
    "ExportData",
    "ImportResult",
    "import_data",
    "import_file",
    "loads_strict",
    "read_csv",
    "read_export",
    "read_json",
]

# --- importing ----------------------------------------------------------------------------


@dataclass
class ImportResult:
    cards_added: int = 0
    cards_updated: int = 0  # stored state was older: the file continues its history
    cards_kept: int = 0  # already stored, same or newer state
    reviews_added: int = 0
    reviews_skipped: int = 0  # already stored
    demo_runs_added: int = 0
    demo_runs_skipped: int = 0
    marks_added: int = 0
    marks_skipped: int = 0  # the same mark already stored
    marks_kept: int = 0  # marked differently here: this database's mark stays
    cards_merged: int = 0  # both histories went on: merged and replayed (as a sync does)
    reviews_undone: int = 0  # held here, undone where the export was made: removed here
    settings: str = "none"  # "imported", "same", "kept" (the database's differ), "none"

    def summary(self) -> str:
        text = f"{count(self.cards_added, 'card state')} added"
        if self.cards_updated:
            text += f", {self.cards_updated} brought up to date"
        text += (
            f", {count(self.reviews_added, 'review')} added, "
            f"{count(self.demo_runs_added, 'demo run')} added"
        )
        if self.marks_added:
            text += f", {count(self.marks_added, 'mark')} added"
        if self.cards_merged:
            text += f"; {count(self.cards_merged, 'card')} with two histories merged"
        if self.reviews_undone:
            text += f"; {count(self.reviews_undone, 'review')} undone (as where it was exported)"
        if self.marks_kept:
            text += f"; {count(self.marks_kept, 'mark')} kept as marked here"
        skipped = self.cards_kept + self.reviews_skipped + self.demo_runs_skipped
        skipped += self.marks_skipped
        if skipped:
            text += f"; {count(skipped, 'row')} already stored (skipped)"
        if self.settings == "imported":
            text += "; settings imported"
        elif self.settings == "kept":
            text += "; settings kept (this database has its own)"
        return text


def _differences(a: dict[str, Any], b: dict[str, Any], keys: Iterable[str]) -> list[str]:
    return [k for k in keys if a.get(k) != b.get(k)]


_REVIEW_FACTS = ("card_id", "reviewed_at", "rating", "duration_ms")  # a review, not its states


# how far after this machine's clock a review in a file may be dated: a review made where the
# clock ran a few hours fast, or stored in local time as if it were UTC (at most 14 hours off),
# still imports; a year-9000 review (a damaged or edited file) would outlive every real one
AHEAD = timedelta(days=1)


def _dated_ahead(data: ExportData, newest: tuple[str, int] | None, limit: datetime) -> str | None:
    """The first time in the file after ``limit`` ("reviews[3]: reviewed_at ..."), or None: a
    review's, a mark's or an undo's clock, the settings' clock (a clock from year 9000 would
    win every later change of the mark or the settings, here and on every synced device)."""
    times: list[tuple[str, str | None]] = []
    if newest is not None:
        times.append((f"reviews[{newest[1]}]: reviewed_at", newest[0]))
    times += [(f"marks[{i}]: at", m.get("at")) for i, m in enumerate(data.marks)]
    times += [(f"undone[{i}]: at", u.get("at")) for i, u in enumerate(data.undone)]
    if data.settings_clock is not None:
        times.append(("settings_clock: at", data.settings_clock.get("at")))
    for where, text in times:
        at = parse(text) if text else None
        if at is not None and at > limit:
            return f"{where} {text}"
    return None


def _check_file(data: ExportData, now: datetime) -> None:
    src = data.source
    seen: set[str] = set()
    for i, c in enumerate(data.cards):
        if c["id"] in seen:
            raise ExportError(f"{src}: cards[{i}]: card {c['id']!r} appears twice")
        seen.add(c["id"])
    ids = data.reviews.ids if isinstance(data.reviews, Rows) else None
    if ids is None:  # (gathered as the file was read, or here)
        ids = ReviewIds(_review_key)
        for i, r in enumerate(data.reviews):
            ids.add(i, r)
    ahead = _dated_ahead(data, ids.newest, now + AHEAD)
    if ahead is not None:
        raise ExportError(
            f"{src}: {ahead} is more than a day after this machine's clock ({fmt(now)}): a "
            "damaged or edited file, or this clock is behind; nothing imported"
        )
    unknown = ids.unknown_card(seen)
    repeat = ids.repeat(data.reviews)
    if unknown is not None and (repeat is None or unknown[0] <= repeat[0]):
        raise ExportError(
            f"{src}: reviews[{unknown[0]}]: card {unknown[1]!r} is reviewed but has no card "
            "state in the export"
        )
    if repeat is not None:
        i, r = repeat
        raise ExportError(
            f"{src}: reviews[{i}]: the same review of card {r['card_id']!r} at "
            f"{r['reviewed_at']} appears twice"
        )
    marked: set[str] = set()
    for i, m in enumerate(data.marks):
        if m["card_id"] in marked:
            raise ExportError(f"{src}: marks[{i}]: card {m['card_id']!r} is marked twice")
        marked.add(m["card_id"])


def _mark(row: dict[str, Any]) -> Mark:
    return Mark(bool(row["suspended"]), parse(row["buried_until"]), bool(row["flagged"]))


def _mark_words(mark: Mark) -> str:
    words = [w for w, on in (("suspended", mark.suspended), ("flagged", mark.flagged)) if on]
    if mark.buried_until is not None:
        words.append(f"buried until {fmt(mark.buried_until)}")
    return ", ".join(words) or "no mark"


_CHAIN_CARDS = 256  # cards whose last state the import keeps while appending their reviews
_LOGGED = 4096  # reviews _Held keeps decoded at most (and one card's, however long)


class _Log:
    """One card's reviews here, as exported: by row id and by key."""

    def __init__(self, store: Store, cid: str) -> None:
        self.by_id: dict[int, dict[str, Any]] = {}
        self.by_key: dict[tuple[str, str, str | None], dict[str, Any]] = {}
        for review, prev_state in store._card_log(cid):
            row = _review_dict(review, prev_state)
            self.by_id[review.id] = row
            self.by_key[_review_key(row)] = row


class _Held:
    """What a first reading of an export's reviews finds held here: per card the file's
    reviews F (those not undone here) and how many of them this database holds (F & H by
    key), |H|, the cards with a review of the file undone here, the reviews skipped, and
    the first conflict (said after the file's own checks, as an import always did)."""

    def __init__(self, store: Store, aliases: Mapping[str, str] | None) -> None:
        self.store, self.aliases = store, aliases or {}
        self.counts: dict[str, list[int]] = {}  # card -> [|F|, |F & H|]
        self.here_n: dict[str, int] = {}  # card -> |H|
        self.undone: set[str] = set()
        self.skipped = 0
        self.conflict: str | None = None
        # the reviews held here of the cards looked at last, decoded once per card (not per
        # review: a card's log is a chain, and decoding it per review was quadratic)
        self.logs: OrderedDict[str, _Log] = OrderedDict()
        self.logged = 0  # reviews in self.logs

    def log(self, cid: str) -> _Log:
        """Card ``cid``'s reviews here, by row id and by key (a few cards' kept at a time)."""
        if cid in self.logs:
            self.logs.move_to_end(cid)
            return self.logs[cid]
        log = _Log(self.store, cid)
        self.logs[cid] = log
        self.logged += len(log.by_id)
        while self.logged > _LOGGED and len(self.logs) > 1:
            self.logged -= len(self.logs.popitem(last=False)[1].by_id)
        return log

    def by_origin(self, device: str, seq: int) -> dict[str, Any] | bool | None:
        """As Store.review_by_origin, the card's log decoded once."""
        found = origin_of(self.store.conn, device, seq)
        if not isinstance(found, tuple):
            return found
        return self.log(found[1]).by_id.get(found[0])

    def add(self, r: dict[str, Any], i: int = 0) -> None:
        store = self.store
        cid = self.aliases.get(r["card_id"], r["card_id"])
        if cid != r["card_id"]:
            r = {**r, "card_id": cid}
        # a review's identity is its id (device, sequence number) where the file gives
        # one: held here (by import or sync) or undone here, it is the same review
        held = None if not r["device"] else self.by_origin(r["device"], r["seq"])
        if held is True:
            self.undone.add(cid)  # its undo reached this database: not again
            self.skipped += 1
            return
        if cid not in self.here_n:  # (a card with no reviews here needs no look per review)
            self.here_n[cid] = len(store.review_keys(cid))
        n = self.counts.setdefault(cid, [0, 0])
        n[0] += 1
        stored = None
        if isinstance(held, dict) and _review_key(held) == _review_key(r):
            n[1] += 1  # (held by its id, and so by its key: no look)
        elif self.here_n[cid]:
            stored = self.log(cid).by_key.get(_review_key(r))
            n[1] += stored is not None
        if isinstance(held, dict):
            # a replay may have rewritten its states (reviews of the card from other
            # devices landed before it); what it was cannot differ
            diff = _differences(held, r, _REVIEW_FACTS)
        elif stored is None:
            return  # new: added by the second reading
        else:
            diff = _differences(stored, r, REVIEW_COLUMNS_V1)
        if diff and self.conflict is None:
            self.conflict = (
                f"conflict: card {cid!r} already has a review at {r['reviewed_at']} with "
                f"different {', '.join(diff)}"
            )
        self.skipped += 1


def import_data(
    store: Store,
    data: ExportData,
    now: datetime | None = None,
    aliases: Mapping[str, str] | None = None,
    held_here: _Held | None = None,
    before_write: Callable[[], object] | None = None,
) -> ImportResult:
    """Import into ``store`` in one transaction: everything, or (on any conflict) nothing.
    ``now`` (default: the clock) tells a bury in force from one that ran out. ``aliases``
    ({merged-away id: kept id}, CachedCollection.aliases): rows naming an old id land on the
    card that kept it, as the store's own progress did (engine/aliases.py). ``before_write``
    (the import's backup) runs once the file is read and checked, in the transaction, before
    its first write: a file refused makes no backup (each would push an older one out)."""
    now = now or utcnow()
    _check_file(data, now)
    if aliases:
        from prep.engine.decks.aliases import map_export

        data = map_export(data, aliases)
    result = ImportResult()
    src = data.source
    # The file's reviews are read twice (Rows read them again from the file): first to find
    # what is held here and, per card, how the file's history and this one compare (_Held;
    # import_file does it as the file is checked), then to add them.
    with store.transaction():
        if held_here is None:
            held_here = _Held(store, aliases)
            for r in data.reviews:
                held_here.add(r)
        if held_here.conflict is not None:
            raise ExportError(f"{src}: {held_here.conflict}; nothing imported")
        if before_write is not None:
            before_write()
        result.reviews_skipped = held_here.skipped
        counts, here_n, undone_here = held_here.counts, held_here.here_n, held_here.undone
        # the file's undos first (as a sync applies them): a card losing a review held here
        # is replayed from the union below, as one whose history went on both sides
        result.reviews_undone, undone_now = clocks.apply_undone(store, data.undone, aliases)
        diverged: dict[str, list[dict[str, Any]]] = {}  # card -> the file's reviews of it
        # the cards whose rows this import writes -> their last review's time (the review whose
        # state the row may be: see ``logged`` below)
        fresh: dict[str, str] = {}
        for card in data.cards:
            cid = card["id"]
            stored = store.card_row(cid)
            here = here_n[cid] if cid in here_n else len(store.review_keys(cid))
            there, both = counts.get(cid, (0, 0))
            if cid in undone_here or cid in undone_now:
                # the file's state counts a review undone here: replayed from the log
                diverged[cid] = []
                continue
            if stored is None:
                if here:
                    raise ExportError(
                        f"{src}: conflict: card {cid!r} has reviews here but no state; "
                        "nothing imported"
                    )
                store.insert_row("cards", card)
                result.cards_added += 1
                if card["last_review"] is not None:
                    fresh[cid] = card["last_review"]
                continue
            diff = _differences(stored, card, SCHEDULE_COLUMNS)
            if not diff:
                result.cards_kept += 1
            elif both == there < here:
                result.cards_kept += 1  # reviewed here since the export: this state is newer
            elif both == here < there:
                # the file continues this card's history: bring its schedule up to date
                store.update_schedule(cid, card)
                result.cards_updated += 1
                if card["last_review"] is not None:
                    fresh[cid] = card["last_review"]
            else:
                diverged[cid] = []  # both went on: merged by the sync's rules below
        chain = Chain()  # where each card's log ends, as reviews are appended
        for r in data.reviews:
            if r["card_id"] in diverged:
                diverged[r["card_id"]].append(r)
                continue
            there, both = counts.get(r["card_id"], (0, 0))
            if both == there:
                continue  # every review of the card in the file is held here (by key)
            if r["device"]:
                if origin_of(store.conn, r["device"], r["seq"]) is not None:
                    continue  # held (by its id) or undone here: counted above
            elif both and store.review_row(*_review_key(r)) is not None:
                continue  # held by its key (an older export's review has no id)
            rid = store.insert_row("reviews", r, chain)
            # the review the card's row in the file follows (its time is the row's last
            # review): the row is marked as its state (``logged``) when it is exactly that,
            # as a rating and a sync mark theirs, so the next rating here stores the state
            # before it as "that review's next", not in full
            if fresh.get(r["card_id"]) == r["reviewed_at"] and _log_newest(store, rid, r):
                del fresh[r["card_id"]]
            result.reviews_added += 1
            last = chain.last  # the cards appended to last are kept (a few: memory is bounded)
            last[r["card_id"]] = last.pop(r["card_id"])
            if len(last) > _CHAIN_CARDS:
                del last[next(iter(last))]
        if diverged:
            from prep.engine.sync.imported import merge_reviews

            result.reviews_added += merge_reviews(store, diverged)
            result.cards_merged = len(diverged.keys() - undone_now)
        if undone_now:
            from prep.engine.sync.merge import replay_cards

            replay_cards(store, undone_now)  # (one merged above is not replayed again)
        for run in data.demo_runs:
            stored = store.demo_run_row(run["name"], run["ran_at"])
            if stored is not None:
                diff = _differences(stored, run, DEMO_RUN_COLUMNS)
                if diff:
                    raise ExportError(
                        f"{src}: conflict: demo {run['name']!r} already has a run at {run['ran_at']} "
                        f"with different {', '.join(diff)}; nothing imported"
                    )
                result.demo_runs_skipped += 1
                continue
            store.insert_row("demo_runs", run)
            result.demo_runs_added += 1
        for row in data.marks:
            cid, mark = row["card_id"], _mark(row)
            if row["at"] is not None:  # with its clock: the later one wins (as by a sync)
                before = store.mark(cid)
                if clocks.apply_mark(store, row):
                    taken = store.mark(cid) != before
                    result.marks_added += taken
                    result.marks_skipped += not taken
                elif in_force(before, now) == in_force(mark, now):
                    result.marks_skipped += 1
                else:
                    result.marks_kept += 1  # this database's was set later
                continue
            if mark == Mark():
                continue  # marks nothing (an export never holds one)
            mark_here = store.mark(cid)
            if mark_here == mark:
                result.marks_skipped += 1
            elif in_force(mark_here, now) == Mark():  # (a bury that ran out is no mark)
                store.set_mark(cid, mark)
                result.marks_added += 1
            elif in_force(mark_here, now) == in_force(mark, now):
                result.marks_skipped += 1  # they differ only in a bury that ran out
            else:
                # marked differently: a mark is last-writer-wins, and an export's marks carry
                # no time to win with, so this database's (made here, since) stays
                result.marks_kept += 1
        if data.settings is not None:
            saved = store.saved_settings()
            same = saved is not None and Settings.from_dict(saved).to_dict() == data.settings
            if data.settings_clock is not None:  # the later settings win (as by a sync)
                taken = clocks.apply_settings(store, data.settings, data.settings_clock)
                result.settings = "same" if same else "imported" if taken else "kept"
            elif saved is None:
                store.set_meta("settings", json.dumps(data.settings))
                result.settings = "imported"
            elif Settings.from_dict(saved).to_dict() == data.settings:
                result.settings = "same"
            else:
                result.settings = "kept"
        catch_up_tally(store.conn)  # many reviews taken in: the counts' tally catches up
    return result


def _log_newest(store: Store, rid: int | None, review: dict[str, Any]) -> bool:
    """The card's row marked as the state after ``review`` (just appended as row ``rid``) when
    it is that review's ``next`` exactly and the review is the card's newest
    (Store.log_if_newest)."""
    state = state_from_json(review["next"])
    return (
        rid is not None and state is not None and store.log_if_newest(review["card_id"], rid, state)
    )


def import_file(
    store: Store,
    path: Path | Piped,
    aliases: Mapping[str, str] | None = None,
    now: datetime | None = None,
    before_write: Callable[[], object] | None = None,
) -> ImportResult:
    """Import the export at ``path``: its reviews are read twice, checked (and compared with
    what is held here) in the first reading, merged in the second; nothing is held per review.
    ``now``: this machine's clock (a review dated over a day after it is refused);
    ``before_write``: as import_data's."""
    held: list[_Held] = []

    def watch() -> Callable[[dict[str, Any], int], None]:
        held[:] = [_Held(store, aliases)]  # (a "reviews" key given twice: the last wins)
        return held[0].add

    with store.transaction():
        data = read_export(path if isinstance(path, Piped) else Path(path), watch)
        return import_data(
            store,
            data,
            now=now,
            aliases=aliases,
            held_here=held[0] if held else None,
            before_write=before_write,
        )
