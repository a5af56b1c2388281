"""Recording a demo run: the one place a `Report` becomes a row of the progress database.

Demos know nothing of the database (they return a Report); `prep demo` records the report it
got back and the TUI's demo screen records the one it read from the subprocess's JSON.
"""

from __future__ import annotations

from datetime import datetime

from prep.demos.report import Report
from prep.engine.store import Store


def record_run(store: Store, report: Report, *, ran_at: datetime | None = None) -> int:
    """Append ``report`` to the demo runs (its full JSON kept as the metrics); returns the row
    id. Raises StoreError when the database refuses."""
    return store.record_demo_run(
        name=report.name,
        device=report.device or "unknown",
        device_name=report.device_name or None,
        dtype=report.dtype or None,
        scale=report.scale or None,
        seed=report.seed,
        passed=report.passed,
        seconds=report.seconds,
        metrics=report.to_dict(),
        ran_at=ran_at,
    )
