"""The store: progress in SQLite (see core.py)."""

from prep.engine.store.core import (
    SCHEMA_VERSION,
    Mark,
    Review,
    Store,
    StoreError,
    resolve_db_path,
    state_from_json,
    state_to_json,
)

__all__ = [
    "SCHEMA_VERSION",
    "Mark",
    "Review",
    "Store",
    "StoreError",
    "resolve_db_path",
    "state_from_json",
    "state_to_json",
]
