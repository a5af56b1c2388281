"""The app's daily backup and its sync (when `prep config sync_dir DIR` is set): started in
a thread once the first screen is drawn, it writes this device's journal and reads (and checks) the other
devices' new entries with its own connection, and backs the database up; the entries are
then applied on the app's thread between two cards (never under the card being answered),
and the summary line is shown. On quit, one more sync, in full."""

from __future__ import annotations

import contextlib
import threading
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Callable

    from prep.engine.store import Store


QUIT_WAIT_S = 10.0  # at most, for the thread to stop (a step of the copy: milliseconds)
# a folder that did not answer at start is looked at again at quit, this long at most: a share
# that came back (a laptop resumed) takes the session's ratings; one still hung delays the close
# by this much, not by the look's 30 s
QUIT_LOOK_S = 2.0


class AppSync:
    def __init__(self, app: Any) -> None:
        self.app = app
        self.pending: list[Any] | None = None  # journals read, to apply between cards
        self.sent = 0
        self.forked: str | None = None  # a copy of another database found (sync/fork.py)
        # a file of this device's folder set aside, or not whole yet: nothing sent (stuck.py)
        self.said: list[str] = []
        self.last_line: str | None = None  # the last summary (None: none this session)
        self.status: tuple[str, bool] | None = None  # (line, a warning) the SyncLine shows
        self._lock = threading.Lock()
        self._started = False
        # set when the thread's half is over (read, failed and said, or no folder): what a
        # caller waits on instead of polling ``pending`` for a while
        self.fetched = threading.Event()
        self.quitting = False  # the app is closing: the thread's backup copy stops (q)
        self._thread: threading.Thread | None = None
        self.copying = threading.Event()  # the thread is making a backup copy
        self.unanswered = False  # the folder did not answer at start: a short look at quit

    def folder(self, store: Store | None) -> Path | None:
        if store is None or store.path is None or store.read_only:
            return None
        try:
            where = store.get_meta("sync_dir")
        except Exception:  # noqa: BLE001 - a busy or damaged database: no sync this time
            return None
        return Path(where) if where else None

    def start(self) -> None:
        """Once, after the first screen: the thread's half of a sync."""
        store = self.app.store
        if self._started or store is None or store.path is None or store.read_only:
            return
        self._started = True
        folder = self.folder(store)
        self._thread = threading.Thread(target=self._fetch, args=(store.path, folder), daemon=True)
        self._thread.start()

    def _fetch(self, path: Path, folder: Path | None) -> None:
        try:
            self._read(path, folder)
        finally:
            self.fetched.set()

    def _read(self, path: Path, folder: Path | None) -> None:
        from prep.engine.paths import expand_user
        from prep.engine.store import Store, StoreError, backup
        from prep.engine.sync.run import JournalError, SyncError, read_pending, sync_out
        from prep.engine.sync.watch import unanswered

        def stop() -> bool:
            return self.quitting

        def backed_up(make: Callable[[], object]) -> None:
            self.copying.set()
            try:
                make()
            finally:
                self.copying.clear()

        try:
            with Store.open(path) as store:
                try:
                    backed_up(lambda: backup.daily(store, stop=stop))  # once a day, sync or not
                except backup.BackupError as exc:
                    # said as what it is: "Sync failed" was shown with no sync set up (a
                    # full disk); the sync goes on (its own backup says if it cannot)
                    if self.quitting:
                        return
                    self.app.call_from_thread(self._say, f"Daily backup not made: {exc}", True)
                if folder is None:
                    return
                # (a share that hangs: said, not waited on)
                line = unanswered(expand_user(folder))
                if line is not None:
                    self.unanswered = True
                    if not self.quitting:
                        self.app.call_from_thread(self._say, f"Sync failed: {line}", True)
                    return
                out = sync_out(store, folder)
                self.sent, self.forked = out.sent_reviews, out.forked
                self.said = [x for x in (out.set_aside, out.held, out.adopted, *out.refused) if x]
                journals = read_pending(store, folder)
                # (a file refused holds back its device's later files; the rest is applied)
                self.said += [str(exc) for exc in journals.refused]
                if any(j.entries for j in journals):
                    backed_up(lambda: backup.make(store, "sync", stop=stop))
        except (StoreError, SyncError, JournalError, backup.BackupError, OSError) as exc:
            if not self.quitting:  # (quitting: stopped on purpose; the app waits for it)
                self.app.call_from_thread(self._say, f"Sync failed: {exc}", True)
            return
        with self._lock:
            self.pending = journals

    def between_cards(self) -> bool:
        """Apply what the thread read (the app's thread, no card on screen being answered).
        True when that changed which cards are due (the session's queue is then built again:
        ReviewSession.take_in_changes)."""
        with self._lock:
            journals, self.pending = self.pending, None
        if journals is None:
            return False
        from prep.engine.store import StoreError
        from prep.engine.sync.run import SyncResult, apply_journals

        store = self.app.store
        try:
            applied = apply_journals(store, journals)
        except StoreError as exc:
            self._say(f"Sync not applied: {exc}", True)
            return False
        # every line `prep sync` prints before its summary (reviews of a replaced file set
        # aside or held once, another device's file set aside, ...): a warning, shown whole
        # in a notification too; a copy found is said in the line
        warn = [*self.said, *applied.notes]
        summary = SyncResult(sent_reviews=self.sent, applied=applied).summary()
        self.last_line = "; ".join([*([self.forked] if self.forked else []), *warn, summary])
        self._say(f"Synced {datetime.now().strftime('%H:%M')}: {self.last_line}", bool(warn))
        return bool(applied.rescheduled or applied.marks or applied.settings)

    def _say(self, line: str, warning: bool = False) -> None:
        """Show ``line`` in the sync line of every screen open (it stays), and a warning
        as a notification too (a file's name in it escaped: a newline, a byte not UTF-8)."""
        from prep.engine.decks.deck import one_line_safe
        from prep.tui.widgets.syncline import SyncLine

        line = one_line_safe(line)
        self.status = (line, warning)
        for screen in self.app.screen_stack:
            shown = list(screen.query(SyncLine))
            for widget in shown:
                widget.show(line, warning)
            if not shown and getattr(screen, "SYNC_LINE_ON_DEMAND", False):
                # (the review screen mounts its line once there is something to say: one
                # widget less before the first card); it shows ``status`` as it mounts
                screen.mount(SyncLine(), before=screen.query_one("Footer"))
        if warning:
            self.app.notify(line, severity="warning")

    def on_quit(self) -> None:
        """A last sync as the app closes (what this session rated goes out at once)."""
        from prep.engine.store import StoreError, backup
        from prep.engine.sync.run import JournalError, SyncError, sync

        self.quitting = True  # a backup copy of gigabytes in the thread stops between two steps
        if self._thread is not None and self.copying.is_set():  # and removes its half file
            self._thread.join(QUIT_WAIT_S)  # (a killed thread would leave it)
        store = self.app.store
        folder = self.folder(store)
        if folder is None:
            return
        self.between_cards()
        from prep.engine.paths import expand_user
        from prep.engine.sync.watch import unanswered

        look = QUIT_LOOK_S if self.unanswered else None
        if unanswered(expand_user(folder), look) is not None:  # (the app closes; nothing written)
            return
        # (an error: the next `prep sync`, or the next start, says what is wrong)
        with contextlib.suppress(StoreError, SyncError, JournalError, backup.BackupError, OSError):
            sync(store, folder, backup=backup.make)
