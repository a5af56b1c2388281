"""The sync's status line: the last sync's summary ("Synced 09:12: sent 3 reviews, received 12
from laptop, 4 cards rescheduled"), above the footer of home and the review screen, staying
until the next sync says otherwise (a notification goes away; this line does not). Hidden
while there is nothing to say (no sync_dir, or no sync yet)."""

from __future__ import annotations

from typing import Any

from prep.tui.widgets.text import Static


class SyncLine(Static):
    DEFAULT_CSS = """
    SyncLine {
        height: 1;
        width: 1fr;
        padding: 0 1;
        color: $text-muted;
        display: none;
    }
    SyncLine.-shown { display: block; }
    SyncLine.-warning { color: $warning; }
    """

    def on_mount(self) -> None:
        syncer: Any = getattr(self.app, "syncer", None)
        if syncer is not None and syncer.status is not None:
            self.show(*syncer.status)

    def show(self, line: str, warning: bool = False) -> None:
        self.update(line)
        self.set_class(bool(line), "-shown")
        self.set_class(warning, "-warning")
