"""Review: one card at a time; reveal, rate (1-4, with the interval each gives), undo.

Choice and red-flag cards are picked with a-d first (the pick reveals the answer and suggests a
rating; Enter takes it). A red-flag card shows only the quoted answer first: the learner says
what it gets wrong (in an interview the flaw must be articulated, not recognised), then space
shows the choices. Keys never collide: a-d only pick before the answer is shown, and `r`
runs the linked demo only after. The footer follows the card: it lists the keys that do
something now. Every rating is committed by the engine before the next card is shown; a
rating that cannot be saved (a locked database) is reported and nothing advances.

The screen's states (front, red flag's choices, answer box, revealed, saving) and the keys
valid in each live here, so that check_action can say what each key does now; the widgets
beside them in their own modules: the answer side (choices marked, answer, demo line, rating
bar) in answer_side.py, the typed answer's box in typed_answer.py, the keys held while a rating
saves in held_keys.py, undo's messages in undo.py, the text helpers in review_text.py.
"""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll

from prep.engine.decks.deck import CHOICE_LETTERS, Card
from prep.engine.store import StoreError
from prep.engine.study.scheduler import RATING_NAMES, Outcome, Rating
from prep.engine.study.session import NotCurrentCard, ReviewSession
from prep.tui.base import PrepScreen
from prep.tui.cardtext import card_text, warm_up
from prep.tui.screens.answer_side import AnswerSide
from prep.tui.screens.held_keys import HeldKeys
from prep.tui.screens.review_text import KIND_LABELS
from prep.tui.screens.typed_answer import TypedAnswer
from prep.tui.screens.undo import NOTHING_TO_UNDO, undo_last_rating
from prep.tui.themes import rich_color
from prep.tui.widgets.footer import Footer
from prep.tui.widgets.key_button import KeyButton
from prep.tui.widgets.text import Static

if TYPE_CHECKING:
    from prep.tui.widgets.rating_bar import RatingBar

WARM_UP_SECONDS = 0.3


class ReviewScreen(TypedAnswer, HeldKeys, AnswerSide, PrepScreen):
    RETRY_SECONDS = 10.0  # how long a rating retries while another prep holds the lock
    SYNC_LINE_ON_DEMAND = True  # the sync's line is mounted once it has something to say
    BINDINGS = [
        Binding(
            "space",
            "show_choices",
            "Show choices",
            tooltip="Red flag: once you have said what the answer gets wrong, show the choices",
        ),
        Binding("space", "reveal", "Show answer", tooltip="Show the answer"),
        Binding("space", "take('good')", "Good", tooltip="Once the answer is shown: rate Good"),
        Binding(
            "space",
            "take('suggested')",
            "Take suggestion",
            show=True,
            tooltip="After a pick: take the suggested rating (as Enter does)",
        ),
        Binding(
            "enter",
            "primary",
            "Next",
            show=False,
            tooltip="Show the answer, then take the suggested rating (Good on a recall card)",
        ),
        Binding("1", "rate(1)", "Rate", key_display="1-4", tooltip="Rate Again (forgot)"),
        Binding("2", "rate(2)", "Hard", show=False, tooltip="Rate Hard"),
        Binding("3", "rate(3)", "Good", show=False, tooltip="Rate Good"),
        Binding("4", "rate(4)", "Easy", show=False, tooltip="Rate Easy"),
        # one "a" binding per number of choices, so the footer says a-b, a-c or a-d
        Binding("a", "pick(0, 4)", "Pick", key_display="a-d", tooltip="Pick choice a"),
        Binding("a", "pick(0, 3)", "Pick", key_display="a-c", tooltip="Pick choice a"),
        Binding("a", "pick(0, 2)", "Pick", key_display="a-b", tooltip="Pick choice a"),
        Binding("b", "pick(1)", "Pick b", show=False, tooltip="Pick choice b"),
        Binding("c", "pick(2)", "Pick c", show=False, tooltip="Pick choice c"),
        Binding("d", "pick(3)", "Pick d", show=False, tooltip="Pick choice d (before the answer)"),
        # one meaning per key: a-d only pick (while the answer is hidden); r runs the demo, as
        # r runs it again on the demo screen
        Binding(
            "r",
            "demo",
            "Run demo",
            tooltip="Run the card's linked demo, once the answer is shown (a-d only pick choices)",
        ),
        Binding(
            "t",
            "type_answer",
            "Type answer",
            tooltip="Type your answer before the reveal: it is graded point by point",
        ),
        Binding("u", "undo", "Undo", tooltip="Undo the last rating or mark; its card comes back"),
        # u before anything was rated or marked: not offered, but it says so (never nothing)
        Binding(
            "u",
            "nothing_to_undo",
            "Undo",
            show=False,
            tooltip="Undo the last rating or mark; its card comes back",
        ),
        Binding(
            "at",
            "mark('suspend')",
            "Suspend",
            show=False,
            key_display="@",
            tooltip="Suspend the card: not served until you undo it or `prep unmark` it (Anki's @)",
        ),
        Binding(
            "minus",
            "mark('bury')",
            "Bury",
            show=False,
            key_display="-",
            tooltip="Bury the card until tomorrow (Anki's -)",
        ),
        Binding(
            "f",
            "mark('flag')",
            "Flag",
            show=False,
            tooltip="Flag the card (or unflag it); stats and `prep marks` list the flagged cards",
        ),
        Binding("escape", "home", "Home", tooltip="Back to home (progress is saved)"),
    ]

    def __init__(self, session: ReviewSession) -> None:
        super().__init__()
        self.session = session
        self.card: Card | None = None
        self.revealed = False
        # a red-flag card's choices wait until the learner has said what is wrong (space)
        self.choices_shown = True
        self.picked: int | None = None
        self.suggested: Rating | None = None
        self.preview: dict[Rating, Outcome] = {}
        self._note: Text | None = None
        self.saving = False  # a rating is being committed (retrying while the db is busy)
        self.ratings: RatingBar | None = None
        # the answer side, mounted at the first reveal (each widget costs the first card ~1 ms)
        self._back: Vertical | None = None
        self._answer: Static | None = None
        self._demo_link: Static | None = None

    def compose(self) -> ComposeResult:
        with Horizontal(id="topbar"):
            yield Static(id="where")
            yield Static(id="progress")
        with VerticalScroll(id="card"):
            yield Static(id="context")
            yield Static(id="prompt")
            yield Static(id="choices")  # the answer side is mounted below at the first reveal
        yield Static(id="hint")
        with Horizontal(id="actions"):
            yield KeyButton("space  Show answer", id="reveal", variant="primary")
            # the rating bar is mounted at the first reveal: the first card shows sooner
        syncer = getattr(self.app, "syncer", None)
        if syncer is not None and syncer.status is not None:
            from prep.tui.widgets.syncline import SyncLine

            yield SyncLine()  # (else mounted when a sync first has something to say)
        yield Footer()

    def on_mount(self) -> None:
        self.show_card()
        # the answer side is Markdown: import it while the question is being read, not on
        # the way to the first card (the first reveal would pay it instead)
        self._after_first_frame(lambda: self.set_timer(WARM_UP_SECONDS, self.warm_up))

    def _after_first_frame(self, callback: Callable[[], object]) -> None:
        """``callback`` once the first frame is on the terminal (see PrepApp.after_first_frame;
        after the next refresh in an app without it)."""
        later = getattr(self.app, "after_first_frame", None)
        (later or self.call_after_refresh)(callback)

    def warm_up(self) -> None:
        """What the first reveal needs, imported while the question is read: Markdown, the
        answer's sections, the rating bar (and the answer box)."""
        import prep.engine.study.present  # noqa: F401
        import prep.tui.widgets.answer_box  # noqa: F401  (the box `t` opens)
        import prep.tui.widgets.rating_bar  # noqa: F401

        warm_up()

    # --- showing ------------------------------------------------------------------------

    def show_card(self) -> None:
        """Show the session's current card, front side; or the summary when it is done."""
        syncer = getattr(self.prep, "syncer", None)
        if syncer is not None:  # what a sync brought: applied between cards (a card studied
            if syncer.between_cards():  # elsewhere leaves the queue); the first sync starts
                self.session.take_in_changes()
            self._after_first_frame(syncer.start)  # once the first card is on screen
        card = self.session.current
        for notice in self.session.take_notices():
            self.notify(notice, severity="warning", timeout=10)
        if card is None:
            from prep.tui.screens.summary import SummaryScreen

            self.prep.switch_screen(SummaryScreen(self.session))
            return
        self.card = card
        if card.demo is not None:
            # torch loads in the background while you read (the first card drawn first)
            self._after_first_frame(functools.partial(self.prep.warm_demo, card.demo))
        self.revealed = False
        self.choices_shown = card.kind != "red-flag" or not card.choices
        self.picked = None
        self.suggested = None
        self.preview = {}
        self.reset_typed()
        self.query_one("#where", Static).update(self.where_text(card))
        self.query_one("#progress", Static).update(self.progress_text())
        context = self.query_one("#context", Static)
        parent = self.session.collection.get(card.parent) if card.parent else None
        if parent is not None:
            context.update(Text.assemble(("Follows: ", "bold"), parent.prompt))
        context.display = parent is not None
        self.query_one("#prompt", Static).update(card_text(card.prompt))
        self.render_choices()
        if self._back is not None:
            self._back.display = False
        if self._demo_link is not None:
            self._demo_link.display = False
        self.query_one("#card", VerticalScroll).scroll_home(animate=False)
        hint = self.front_hint()
        if self._note is not None:
            hint = Text.assemble(self._note, (" · ", "dim"), hint)
        self.set_hint(hint)
        self._note = None
        button = self.query_one("#reveal", KeyButton)
        button.label = "space  Show answer" if self.choices_shown else "space  Show choices"
        button.display = True
        if self.ratings is not None:
            self.ratings.display = False
        self.refresh_bindings()
        self.session.mark_shown()
        self.card_shown()

    def study_day_changed(self) -> None:
        """The bar counts the new day's cards (the session's queue is the new day's: counts
        takes it in); the card on screen stays, and a rating lands on it."""
        if self.card is not None:
            self.query_one("#progress", Static).update(self.progress_text())

    def where_text(self, card: Card) -> Text:
        text = Text.assemble(
            (card.deck, "bold"), "  ·  ", (KIND_LABELS.get(card.kind, card.kind), "italic")
        )
        try:
            flagged = self.session.store.mark(card.id).flagged
        except StoreError:
            flagged = False
        if flagged:
            red = rich_color(self.app.current_theme, "error", "red")
            text.append("  ·  ⚑ flagged", style=f"bold {red}")
        return text

    def progress_text(self) -> Text:
        """Anki's three numbers (new / learning / due left, the current card included), and
        a label when a learning card is shown before its step is due."""
        new, learning, due = self.session.counts()
        theme = self.app.current_theme
        text = Text()
        early = self.session.early
        if early is not None:
            from prep.engine.study.present import early_text  # (not on the way to the first card)

            yellow = rich_color(theme, "warning", "yellow")
            text.append(early_text(early) + "   ", style=f"bold {yellow}")
        primary = rich_color(theme, "primary", "blue")
        for label, n, color in (
            ("new", new, primary),
            ("learning", learning, rich_color(theme, "warning", primary)),
            ("due", due, rich_color(theme, "success", primary)),
        ):
            if label != "new":
                text.append(" · ", style="dim")
            text.append(f"{label} ")
            text.append(str(n), style=f"bold {color}" if n else "dim")
        return text

    def front_hint(self) -> Text:
        assert self.card is not None
        if not self.choices_shown:
            return Text.assemble(
                "Say out loud what this answer gets wrong, then ",
                ("space", "bold"),
                " shows the choices.",
            )
        if self.card.choices:
            last = CHOICE_LETTERS[len(self.card.choices) - 1]
            return Text.assemble(
                "Pick ", (f"a-{last}", "bold"), ", or ", ("space", "bold"), " shows the answer."
            )
        return Text.assemble(
            "Say your answer (or ",
            ("t", "bold"),
            " to type it), then ",
            ("space", "bold"),
            " shows it.",
        )

    # --- actions ------------------------------------------------------------------------

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        # The footer lists only what works now: space before the answer, 1-4 after it, a-d
        # while a choice card waits for a pick (and never after), r once a card with a demo
        # is revealed.
        card = self.card
        if self.box_open and action != "type_answer":
            return False  # keys type text while the answer box is open
        if action == "type_answer":
            return card is not None and not self.revealed and not self.box_open
        if action == "show_choices":
            return card is not None and not self.revealed and not self.choices_shown
        if action == "reveal":
            return card is not None and not self.revealed and self.choices_shown
        if action == "rate":
            return card is not None and self.revealed
        if action == "take":  # labelled Good, or "Take suggestion" after a wrong pick
            good = self.suggested in (None, Rating.Good)
            return card is not None and self.revealed and good == (parameters == ("good",))
        if action == "pick":
            index = int(parameters[0]) if parameters else 0  # type: ignore[call-overload]
            if len(parameters) > 1 and card is not None and len(card.choices) != parameters[1]:
                return False  # the "a" binding for another number of choices
            return (
                card is not None
                and not self.revealed
                and self.choices_shown
                and index < len(card.choices)
            )
        if action == "demo":
            return card is not None and self.revealed and card.demo is not None
        if action in ("undo", "nothing_to_undo"):  # offered only when undo would do something
            return self.session.undoable == (action == "undo")
        return True

    def action_reveal(self) -> None:
        self.reveal()

    def show_choices(self) -> None:
        """A red-flag card's second step: the choices, once the flaw has been said."""
        if self.card is None or self.revealed or self.choices_shown:
            return
        self.choices_shown = True
        self.render_choices()
        self.set_hint(self.front_hint())
        self.query_one("#reveal", KeyButton).label = "space  Show answer"
        self.refresh_bindings()

    def action_show_choices(self) -> None:
        self.show_choices()

    def action_primary(self) -> None:
        if not self.revealed and not self.choices_shown:
            self.show_choices()
        elif not self.revealed:
            self.reveal()
        else:
            self.action_rate(int(self.suggested or Rating.Good))

    def action_take(self, _label: str = "good") -> None:
        """Space on a revealed card: Good, or the suggested rating after a pick (as Enter)."""
        if self.revealed:
            self.action_rate(int(self.suggested or Rating.Good))

    def action_mark(self, change: str) -> None:
        """Suspend, bury or flag the card (stored at once; u undoes it)."""
        if self.card is None or self.saving:
            return
        try:
            mark = self.session.set_mark(change, card_id=self.card.id)
        except NotCurrentCard as exc:
            self.notify(f"Not saved: {exc}", severity="error", timeout=8)
            self.show_card()
            return
        except StoreError as exc:
            self.notify(f"Not saved: {exc}", severity="error", timeout=8)
            return
        if change == "flag":
            self.notify(
                "Flagged (stats and `prep marks` list it; f again unflags)."
                if mark.flagged
                else "Flag removed."
            )
            self.query_one("#where", Static).update(self.where_text(self.card))
            self.refresh_bindings()  # (u now undoes the flag)
            return
        what = (
            "suspended: not served until `prep unmark`"
            if change == "suspend"
            else "buried until tomorrow"
        )
        self._note = Text.assemble((f"{self.card.id} {what}", "bold"), (" (u undoes)", "dim"))
        self.show_card()

    def action_pick(self, index: int, _choices: int | None = None) -> None:
        from prep.engine.study.present import choice_verdict, rating_name

        card = self.card
        if card is None or self.revealed or not self.choices_shown or index >= len(card.choices):
            return
        if self.box_open:
            return
        verdict = choice_verdict(card, index)
        self.picked = index
        self.suggested = verdict.suggested
        hint = Text(
            f"{'✓' if verdict.right else '✗'} {verdict.text} ",
            style="bold green" if verdict.right else "bold red",
        )
        hint.append("Suggested: ")
        hint.append(rating_name(verdict.suggested), style="bold")
        hint.append(" (Enter takes it).")
        self.set_hint(hint)
        self.reveal()

    def action_rate(self, value: int) -> None:

        if self.card is None or not self.revealed or self.saving:
            return
        self.saving = True
        self.save_rating(value, self.card)

    @work(exclusive=True, group="save", exit_on_error=False)
    async def save_rating(self, value: int, card: Card) -> None:
        """Commit the rating; while another prep holds the write lock, retry on a timer (the
        screen stays live and says so) for up to RETRY_SECONDS, then give up saying so."""
        from prep.engine.study.present import next_text

        deadline = time.monotonic() + self.RETRY_SECONDS
        ok = False
        try:
            while True:
                try:
                    # the card on screen, named: the session refuses any other
                    outcome = self.session.rate(
                        Rating(value), card_id=card.id, content_hash=card.content_hash
                    )
                    ok = True
                    break
                except NotCurrentCard as exc:  # never saved on another card: say so
                    self.notify(f"Not saved: {exc}", severity="error", timeout=8)
                    self.show_card()
                    return
                except StoreError as exc:
                    if exc.kind == "busy" and time.monotonic() < deadline:
                        self.set_hint(
                            Text.assemble(
                                ("Saving… ", "bold"),
                                "the database is busy (another prep is writing); retrying.",
                            )
                        )
                        await asyncio.sleep(0.2)
                        continue
                    self.notify(f"Not saved (the card stays): {exc}", severity="error", timeout=8)
                    again = "Restart prep" if exc.kind == "replaced" else "Rate it again"
                    self.set_hint(
                        Text.assemble(("Not saved", "bold red"), f"; the card stays. {again}.")
                    )
                    return
        finally:
            self.saving = False
            self.saved(ok)  # the keys pressed meanwhile, once this ends (tui/screens/held_keys.py)
        session = self.session  # when it comes back: FSRS's, or an interview plan's sooner
        when = next_text(outcome, session.plan, session.collection, session.clock())
        self._note = Text.assemble(
            ("Saved: ", "dim"),
            (RATING_NAMES[outcome.rating], "bold"),
            (f", {when} (u undoes)", "dim"),
        )
        self.show_card()

    def on_rating_bar_rated(self, event: RatingBar.Rated) -> None:
        # a click is its key by other means: held during a save as the key is (held_keys.py)
        rating = event.rating
        if not self.held_click(str(int(rating)), RATING_NAMES[rating], event.pressed_at):
            self.action_rate(int(rating))

    def on_key_button_pressed(self, event: KeyButton.Pressed) -> None:
        if event.button.id != "reveal" or self.held_click("enter", "Show answer", event.pressed_at):
            return
        if not self.submit_box():
            self.action_primary()  # a red flag's choices first, then the answer

    def action_undo(self) -> None:
        if self.saving:
            return
        if undo_last_rating(self, self.session) is None:
            return
        self._note = Text("Undone: the card is back as it was", style="bold")
        self.show_card()

    def action_nothing_to_undo(self) -> None:
        self.notify(NOTHING_TO_UNDO)

    def action_demo(self) -> None:
        from prep.tui.screens.demo_pick import run_card_demo

        card = self.card
        if card is None or not self.revealed:
            return
        if card.demo is None:
            self.notify("This card links no demo.")
            return
        run_card_demo(self.prep, card)

    def action_home(self) -> None:
        self.prep.go_home()
