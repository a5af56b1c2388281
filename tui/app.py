"""The Textual app: `prep` with no arguments (and `prep quiz`) opens it.

The app owns the progress database (one connection, used only on the event loop's thread),
the loaded collection and the clock; screens (tui/base.py's PrepScreen) reach them through
``self.prep``, the app typed as PrepApp. Every rating
is committed by the engine the moment it is made, so quitting at any point loses nothing.

It never imports torch: demos run in a subprocess (``demo_command``) or the long-lived demo
worker (tui/worker.py, shared with grading), whose output is streamed into the demo screen.

The start-up sequence (boot: the database opened or upgraded, the first fill of the deck
cache, the decks loaded; the first frame and the work that waits for it: heartbeat, sync,
the demo worker's warm-up, the collector's freeze) is tui/startup.py's ``Startup``, mixed in
here; this module keeps what the screens share once the app runs.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import socket
import sys
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from textual.app import App, SystemCommand
from textual.binding import Binding
from textual.screen import Screen
from textual.timer import Timer

from prep.engine.decks import deckcache
from prep.engine.decks.deck import ParsedDecks
from prep.engine.store import Store, StoreError
from prep.engine.study.scheduler import Scheduler, Settings
from prep.engine.study.session import (  # DeckCounts: home's rows (re-exported for the screens)
    DeckCounts,
    Limits,
    ReviewSession,
    add_new_today,
    build_queue,
    deck_counts,
    limits_today,
    review_ahead_ids,
)
from prep.engine.timeutil import Clock, study_day_start, utcnow
from prep.tui.clicktime import ClickTime
from prep.tui.closing import CloseAfterMount, quit_on_terminate
from prep.tui.short import ShortTerminal
from prep.tui.startup import Startup
from prep.tui.themes import ThemeMemory, first_theme, pick_theme  # noqa: F401 (pick_theme: re-exported)

if TYPE_CHECKING:
    from prep.engine.decks.changed import Scan
    from prep.engine.study.collection import Cards
    from prep.engine.study.mock import MockInterview
    from prep.tui.grading import Grading
    from prep.tui.worker import WorkerClient

DemoCommand = Callable[[str], list[str]]


def default_demo_command(name: str) -> list[str]:
    """The subprocess that runs one demo and prints its report as one JSON object."""
    return [sys.executable, "-m", "prep.demos", name, "--json"]


def demo_infos() -> dict[str, str]:
    """Demo name -> claim, from the torch-free registry."""
    from prep.demos.registry import DEMOS

    return {name: info.claim for name, info in DEMOS.items()}


F1_HELP = "Every key (F1 from inside a text box too, where ? is typed)"


class PrepApp(Startup, CloseAfterMount, ClickTime, ShortTerminal, App[int]):
    """prep's terminal app.

    Everything that makes a run nondeterministic is injectable, so tests and snapshots can fix
    it: ``store`` (else opened from ``db``), ``collection`` (else loaded from the bundled
    decks plus ``questions``), ``clock``, ``scheduler`` (tests turn fuzzing off) and
    ``demo_command`` (tests point it at a tiny script) and ``demos`` (name -> claim; default:
    the registry).
    """

    # how often the open app looks whether the study day rolled over (4 am): one clock read
    # and a comparison; the screens read today's numbers again only when it did
    DAY_CHECK_S = 10.0

    TITLE = "prep"
    SUB_TITLE = "W_O interview prep"
    CSS_PATH = Path(__file__).with_name("app.tcss")  # absolute: subclasses live elsewhere
    # One convention on every screen: Esc goes back one screen (it closes help, stops a demo),
    # q quits prep from anywhere (every rating is already saved), and so does ctrl+c.
    BINDINGS = [
        Binding("q", "quit", "Quit", tooltip="Quit prep from any screen (every rating is saved)"),
        Binding("question_mark", "help", "Help", tooltip="Every key"),
        # F1 opens help too, from inside a text box (the mock's answer, a typed answer: ? is a
        # character there); the footer shows it where ? types (``check_action``)
        Binding("f1", "help_in_box", "Help", tooltip=F1_HELP),
        Binding("f1", "help", "Help", show=False, tooltip=F1_HELP),
        Binding(
            "ctrl+p",
            "command_palette",
            "Commands",
            show=False,
            tooltip="Command palette: start, stats, demos, run a demo, theme, reload",
        ),
    ]

    def __init__(
        self,
        *,
        db: str | None = None,
        questions: Sequence[Path] = (),
        deck: str | None = None,
        new: int | None = None,
        limit: int | None = None,
        store: Store | None = None,
        collection: Cards | None = None,
        include_bundled: bool = True,
        clock: Clock = utcnow,
        scheduler: Scheduler | None = None,
        demo_command: DemoCommand = default_demo_command,
        demos: dict[str, str] | None = None,
        theme: str | None = None,
        review_first: bool = False,
        demo_worker: WorkerClient | None = None,
        grading: Grading | None = None,
        mock_first: MockInterview | None = None,
    ) -> None:
        super().__init__()
        # one long-lived process for every demo and grade of the session (None: a subprocess
        # per demo run, and grading's own worker)
        self.demo_worker = demo_worker
        self.review_first = review_first
        self.mock_first = mock_first  # `prep mock`: open on it, over home (Esc goes home)
        self.db = db
        self.questions = [Path(q) for q in questions]
        self.selected_deck = deck
        self.new_limit = new
        self.limit = limit
        self.store: Store | None = store
        self._upgrading = False  # an older database is being upgraded in a thread
        self._owns_store = store is None
        self._injected_collection = collection
        self._cards: Cards | None = collection  # (the decks, once loaded; see ``collection``)
        self.include_bundled = include_bundled
        self.clock = clock
        self._scheduler = scheduler
        self._scheduler_settings: Settings | None = None  # saved settings it was last checked on
        self.demo_command = demo_command
        self.demos: dict[str, str] = demo_infos() if demos is None else demos
        self._theme_problem = first_theme(self, theme)  # (an unknown $PREP_THEME: said)
        self.theme_memory = ThemeMemory(theme)  # the theme last picked, once the db is open
        if self._theme_problem is not None:
            self.theme_memory.fixed = False  # (the pick kept here shows instead)
        self.instance = f"{socket.gethostname()}:{os.getpid()}:{id(self):x}"
        self._told_others = False
        self._told_clock = False  # reviews dated after now said (once: tell_clock_behind)
        self._heartbeat: Timer | None = None
        self._day_end: datetime | None = None  # the end of the study day the screens count
        self._filled = False  # the deck cache's first fill ran in a thread this session
        # what waits for the first frame (see after_first_frame); None once it is drawn
        self._first_frame: list[Callable[[], object]] | None = []
        self._scan: Scan | None = None  # (startup.py: the deck files found before the load)
        # typed answers: the model worker, started the first time an answer is typed
        self._grading = grading  # (None: built when first asked for, off the first card's way)

        from prep.tui.appsync import AppSync

        self.syncer = AppSync(self)  # `prep config sync_dir DIR`: syncs in the background

    @property
    def collection(self) -> Cards:
        """The loaded decks; before they are loaded (a database being upgraded), none: an
        empty collection, made only if something asks (it costs an in-memory database)."""
        if self._cards is None:
            self._cards = deckcache.from_parsed(ParsedDecks())
        return self._cards

    @collection.setter
    def collection(self, value: Cards) -> None:
        self._cards = value

    # --- start-up and reload ------------------------------------------------------------

    def on_mount(self) -> None:
        # after the mount's batch update: a screen pushed inside it is drawn once in the batch
        # (a frame Textual drops) and then again in parts; pushed after it, its first frame is
        # the whole card
        self.call_later(self.boot)
        self._day_end = study_day_start(self.now(), 1)
        self.after_first_frame(lambda: self.set_interval(self.DAY_CHECK_S, self.check_study_day))
        quit_on_terminate(self)  # (kill PID: quits as q does, the terminal given back)
        if self._theme_problem is not None:
            self.notify(self._theme_problem, title="Theme", severity="warning", timeout=12)

    def _show(self, screen: Screen) -> None:
        """Replace whatever is on the stack above the default screen with ``screen``."""
        while len(self.screen_stack) > 1:
            self.pop_screen()
        self.push_screen(screen)

    def check_study_day(self) -> None:
        """When the study day rolled over (4 am) since the last look, every open screen reads
        today's numbers again (``study_day_changed``: home's counts, the review bar, stats, a
        finished session's summary), as a fresh session would count them, with no key pressed
        (Anki refreshes its deck list so). Until it did: a clock read, no statement."""
        now = self.now()
        if self._day_end is None or now < self._day_end or self.store is None:
            return
        self._day_end = study_day_start(now, 1)
        from prep.tui.base import PrepScreen

        for screen in list(self.screen_stack):
            if isinstance(screen, PrepScreen):
                with contextlib.suppress(StoreError):  # (each screen says a read that failed)
                    screen.study_day_changed()

    def action_reload(self) -> None:
        """Reload the decks from disk (after fixing an error) and go home."""
        self.unless_typing_kept(self.boot)

    def on_unmount(self) -> None:
        if self.demo_worker is not None:
            self.demo_worker.close()
        if self._grading is not None:
            self._grading.close()
        if self.store is not None:
            self.syncer.on_quit()
        if self.store is not None and self._heartbeat is not None:  # (announced: a row to drop)
            with contextlib.suppress(StoreError):
                self.store.depart(self.instance)
        if self.store is not None and self._owns_store:
            self.store.close()

    # --- what screens share -------------------------------------------------------------

    @property
    def grading(self) -> Grading:
        """Typed answers' grading; one worker: it shares the demos' process and its MiniLM."""
        if self._grading is None:
            from prep.tui.grading import Grading

            self._grading = Grading(self.demo_worker)
        return self._grading

    @property
    def scheduler(self) -> Scheduler:
        """The scheduler on the saved settings: rebuilt (keeping its fuzzing and seed) when
        they changed since it was last asked for (`prep config` or `prep optimize` in another
        terminal while the app is open)."""
        assert self.store is not None
        saved = self.store.settings()
        if self._scheduler is None:
            self._scheduler = Scheduler(saved)
        elif self._scheduler_settings is not None and saved != self._scheduler_settings:
            self._scheduler = dataclasses.replace(self._scheduler, settings=saved)
        self._scheduler_settings = saved
        return self._scheduler

    def now(self) -> datetime:
        return self.clock()

    def deck_counts(self) -> list[DeckCounts]:
        """New / learning / due per deck, as today's session would serve them; the first row
        is all decks together (grouped counts in SQL, see session.deck_counts)."""
        assert self.store is not None
        rows = deck_counts(self.store, self.collection, self.now(), new_limit=self.new_limit)
        for error in self.collection.take_new_errors():  # (a deck file added: its refresh)
            self.notify(str(error), title="Deck error", severity="error", timeout=10)
        return rows

    def today(self) -> dict[str, int]:
        """Reviews today and the streak, for the home screen."""
        assert self.store is not None
        from prep.engine.study.stats import today

        return today(self.store, self.now())

    def limits(self, deck: str | None) -> Limits:
        """Today's limits for ``deck`` and what they hold back (for "limit reached" lines)."""
        assert self.store is not None
        now = self.now()
        queue = build_queue(self.store, self.collection, now, deck=deck, new_limit=self.new_limit)
        return limits_today(self.store, self.collection, now, queue, deck)

    def limit_reasons(self, shown: str = "") -> list[str]:
        """The daily limits holding cards back for the selected deck, one line each ([] when
        none, or when the database cannot be read: the screens report that themselves).
        ``shown``: the plan's line the screen says above them (a limit it says is not repeated)."""
        from prep.engine.study.present import NEW_LIMIT_CAPS, count, limit_lines

        try:
            limits = self.limits(self.selected_deck)
        except StoreError:
            return []
        lines = limit_lines(limits, shown)
        if self.new_limit is not None:  # --new N serves N, whatever the day's limit caps
            lines = [line for line in lines if not line.startswith(NEW_LIMIT_CAPS)]
        if self.new_limit is not None and limits.new_waiting > 0:
            # `--new N` on the command line: the day's setting does not apply to this run
            lines.append(
                f"--new {self.new_limit} is in force for this run; "
                f"{count(limits.new_waiting, 'unseen card')} wait."
            )
        return lines

    def action_study_more(self) -> None:
        """Anki's custom study: more new cards today, or review cards due tomorrow now."""
        from prep.tui.screens.review import ReviewScreen
        from prep.tui.screens.study_more import AHEAD_DAYS, EXTRA_NEW, StudyMore

        if self.store is None:
            return
        deck = self.selected_deck

        def read() -> tuple[Limits, list[str]]:  # (again at 4 am while the dialog is open)
            assert self.store is not None
            ahead = review_ahead_ids(self.store, self.collection, self.now(), AHEAD_DAYS, deck)
            return self.limits(deck), ahead

        try:
            dialog = StudyMore(read)
        except StoreError as exc:
            self.notify(f"Cannot read progress: {exc}", severity="error", timeout=8)
            return

        def chosen(choice: str | None) -> None:
            assert self.store is not None
            limits, ahead = dialog.limits, dialog.ahead  # (what the dialog said when chosen)
            if choice == "new":
                if limits.new_waiting == 0 and not limits.new_reached:
                    self.notify("No unseen cards wait in this deck.")
                    return

                def more_now() -> None:  # (saved only once a typed answer may go: a No adds none)
                    assert self.store is not None
                    try:
                        add_new_today(self.store, self.now(), EXTRA_NEW)
                    except StoreError as exc:
                        self.notify(f"Not saved: {exc}", severity="error", timeout=8)
                        return
                    if self.new_limit is not None:  # `--new N` for this run: N more, as asked
                        self.new_limit += EXTRA_NEW
                    self._start(deck or "")

                self.unless_typing_kept(more_now)
            elif choice == "ahead":
                if not ahead:
                    self.notify(f"No card is due in the next {AHEAD_DAYS} days.")
                    return
                session = ReviewSession(
                    self.store,
                    self.collection,
                    queue=ahead,
                    scheduler=self.scheduler,
                    clock=self.clock,
                )

                def ahead_now() -> None:
                    self._pop_to_home()
                    self.push_screen(ReviewScreen(session))

                self.unless_typing_kept(ahead_now)

        self.push_screen(dialog, chosen)

    def new_session(self, deck: str | None) -> ReviewSession:
        assert self.store is not None
        return ReviewSession(
            self.store,
            self.collection,
            deck=deck,
            new_limit=self.new_limit,
            limit=self.limit,
            scheduler=self.scheduler,
            clock=self.clock,
        )

    # --- actions ------------------------------------------------------------------------

    def action_start(self, deck: str | None = None) -> None:
        """Start today's session (on ``deck``, else the selected deck)."""
        self.unless_typing_kept(lambda: self._start(deck))

    def unless_typing_kept(self, go: Callable[[], object]) -> None:
        """``go`` (which closes the screens above home), at once, or only after a yes when one
        of them holds a typed answer not yet handed in: the palette's commands (start, study
        more, reload) and Esc asked nothing and threw it away, where Esc from the box asks."""
        from prep.tui.base import PrepScreen

        if not any(isinstance(s, PrepScreen) and s.unsaved_typing() for s in self.screen_stack):
            go()
            return
        from prep.tui.screens.confirm import Confirm

        def answered(discard: bool | None) -> None:
            if discard:
                go()

        self.push_screen(Confirm("Discard the answer you typed?"), answered)

    def _start(self, deck: str | None) -> None:
        if self.store is None:
            self.notify("The progress database is not open.", severity="error")
            return
        if deck is not None:
            self.selected_deck = deck or None
        try:
            session = self.new_session(self.selected_deck)
        except StoreError as exc:
            self.notify(f"Cannot start the session: {exc}", severity="error", timeout=8)
            if len(self.screen_stack) <= 1:  # `prep quiz` at start: home, not a blank screen
                self.go_home()
            return
        self._pop_to_home()
        if session.finished:
            from prep.tui.screens.summary import SummaryScreen

            self.push_screen(SummaryScreen(session))
        else:
            from prep.tui.screens.review import ReviewScreen

            self.push_screen(ReviewScreen(session))

    def _pop_to_home(self) -> None:
        """Pop back to the home screen, or to the bottom when `prep quiz` opened on a card
        (home is built only when it is first shown)."""
        while len(self.screen_stack) > 1 and not getattr(self.screen, "is_home", False):
            self.pop_screen()

    def go_home(self) -> None:
        """Show home: the one below when there is one, else a new one (asking first when
        that throws a typed answer away)."""
        self.unless_typing_kept(self._go_home)

    def _go_home(self) -> None:
        self._pop_to_home()
        if not getattr(self.screen, "is_home", False):
            from prep.tui.screens.home import HomeScreen

            self.push_screen(HomeScreen())

    def open_screen(self, name: str, *args: Any, **kwargs: Any) -> None:
        """Open the screen registered as ``name`` (tui/screens/registry.py), built with
        ``args``: never over itself when it is opened once, nor before the database is open
        when it reads progress."""
        from prep.tui.screens import registry as screen_registry

        spec = screen_registry.BY_NAME[name]
        cls = spec.load()
        if spec.needs_store and self.store is None:
            return
        if spec.single and isinstance(self.screen, cls):
            return
        self.push_screen(cls(*args, **kwargs))

    def action_help(self) -> None:
        """Help, opened at the section of the screen you are on."""
        self.open_screen("help", at=type(self.screen).__name__)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """F1 is shown as Help where the focused widget types ``?`` (its other binding, not
        shown, opens help elsewhere)."""
        if action == "help_in_box":
            # the focus of the screen whose footer asks: a modal on top (the command palette)
            # has its own keys, and its text box must not make the screen below show F1 too
            screen = next((s for s in reversed(self.screen_stack) if not s.is_modal), self.screen)
            focused = screen.focused
            return focused is not None and focused.check_consume_key("question_mark", "?")
        return True

    def action_help_in_box(self) -> None:
        self.action_help()

    def action_help_quit(self) -> None:
        """ctrl+c (when no text is selected to copy) quits, as in any terminal program;
        Textual's default only says which key quits."""
        self.exit()

    def action_stats(self) -> None:
        self.open_screen("stats")

    def action_demos(self) -> None:
        self.open_screen("demos")

    def action_run_demo(self, name: str) -> None:
        self.open_screen("demo", name)

    def action_cram(self) -> None:
        self.open_screen("cram")

    def action_mock(self) -> None:
        self.open_screen("mock")

    def notify(self, message: str, *, markup: bool = False, **kwargs: Any) -> None:  # type: ignore[override]
        """A notification shown as it is: its text names cards, decks, files and errors (user
        data), never markup; a screen's notify (which passes markup=True) comes here too."""
        super().notify(message, markup=False, **kwargs)

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        from prep.tui.screens import registry as screen_registry
        from prep.tui.screens.errors import ErrorScreen

        # start-up stopped at an error (the decks', the database's): Reload, or Enter to go on
        # (what boot does after it: the busy timeout, the heartbeat, the cards reconciled);
        # a session or a progress screen from here skipped all that
        # (anywhere below: cram or help opened over the error screen are above it, not past it)
        stopped = any(isinstance(s, ErrorScreen) for s in self.screen_stack)
        if not stopped:
            yield SystemCommand(
                "Start today's session", "Review the cards due now", self.action_start
            )
        for spec in screen_registry.commands():  # the screens, as registered
            assert spec.command is not None
            if stopped and spec.needs_store:
                continue
            title, about = spec.command
            opener = getattr(self, f"action_{spec.name}", None)
            yield SystemCommand(title, about, opener or (lambda n=spec.name: self.open_screen(n)))
        if not stopped:
            yield SystemCommand(
                "Study more", "More new cards today, or review ahead", self.action_study_more
            )
        yield SystemCommand("Reload decks", "Read the deck files again", self.action_reload)
        for name, claim in self.demos.items():
            yield SystemCommand(
                f"Run demo {name}", claim, lambda n=name: self.action_run_demo(n), discover=False
            )
        for command in super().get_system_commands(screen):
            # Textual's own "Keys" (a side panel of the focused widget's keys) would sit
            # beside ours under the same name
            if command.title != "Keys":
                yield command


def run(
    *,
    db: str | None,
    questions: list[Path],
    deck: str | None,
    new: int | None,
    limit: int | None,
    review_first: bool = False,
) -> int:
    """Run the app (blocking); returns the process exit code. ``review_first``: open on
    today's first card (`prep`, `prep quiz`) instead of home (`prep serve`'s page)."""
    from prep.tui.worker import WorkerClient

    app = PrepApp(
        db=db,
        questions=questions,
        deck=deck,
        new=new,
        limit=limit,
        review_first=review_first,
        demo_worker=WorkerClient(),
    )
    result = app.run()
    if app.return_code:
        return app.return_code
    return int(result or 0)
