"""Start-up of `prep`: the app's start-up sequence (``Startup``, mixed into PrepApp: boot,
the upgrade and the first fill in threads, the first frame and the work that waits for it),
and Python's cyclic garbage collector, which waits for the first frame.

Start-up builds hundreds of thousands of objects that live as long as the process (Textual's
and prep's modules and classes, the app's widgets and styles, the day's cards) and frees few:
the collector's passes over them cost the first card about 60 ms of CPU (measured: ~115
young, ~10 middle and one full collection before the first frame of `prep quiz`). So `run`
(the console script) pauses it; the app resumes it once the first frame is on its way to the
terminal, every other command as it begins. What start-up built is then frozen (moved out of
the collector's sight, as CPython's docs suggest for a program after its start-up), so later
collections, between two answers, do not walk it again.

The console script imports this module for every command: it imports neither textual nor
the engine at its top (``Startup`` imports what it uses when it runs).
"""

from __future__ import annotations

import contextlib
import gc
import os
import threading
from functools import partial
from typing import TYPE_CHECKING

from prep.engine.textsafe import quoted

_paused = False


def pause_gc() -> None:
    """Pause the collector for the start-up (only when it runs: a caller that turned it off
    keeps it off)."""
    global _paused
    if gc.isenabled():
        gc.disable()
        _paused = True


def resume_gc() -> None:
    """Freeze what start-up built and let the collector run again (once; a no-op unless
    `pause_gc` paused it)."""
    global _paused
    if _paused:
        _paused = False
        gc.freeze()
        gc.enable()


# --- the app's start-up sequence (mixed into PrepApp) -----------------------------------

# The app never waits long on another writer's lock: a statement gives up after this, and the
# screen retries on a timer (the screen stays live) and says what is happening.
UI_BUSY_TIMEOUT_MS = 100
# Deck bytes to parse above which the first open shows the fill's progress (the bundled decks,
# about 0.3 MB, parse in well under a second; 100k generated cards are about 40 MB)
FILL_SCREEN_BYTES = 2_000_000
# With sync_dir set, the background sync starts once the first card is on screen (it never
# delays the first card); on home it starts after this many seconds
SYNC_FROM_HOME_S = 2.0

if TYPE_CHECKING:
    from collections.abc import Callable
    from datetime import datetime
    from pathlib import Path

    from textual.app import App
    from textual.screen import Screen
    from textual.timer import Timer

    from prep.engine.decks.changed import Scan
    from prep.engine.decks.fill import Fill
    from prep.engine.store import Store, StoreError
    from prep.engine.store.schema import Upgrade
    from prep.engine.study.collection import Cards
    from prep.engine.study.mock import MockInterview
    from prep.tui.appsync import AppSync
    from prep.tui.screens.fill import FillScreen
    from prep.tui.screens.upgrade import UpgradeScreen
    from prep.tui.themes import ThemeMemory
    from prep.tui.worker import WorkerClient

    _AppBase = App[int]
else:
    _AppBase = object


class _UpgradeStopped(Exception):
    """Raised from the upgrade's progress callback when the app quits: the upgrade's
    transaction rolls back."""


def _alive(instance: str) -> bool:
    """Whether the prep that wrote heartbeat ``instance`` (HOST:PID:...) may still run: on
    this host its process must exist (a killed prep leaves a fresh-looking row behind)."""
    import socket

    host, _, rest = instance.partition(":")
    pid = rest.partition(":")[0]
    if host != socket.gethostname() or not pid.isdigit():
        return True
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # another user's process: it exists
    return True


class Startup(_AppBase):
    """PrepApp's start-up, in the order it happens: ``boot`` (the database opened, upgraded
    in a thread when it is older, the deck cache filled in a thread when much is to be read,
    the decks loaded through the cache, the first screen pushed), then the first frame
    (``post_display_hook``: the collector resumed and frozen, and what waited for it run:
    the heartbeat and sync (``announce``), the demo worker's warm-up (``warm_demo``), the
    answer side's imports). Nothing here delays the first card that it does not need.

    Textual is not imported by this module (the console script imports it for the GC
    pause); the threads are started with ``run_worker``, as ``@work`` would."""

    # set by PrepApp.__init__
    db: str | None
    questions: list[Path]
    include_bundled: bool
    store: Store | None
    demos: dict[str, str]
    demo_worker: WorkerClient | None
    selected_deck: str | None
    review_first: bool
    mock_first: MockInterview | None
    instance: str
    syncer: AppSync
    theme_memory: ThemeMemory
    _upgrading: bool
    _owns_store: bool
    _injected_collection: Cards | None
    _filled: bool
    _told_others: bool
    _told_clock: bool
    _heartbeat: Timer | None
    _first_frame: list[Callable[[], object]] | None
    _scan: Scan | None  # the deck files as _fill_first found them, for the load right after

    if TYPE_CHECKING:  # PrepApp's

        @property
        def collection(self) -> Cards: ...

        @collection.setter
        def collection(self, value: Cards) -> None: ...

        def _show(self, screen: Screen) -> None: ...

        def now(self) -> datetime: ...

        def action_start(self, deck: str | None = None) -> None: ...

    def load_collection(self) -> Cards:
        """The decks, through the deck cache in the database when it is open (only changed
        files are parsed, and progress is reconciled only when the decks changed)."""
        from prep.engine.decks import deckcache

        if self._injected_collection is not None:
            return self._injected_collection
        if self.store is not None:
            scan, self._scan = self._scan, None  # (used once: a reload scans again)
            return deckcache.load(
                self.store,
                self.questions,
                demo_names=sorted(self.demos) if self.demos else None,
                include_bundled=self.include_bundled,
                scan=scan,
            )
        return deckcache.load_collection(
            self.questions,
            demo_names=sorted(self.demos) if self.demos else None,
            include_bundled=self.include_bundled,
        )

    def boot(self, *, ignore_deck_errors: bool = False) -> None:
        """Load the decks, open the database, then show home (or what went wrong)."""
        from prep.engine.store import Store, StoreError

        if self.store is None:
            if self._upgrading:
                return  # the upgrade's thread boots again when it is done
            pending = Store.pending_upgrade(self.db)
            if pending is not None:
                # an older database: upgraded in a thread (a large one takes a while) while
                # a screen shows how far it is; the app opens it once it is done
                from prep.tui.screens.upgrade import UpgradeScreen
                from prep.tui.upgrade import upgrade_room

                short = upgrade_room(self.db, pending[0])  # (room for its backup: asked first)
                if short is not None:
                    from prep.tui.screens.errors import ErrorScreen

                    self._show(ErrorScreen.database(str(short), short.kind))
                    return

                self._upgrading = True
                screen = UpgradeScreen(*pending)
                self._show(screen)
                self._upgrade(screen)
                return
            try:
                self.store = Store.open(self.db)
            except StoreError as exc:
                from prep.tui.screens.errors import ErrorScreen

                self._show(ErrorScreen.database(str(exc), exc.kind))
                return
        self.theme_memory.restore(self, self.store)  # the theme last picked (tui/themes.py)
        if self._fill_first():
            return  # a large first open: the cache fills in a thread, then boot runs again
        self.collection = self.load_collection()  # through the deck cache in the database
        for warning in self.collection.warnings:
            self.notify(str(warning), title="Decks", severity="warning", timeout=8)
        if self.collection.errors and not ignore_deck_errors:
            from prep.tui.screens.errors import ErrorScreen

            self._show(ErrorScreen.deck_errors(self.collection))
            return
        self.store.set_busy_timeout(UI_BUSY_TIMEOUT_MS)  # screens retry instead of freezing
        # the heartbeat is a committed write (a sync to disk): made once the home screen is
        # drawn, not before it
        self.after_first_frame(self.announce)
        self.after_first_frame(self.tell_clock_behind)
        try:
            self.collection.reconcile(self.store)
        except StoreError as exc:
            self.notify(f"Could not update card states: {exc}", severity="warning")
        if self.selected_deck is not None and self.selected_deck not in self.collection.decks:
            self.notify(
                f"No deck named {quoted(self.selected_deck)}; showing all decks.",
                severity="warning",
            )
            self.selected_deck = None
        if self.mock_first is not None:  # `prep mock`: the mock over home, as `m` opens it
            from prep.tui.screens.home import HomeScreen
            from prep.tui.screens.mock import MockScreen

            mock, self.mock_first = self.mock_first, None  # once: a reload goes home
            self._show(HomeScreen())
            self.push_screen(MockScreen(mock=mock))
        elif self.review_first:  # `prep quiz`: home is built when first asked for
            self.review_first = False  # once: a reload goes home
            self.action_start()
        else:
            from prep.tui.screens.home import HomeScreen

            self._show(HomeScreen())

    def _upgrade(self, screen: UpgradeScreen) -> None:
        """Upgrade the database in a thread (``@work(thread=True, exclusive=True,
        group="upgrade")``)."""
        self.run_worker(
            partial(self._upgrade_thread, screen),
            name="_upgrade",
            group="upgrade",
            exclusive=True,
            thread=True,
        )

    def _upgrade_thread(self, screen: UpgradeScreen) -> None:
        """Upgrade the database on this worker's own connection (closed here: the app's
        connection is opened on the event loop's thread afterwards, by boot)."""
        from textual.worker import get_current_worker

        from prep.engine.store import Store, StoreError

        worker = get_current_worker()

        def progress(upgrade: Upgrade) -> None:
            if worker.is_cancelled:  # the app is quitting
                raise _UpgradeStopped  # rolled back: the database stays as it was
            screen.post_message(screen.Progress(upgrade))

        error: StoreError | None = None
        try:

            def say(text: str) -> None:
                screen.post_message(screen.Note(text[0].upper() + text[1:]))

            # (the room asked first, by boot; Store.open makes the backup copy); q stops
            # it between steps (progress) and inside a long statement (stop): rolled back
            Store.open(
                self.db, progress=progress, say=say, stop=lambda: worker.is_cancelled
            ).close()
        except _UpgradeStopped:
            return
        except StoreError as exc:
            if worker.is_cancelled:
                return
            error = exc
        with contextlib.suppress(RuntimeError):  # the app stopped meanwhile
            self.call_from_thread(self._upgraded, error)

    def _fill_first(self) -> bool:
        """A long load (many deck bytes to parse: the first open of a large collection; or
        the work over every card of a large one: the checks across files and the
        reconciliation after an upgrade or an edit, a killed fill's indexes): the load runs
        in a thread, with a screen that shows what it does and how far it is. False: load as
        usual, here (with the deck files as found here: ``_scan``)."""
        from prep.engine.decks import deckcache
        from prep.engine.decks.openwork import open_work
        from prep.engine.store import StoreError

        self._scan = None
        if self._injected_collection is not None or not self._owns_store or self._filled:
            return False
        if self.store is None or self.store.path is None:
            return False
        try:
            scan = deckcache.scan_decks(
                self.store, self.questions, include_bundled=self.include_bundled
            )
            work = open_work(self.store, scan, sorted(self.demos) if self.demos else None)
        except StoreError:
            return False
        if not work.large(FILL_SCREEN_BYTES):
            self._scan = scan  # the load right after uses it
            return False
        from prep.engine.decks.fill import Fill
        from prep.tui.screens.fill import FillScreen

        self._filled = True  # once a session; what the thread left undone loads as usual
        pending = scan.pending if work.parse_bytes == scan.pending.bytes_total else None
        screen = FillScreen(
            pending or Fill(files_total=len(scan.files), bytes_total=work.parse_bytes)
        )
        self._show(screen)
        self._fill(screen, str(self.store.path))
        return True

    def _fill(self, screen: FillScreen, db: str) -> None:
        """Fill the deck cache in a thread (``@work(thread=True, exclusive=True,
        group="fill")``)."""
        self.run_worker(
            partial(self._fill_thread, screen, db),
            name="_fill",
            group="fill",
            exclusive=True,
            thread=True,
        )

    def _fill_thread(self, screen: FillScreen, db: str) -> None:
        """Parse the changed deck files into the cache on this thread's own connection."""
        from textual.worker import get_current_worker

        from prep.engine.decks import deckcache
        from prep.engine.store import StoreError
        from prep.tui import filling

        worker = get_current_worker()

        def progress(fill: Fill) -> None:
            if worker.is_cancelled:  # the app is quitting: the files done so far are kept
                raise _UpgradeStopped
            screen.post_message(screen.Progress(fill))

        def load(store: Store) -> None:
            deckcache.load(
                store,
                self.questions,
                demo_names=sorted(self.demos) if self.demos else None,
                include_bundled=self.include_bundled,
                progress=progress,
                private=False,  # (a busy database is waited for: tui/filling.py)
            )

        try:  # q stops it promptly; another writer is waited for here; an error is shown
            outcome = filling.fill(db, screen, worker, load)
        except _UpgradeStopped:
            return
        if outcome == "stopped":
            return
        with contextlib.suppress(RuntimeError):  # the app stopped meanwhile
            if isinstance(outcome, StoreError):
                self.call_from_thread(self._fill_failed, outcome)
            else:
                self.call_from_thread(self.boot)

    def _fill_failed(self, error: StoreError) -> None:
        """The fill's thread failed (not busy: that one it waits for): said, not redone on
        this thread; r (reload) runs the thread again."""
        from prep.tui.screens.errors import ErrorScreen

        self._filled = False
        self._show(ErrorScreen.database(str(error), error.kind))

    def _upgraded(self, error: StoreError | None) -> None:
        from prep.tui.screens.errors import ErrorScreen

        self._upgrading = False
        if error is not None:
            self._show(ErrorScreen.database(str(error), error.kind))
            return
        self.boot()

    def announce(self) -> None:
        """Say so when another prep has this database open (both can study; each one's undo
        covers only its own ratings), and keep our own heartbeat fresh."""
        from prep.engine.store import StoreError
        from prep.engine.timeutil import utcnow

        if self.store is None:
            return
        try:
            others = [i for i in self.store.announce(self.instance, utcnow()) if _alive(i)]
        except StoreError as exc:
            # the file removed or replaced meanwhile: said now, not at the next rating (each
            # write is refused; what was saved is copied out: engine/store/samefile.py)
            if exc.kind == "replaced" and not getattr(self, "_told_replaced", False):
                self._told_replaced = True
                self.notify(str(exc), title="Database gone", severity="error", timeout=60)
            return  # a read-only or busy database: the screens say so when it matters
        if others and not self._told_others:
            self._told_others = True
            self.notify(
                "Another prep has this database open. Both can study: every rating is kept, "
                "and u undoes only this window's own ratings.",
                title="Open twice",
                severity="warning",
                timeout=12,
            )
        if self._heartbeat is None:
            self._heartbeat = self.set_interval(30, self.announce)
            # with sync_dir set: once the first card is on screen (the review screen starts
            # it), or after a while on home
            self.set_timer(SYNC_FROM_HOME_S, self.syncer.start)

    def tell_clock_behind(self) -> None:
        """Once a run: reviews dated after now (the clock was set back), in one line."""
        from prep.engine.store import StoreError
        from prep.engine.study.clockback import clock_behind

        if self.store is None or self._told_clock:
            return
        self._told_clock = True
        try:
            behind = clock_behind(self.store, self.now())
        except StoreError:
            return
        if behind is not None:
            self.notify(behind.line(), title="Clock", severity="warning", timeout=15)

    def after_first_frame(self, callback: Callable[[], object]) -> None:
        """Run ``callback`` once the first frame has been handed to the terminal (soon, when
        it already has): the heartbeat's synced write, sync, the demo worker and the answer
        side's imports never delay the first card, even on a busy machine, where a timer set
        at mount can fire before the first paint."""
        if self._first_frame is None:
            self.call_later(callback)
        else:
            self._first_frame.append(callback)

    def post_display_hook(self) -> None:
        # Textual calls this after every display; the first one outside its batch update
        # (the app's mount, which pushes the first screen) is the first frame
        if self._first_frame is not None and not self._batch_count:
            resume_gc()  # paused by the console script for the start-up
            waiting, self._first_frame = self._first_frame, None
            for callback in waiting:
                self.call_later(callback)

    def warm_demo(self, name: str) -> None:
        """A card links demo `name`: let the demo worker import torch and load what the demo
        needs in the background, so pressing the key later costs the demo's compute only."""
        if self.demo_worker is not None:
            threading.Thread(target=self.demo_worker.warm, args=(name,), daemon=True).start()
