"""Every screen of the app, named once: the app opens screens by these names, the help screen
(`?`) lists the keys of each screen in this order, and the command palette offers the screens
that have a command. A screen class that is not here fails tests/test_architecture.py; one
here without a help section says why (``why``), so a forgotten help entry fails too.

Screens are named by module and class, not imported: the app imports a screen when it is
first opened (the start-up stays light). Textual's ``SCREENS`` would keep one instance of each
named screen alive after it is closed (stats would show the numbers of its first opening);
prep builds a fresh one each time, so the registry is ours, read by all three.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import import_module
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from textual.screen import Screen


@dataclass(frozen=True)
class ScreenSpec:
    """One screen: ``name`` (what the app opens it by), where its class lives, its section in
    help (``help``: the title; None with ``why`` when it has none) and its command in the
    palette (``command``: title and help; None when it is reached otherwise)."""

    name: str
    module: str
    cls: str
    help: str | None = None
    why: str = ""  # why the screen has no section in help
    command: tuple[str, str] | None = None
    needs_store: bool = False  # opened only once the database is open
    single: bool = True  # never opened over itself

    def load(self) -> type[Screen]:
        """The screen's class (its module imported now)."""
        return getattr(import_module(self.module), self.cls)


_S = "prep.tui.screens."

# In help's order (after "Everywhere", the app's own keys).
SCREENS: tuple[ScreenSpec, ...] = (
    ScreenSpec("home", _S + "home", "HomeScreen", help="Home"),
    ScreenSpec(
        "review", _S + "review", "ReviewScreen", help="Review", single=False
    ),  # opened with today's session
    ScreenSpec("summary", _S + "summary", "SummaryScreen", help="End of session", single=False),
    ScreenSpec("demo", _S + "demo", "DemoScreen", help="Demo", single=False),
    ScreenSpec(
        "demos",
        _S + "demos",
        "DemoListScreen",
        help="Demo list",
        command=("Demos", "Every demo and its last run"),
    ),
    ScreenSpec(
        "stats",
        _S + "stats",
        "StatsScreen",
        help="Stats",
        command=("Statistics", "Reviews, retention, forecast, mastery"),
        needs_store=True,
    ),
    ScreenSpec(
        "cram",
        _S + "cram",
        "CramScreen",
        help="Cram",
        command=("Cram: the 60-second bullets", "Open cram"),
    ),
    ScreenSpec(
        "mock",
        _S + "mock",
        "MockScreen",
        help="Mock interview",
        command=("Mock interview", "Open mock"),
        needs_store=True,
    ),
    ScreenSpec("errors", _S + "errors", "ErrorScreen", help="Deck or database errors"),
    ScreenSpec(
        "help",
        _S + "help",
        "HelpScreen",
        why="help itself: Esc or ? closes it, as its footer says",
        command=("Keys", "Every key, on every screen"),
    ),
    ScreenSpec("confirm", _S + "confirm", "Confirm", help="A yes/no question", single=False),
    ScreenSpec("demo_pick", _S + "demo_pick", "DemoPick", help="Which demo (a card with several)"),
    ScreenSpec("study_more", _S + "study_more", "StudyMore", help="Study more (n)"),
    ScreenSpec(
        "fill", _S + "fill", "FillScreen", why="a progress screen (reading the decks): no keys"
    ),
    ScreenSpec(
        "upgrade",
        _S + "upgrade",
        "UpgradeScreen",
        why="a progress screen (upgrading the database): no keys",
    ),
)

BY_NAME = {spec.name: spec for spec in SCREENS}


def help_sections() -> list[ScreenSpec]:
    """The screens with a section in help, in order."""
    return [spec for spec in SCREENS if spec.help is not None]


def commands() -> list[ScreenSpec]:
    """The screens the command palette opens, in order."""
    return [spec for spec in SCREENS if spec.command is not None]
