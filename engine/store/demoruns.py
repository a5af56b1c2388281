"""Demo runs: each demo run's summary (the demo_runs table).

Part of the one `Store` (engine/store/__init__.py combines the tables' classes).
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from prep.engine.store import devices
from prep.engine.store.core import StoreCore
from prep.engine.store.schema import (
    DEMO_RUN_COLUMNS,
)
from prep.engine.timeutil import fmt, utcnow

_DEMO_RUN_KEYS = ("id", *(c for c in DEMO_RUN_COLUMNS if c != "metrics"))


class DemoRunsStore(StoreCore):
    """The demo_runs table."""

    # --- demo runs ----------------------------------------------------------------------

    def record_demo_run(
        self,
        *,
        name: str,
        device: str,
        passed: bool,
        seconds: float,
        device_name: str | None = None,
        dtype: str | None = None,
        scale: str | None = None,
        seed: int | None = None,
        metrics: dict | None = None,
        ran_at: datetime | None = None,
    ) -> int:
        with self.transaction():
            cur = self.conn.execute(
                "INSERT INTO demo_runs (name, device, device_name, dtype, scale, seed, passed, seconds, metrics, ran_at, dev) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    name,
                    device,
                    device_name,
                    dtype,
                    scale,
                    seed,
                    int(bool(passed)),
                    float(seconds),
                    json.dumps(metrics or {}, default=str),
                    fmt(ran_at or utcnow()),
                    devices.device(self.conn),
                ),
            )
            assert cur.lastrowid is not None
            return cur.lastrowid

    def demo_runs(self, *, latest: bool = False) -> list[dict[str, Any]]:
        """Every demo run, oldest first; with ``latest``, only each demo's newest run, by
        name."""
        where = " WHERE id IN (SELECT max(id) FROM demo_runs GROUP BY name)" if latest else ""
        order = "name" if latest else "id"
        rows = self.conn.execute(
            f"SELECT {', '.join(_DEMO_RUN_KEYS)} FROM demo_runs{where} ORDER BY {order}"
        )
        runs = [dict(zip(_DEMO_RUN_KEYS, r, strict=True)) for r in rows]
        return [run | {"passed": bool(run["passed"])} for run in runs]

    def latest_demo_runs(self) -> dict[str, dict[str, Any]]:
        """Each demo's newest run, by demo name."""
        return {run["name"]: run for run in self.demo_runs(latest=True)}
