"""`prep export --format json`, written as it is read: the review log, the card states, the
demo runs and the undos go out row by row, so the memory an export needs does not grow with
the log (the import streams too: engine/transfer/jsonstream.py). What is held: one state per
card (the log is a chain), the marks and the scheduler parameters used.

The bytes are exactly ``json.dumps(document, indent=1, ensure_ascii=False, allow_nan=False)``
plus a newline (engine/transfer/export.py describes the document), but for the control
characters that leaves raw (DEL and the C1 controls: U+009B is a CSI a terminal obeys, and an
import may bring one), written as JSON escapes: the same value, safe where ``-o -`` goes to a
terminal. Each value is encoded by the same encoder and indented to its depth (a JSON text holds
no raw newline, so indenting is adding spaces after each one), and a list is opened, separated
and closed as the encoder does it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from datetime import datetime
from typing import Any, BinaryIO

from prep.engine.store import Store
from prep.engine.timeutil import fmt
from prep.engine.transfer import clocks
from prep.engine.transfer.export import FORMAT, VERSION, Counts, _finite, counted

_ENCODER = json.JSONEncoder(indent=1, ensure_ascii=False, allow_nan=False)
# the control characters json.dumps(ensure_ascii=False) leaves raw (it escapes U+0000-U+001F)
_RAW_CONTROLS = {c: f"\\u{c:04x}" for c in (0x7F, *range(0x80, 0xA0))}


def json_safe(text: str) -> str:
    """JSON text (``ensure_ascii=False``) with DEL and the C1 controls written as JSON
    escapes: the same JSON value, never a control sequence on a terminal."""
    return text.translate(_RAW_CONTROLS)


_CHUNK = 1 << 20  # bytes gathered before a write


class _Out:
    def __init__(self, out: BinaryIO) -> None:
        self.out, self.parts, self.size = out, list[str](), 0

    def put(self, text: str) -> None:
        self.parts.append(text)
        self.size += len(text)
        if self.size >= _CHUNK:
            self.flush()

    def flush(self) -> None:
        self.out.write(json_safe("".join(self.parts)).encode("utf-8"))
        self.parts, self.size = [], 0


def _encode(value: Any, depth: int) -> str:
    """``value`` as the encoder writes it at ``depth`` levels in."""
    return _ENCODER.encode(_finite(value)).replace("\n", "\n" + " " * depth)


def write_json(store: Store, now: datetime, out: BinaryIO, counts: Counts | None = None) -> None:
    """Write the JSON export of ``store`` to ``out``, read in one read transaction; ``counts``
    (when given) gets the rows written per part (export.counted)."""
    w = _Out(out)
    first = True

    def key(name: str) -> None:
        nonlocal first
        w.put(("{\n " if first else ",\n ") + _ENCODER.encode(name) + ": ")
        first = False

    def value(name: str, v: Any) -> None:
        key(name)
        w.put(_encode(v, 1))

    def rows(name: str, items: Iterable[dict[str, Any]]) -> None:
        key(name)
        opened = False
        for item in counted(counts, name, items):
            w.put(",\n  " if opened else "[\n  ")
            w.put(_encode(item, 2))
            opened = True
        w.put("\n ]" if opened else "[]")

    with clocks.read_transaction(store):
        settings = store.saved_settings()
        value("format", FORMAT)
        value("version", VERSION)
        value("exported_at", fmt(now))
        value("settings", settings)
        if counts is not None:
            counts["settings"] = int(settings is not None)
        rows("cards", store.export_cards())
        used: set[int] = set()
        rows("reviews", store.export_reviews(used))
        value("params", store.export_params(used))
        rows("demo_runs", store.export_runs())
        value("marks", list(counted(counts, "marks", clocks.marks(store, store.mark_rows()))))
        value("settings_clock", clocks.settings_clock(store, settings))
        rows("undone", clocks.undone(store))
    w.put("\n}\n")
    w.flush()
