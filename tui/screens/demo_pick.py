"""Which demo? A card can link several; `d` on such a card asks which one to run."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import OptionList
from textual.widgets.option_list import Option

from prep.tui.widgets.footer import Footer
from prep.tui.widgets.text import Static

if TYPE_CHECKING:
    from prep.engine.decks.deck import Card
    from prep.tui.app import PrepApp


def run_card_demo(app: PrepApp, card: Card) -> None:
    """`r` on a card (the review screen, the mock's reveal): its one demo on the demo screen,
    or, when it links several, the pick first."""
    from prep.tui.screens.demo import DemoScreen

    if len(card.demos) == 1:
        app.push_screen(DemoScreen(card.demos[0], card=card))
        return

    def run(name: str | None) -> None:
        if name is not None:
            app.push_screen(DemoScreen(name, card=card))

    app.push_screen(DemoPick([(name, app.demos.get(name, "")) for name in card.demos]), run)


class DemoPick(ModalScreen[str | None]):
    """``DemoPick([(name, claim), ...])`` returns the chosen demo's name, or None (Esc)."""

    DEFAULT_CSS = """
    DemoPick {
        align: center middle;
    }
    DemoPick #pick-box {
        width: 90%;
        max-width: 100;
        height: auto;
        max-height: 80%;
        border: round $primary;
        background: $surface;
        padding: 0 1;
    }
    DemoPick OptionList {
        height: auto;
        max-height: 18;
    }
    """

    BINDINGS = [
        Binding("escape", "cancel", "Cancel", tooltip="Back to the card, no demo run"),
        # a modal screen holds back the app's keys: q quits from here too, as everywhere
        Binding("q", "app.quit", "Quit"),
        # (a modal screen holds back the app's keys: ? opens help here too, at this section)
        Binding("question_mark", "app.help", "Help", tooltip="Every key"),
        Binding("f1", "app.help", "Help", show=False),
    ]

    # the keys the list and on_key handle, for help (`?`)
    HELP_KEYS: ClassVar[list[tuple[str, str]]] = [
        ("Enter", "Run the highlighted demo"),
        ("1-9", "Run the demo of that number"),
    ]

    def __init__(self, demos: list[tuple[str, str]]) -> None:
        super().__init__()
        self.demos = demos

    def compose(self) -> ComposeResult:
        options = []
        for i, (name, claim) in enumerate(self.demos, 1):
            label = Text.assemble((f"{i}  ", "bold"), (name, "bold"))
            if claim:
                label.append(f"\n   {claim}", style="dim")
            options.append(Option(label, id=name))
        with Vertical(id="pick-box"):
            yield Static(Text("Which demo? ↑↓ and Enter, or its number; Esc cancels.", "bold"))
            yield OptionList(*options, id="pick-list")
        yield Footer()  # its own keys, not those of the screen below (the card's)

    def on_mount(self) -> None:
        self.query_one(OptionList).focus()

    def on_key(self, event) -> None:  # noqa: ANN001 - textual's Key event
        if event.character and event.character.isdigit():
            index = int(event.character) - 1
            if 0 <= index < len(self.demos):
                event.stop()
                self.dismiss(self.demos[index][0])

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self.dismiss(event.option.id)

    def action_cancel(self) -> None:
        self.dismiss(None)
