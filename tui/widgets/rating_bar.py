"""The four rating buttons, each with the interval it would give (`1 Again 10m`)."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.message import Message
from textual.widgets import Button

from prep.engine.present import rating_label
from prep.engine.scheduler import Outcome, Rating

VARIANTS = {
    Rating.Again: "error",
    Rating.Hard: "warning",
    Rating.Good: "success",
    Rating.Easy: "primary",
}


class RatingBar(Horizontal):
    """Four buttons; they never take focus, so space and Enter always reach the screen."""

    class Rated(Message):
        def __init__(self, rating: Rating) -> None:
            self.rating = rating
            super().__init__()

    def compose(self) -> ComposeResult:
        for rating in Rating:
            button = Button(
                self.label(rating, None),
                id=f"rate-{int(rating)}",
                variant=VARIANTS[rating],  # type: ignore[arg-type]
            )
            button.can_focus = False
            yield button

    @staticmethod
    def label(rating: Rating, outcome: Outcome | None) -> str:
        return rating_label(rating, outcome)

    def show_preview(self, preview: dict[Rating, Outcome], suggested: Rating | None) -> None:
        for rating in Rating:
            button = self.query_one(f"#rate-{int(rating)}", Button)
            label = self.label(rating, preview.get(rating))
            button.label = f"» {label}" if rating == suggested else label
            button.set_class(rating == suggested, "-suggested")

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        if event.button.id and event.button.id.startswith("rate-"):
            self.post_message(self.Rated(Rating(int(event.button.id.removeprefix("rate-")))))
