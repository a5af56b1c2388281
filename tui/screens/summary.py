"""End of session: cards reviewed, again-rate, time, and what is due next."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.widgets import Header

from prep.engine.store import StoreError
from prep.engine.study.present import (
    REVIEW_LIMIT_REACHED,
    coming_text,
    count,
    duration_text,
    percent,
    spoken_interval,
)
from prep.engine.study.scheduler import RATING_NAMES, Rating
from prep.engine.study.session import ReviewSession
from prep.engine.study.takein import held_due
from prep.tui.base import PrepScreen
from prep.tui.widgets.footer import Footer
from prep.tui.widgets.text import Static


class SummaryScreen(PrepScreen):
    DEFAULT_CSS = """
    SummaryScreen #summary-box {
        padding: 1 2;
    }
    """
    BINDINGS = [
        Binding("enter", "home(True)", "Home", tooltip="Back to home"),
        Binding(
            "enter",
            "start_day",
            "Start",
            tooltip="A new study day began: start its session",
        ),  # (offered once the study day rolled over with cards to study: study_day_changed)
        Binding("escape", "home", "Home", show=False, tooltip="Back to home"),
        Binding("u", "undo", "Undo", tooltip="Undo the last rating and go back to its card"),
        Binding(
            "u",
            "nothing_to_undo",
            "Undo",
            show=False,
            tooltip="Undo the last rating and go back to its card",
        ),  # (says so: never nothing)
        Binding("s", "app.stats", "Stats", tooltip="Statistics"),
        Binding("n", "app.study_more", "Study more", tooltip="More new cards, or review ahead"),
    ]

    def __init__(self, session: ReviewSession) -> None:
        super().__init__()
        self.session = session
        # the new study day's (new, learning, due), when it rolled over (4 am) with this
        # summary on screen and has cards: offered, Enter starts them
        self.new_day: tuple[int, int, int] | None = None

    def compose(self) -> ComposeResult:
        yield Header()
        with Vertical(id="summary-box"):
            yield Static(id="summary")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#summary", Static).update(self.summary_text())

    def summary_text(self) -> Text:
        try:
            s = self.session.summary()
            # cards due now that this session's limit (--limit) left for later
            held = self.session.held_back and held_due(self.session)
        except StoreError as exc:
            return Text(f"Cannot read the summary: {exc}", style="bold red")
        text = Text()
        if self.new_day is not None:
            new, learning, due = self.new_day
            text.append(
                f"A new study day has begun: new {new} · learning {learning} · due {due}. "
                "Enter starts them.\n\n",
                style="bold",
            )
        if s["reviewed"] == 0 and self.new_day is not None:
            text.append("Yesterday's session: nothing was reviewed.\n\n")
        elif s["reviewed"] == 0:
            text.append("Nothing due right now.\n\n", style="bold")
        else:
            text.append("Session complete.\n\n", style="bold")
            cards = len(set(self.session.done))
            text.append(f"Reviews          {s['reviewed']}")
            # a learning card comes back within the session: reviews can outnumber cards
            text.append(f"  ({count(cards, 'card')})\n", style="dim")
            text.append(f"Again-rate       {percent(s['again_rate'])}  ")
            counts = self.session.stats.ratings
            text.append(
                "(" + ", ".join(f"{counts[int(r)]} {RATING_NAMES[r]}" for r in Rating) + ")\n",
                style="dim",
            )
            text.append(f"Time             {duration_text(s['seconds'])}\n\n")
        waiting = self.session.waiting
        if waiting is not None:
            wait = spoken_interval(waiting - self.session.clock())
            ahead = self.session.learn_ahead.total_seconds() // 60
            text.append(f"A learning card comes back in {wait}", style="bold")
            if waiting - self.session.clock() > self.session.learn_ahead:
                text.append(f" (more than the {ahead:.0f}-minute learn-ahead limit away);")
            else:  # a step on the next study day: due from its rollover, never early
                text.append(" (from the next study day's rollover);")
            text.append(" start again from home then.\n")
        if self.session.held_back:
            text.append(
                f"This session's limit is reached: {count(self.session.held_back, 'more card')} "
                "of today's queue wait (Enter goes home; Enter there starts the next).\n",
                style="bold",
            )
        reasons = self.prep.limit_reasons()
        for reason in reasons:
            text.append(reason + "\n", style="bold")
        if reasons:
            text.append("n studies more: more new cards today, or review ahead.\n\n")
        if s["next_due"] is not None:
            wait = spoken_interval(s["next_due"] - self.session.clock())
            if held or any(reason.startswith(REVIEW_LIMIT_REACHED) for reason in reasons):
                # reviews are due now, held back by the daily limit or this session's (--limit):
                # "next due in 2 days" was untrue
                text.append(f"Past those held back, the next card comes due in {wait}; ")
            else:
                text.append(f"Next card due in {wait}; ")
            text.append(f"{coming_text(s['due_by_tomorrow'])}.\n")
        else:
            text.append("No reviews scheduled yet.\n")
        undo = "   u: undo the last rating" if self.session.undoable else ""
        keys = "Enter: start   Esc: home" if self.new_day is not None else "Enter or Esc: home"
        text.append(f"\n{keys}{undo}   n: study more   s: stats   q: quit", style="dim")
        return text

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        # the footer offers undo only when this session has a rating to undo
        if action in ("undo", "nothing_to_undo"):
            return self.session.undoable == (action == "undo")
        if action == "home" and parameters and self.new_day is not None:
            return False  # Enter starts the new day's cards (Esc still goes home)
        if action == "start_day":
            return self.new_day is not None
        return True

    def study_day_changed(self) -> None:
        """The study day rolled over (4 am) with this summary on screen: its lines are read
        again, and the new day's cards, counted as a fresh session counts them, are offered."""
        fresh = self.prep.new_session(self.prep.selected_deck)
        self.new_day = fresh.counts() if fresh.current is not None else None
        self.query_one("#summary", Static).update(self.summary_text())
        self.refresh_bindings()

    def action_start_day(self) -> None:
        self.prep.action_start()  # (today's session on the selected deck, as home's Enter)

    def action_nothing_to_undo(self) -> None:
        from prep.tui.screens.undo import NOTHING_TO_UNDO

        self.notify(NOTHING_TO_UNDO)

    def action_home(self, _enter: bool = False) -> None:
        self.prep.go_home()

    def action_undo(self) -> None:
        from prep.tui.screens.review import ReviewScreen
        from prep.tui.screens.undo import undo_last_rating

        if undo_last_rating(self, self.session) is not None:
            self.prep.switch_screen(ReviewScreen(self.session))
