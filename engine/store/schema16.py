"""Schema v16: ``demo_runs`` indexed by (name, ran_at).

A demo run that arrives by `prep import` (an export does not carry a run's id) or by a sync
under another device's id is known by its name and time: both look it up with ``name = ? AND
ran_at = ?`` (engine/store/transfer.py ``demo_run_row``, engine/sync/merge.py ``_apply_run``).
v1's index on ``name`` alone found a demo's runs and then read each of them: every run of that
demo, once per run taken in. The index on (name, ran_at) finds the one row, and serves what
``name`` served (each demo's newest run, by name), so it replaces it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from prep.engine.store.schema import UpgradeTracker


def v15_to_v16(db: Any, progress: UpgradeTracker | None = None) -> None:
    conn = db.conn
    conn.execute("DROP INDEX IF EXISTS demo_runs_name")
    conn.execute("CREATE INDEX IF NOT EXISTS demo_runs_name_at ON demo_runs (name, ran_at)")
