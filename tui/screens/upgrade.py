"""An older progress database being upgraded before the app can start (Store.open with
``progress``, run in a thread by PrepApp.boot): what is happening, a bar and the time left.
q stops it: the upgrade is one transaction, so the database stays as it was, and the next
start begins it again."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.message import Message
from textual.widgets import Header, ProgressBar

from prep.engine.store.schema import Upgrade
from prep.tui.base import PrepScreen
from prep.tui.upgrade import describe
from prep.tui.widgets.footer import Footer
from prep.tui.widgets.text import Static


class UpgradeScreen(PrepScreen):
    DEFAULT_CSS = """
    UpgradeScreen #upgrade-box {
        padding: 1 2;
        height: auto;
    }
    """

    class Progress(Message):
        """Posted from the upgrading thread (post_message is thread-safe)."""

        def __init__(self, upgrade: Upgrade) -> None:
            super().__init__()
            self.upgrade = upgrade

    class Note(Message):
        """A line from the upgrading thread before the upgrade (its backup copy)."""

        def __init__(self, text: str) -> None:
            super().__init__()
            self.text = text

    def __init__(self, from_version: int, to_version: int) -> None:
        super().__init__()
        self.versions = (from_version, to_version)

    def compose(self) -> ComposeResult:
        old, new = self.versions
        yield Header()
        with Vertical(id="upgrade-box"):
            yield Static(
                Text(
                    f"Upgrading the progress database (schema {old} → {new}) before prep "
                    "starts. This happens once; nothing is lost if it is stopped (q): the "
                    "database stays as it was and the upgrade starts again next time.",
                ),
                id="upgrade-title",
            )
            yield ProgressBar(total=100, show_eta=False, id="upgrade-bar")
            yield Static("", id="upgrade-line")
        yield Footer()

    def on_upgrade_screen_progress(self, message: Progress) -> None:
        u = message.upgrade
        self.query_one("#upgrade-bar", ProgressBar).update(progress=int(u.fraction * 100))
        line = describe(u)
        self.query_one("#upgrade-line", Static).update(line[0].upper() + line[1:])

    def on_upgrade_screen_note(self, message: Note) -> None:
        self.query_one("#upgrade-line", Static).update(Text(message.text))
