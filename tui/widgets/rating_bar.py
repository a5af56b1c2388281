"""The four rating buttons, each with the interval it would give (`1 Again 10m`)."""

from __future__ import annotations

from textual import events
from textual.containers import Horizontal
from textual.message import Message

from prep.engine.study.present import rating_label
from prep.engine.study.scheduler import Outcome, Rating
from prep.tui.widgets.key_button import KeyButton

VARIANTS = {
    Rating.Again: "error",
    Rating.Hard: "warning",
    Rating.Good: "success",
    Rating.Easy: "primary",
}


class RatingBar(Horizontal):
    """Four buttons; they never take focus, so space and Enter always reach the screen. The
    buttons are made with the bar, so a preview can be shown before it is mounted."""

    # the buttons' variants that only the bar uses (KeyButton keeps the first card's): parsed
    # when the bar is first mounted, at the first reveal, not before the first card
    DEFAULT_CSS = """
    RatingBar {
        height: 3;
        width: 1fr;
        KeyButton {
            width: 1fr;
            min-width: 10;
            margin: 0 1 0 0;
            &.-success {
                color: $button-color-foreground;
                background: $success;
                border-top: tall $success-lighten-2;
                border-bottom: tall $success-darken-3;
                &:hover { background: $success-darken-2; border-top: tall $success; }
                &.-active { background: $success; border-bottom: tall $success-lighten-2; border-top: tall $success-darken-2; }
            }
            &.-warning {
                color: $button-color-foreground;
                background: $warning;
                border-top: tall $warning-lighten-2;
                border-bottom: tall $warning-darken-3;
                &:hover { background: $warning-darken-2; border-top: tall $warning; }
                &.-active { background: $warning; border-bottom: tall $warning-lighten-2; border-top: tall $warning-darken-2; }
            }
            &.-error {
                color: $button-color-foreground;
                background: $error;
                border-top: tall $error-lighten-2;
                border-bottom: tall $error-darken-3;
                &:hover { background: $error-darken-1; border-top: tall $error; }
                &.-active { background: $error; border-bottom: tall $error-lighten-2; border-top: tall $error-darken-2; }
            }
            &.-suggested { text-style: bold underline; }
        }
        &.-narrow {  /* four in a row do not fit: two rows of two (see on_resize) */
            layout: grid;
            grid-size: 2;
            grid-columns: 1fr 1fr;
            grid-gutter: 0 1;
            height: 6;
            KeyButton { width: 1fr; min-width: 0; margin: 0; }
        }
    }
    """
    MIN_BUTTON = 10  # as the CSS above (four of them that do not fit in a row: Textual gives
    # each the whole bar's width, and three fall off the screen)

    class Rated(Message):
        def __init__(self, rating: Rating) -> None:
            self.rating = rating
            super().__init__()

    def __init__(self, *, id: str | None = None) -> None:
        self.buttons = {
            rating: KeyButton(
                self.label(rating, None), id=f"rate-{int(rating)}", variant=VARIANTS[rating]
            )
            for rating in Rating
        }
        super().__init__(*self.buttons.values(), id=id)

    def on_resize(self, event: events.Resize) -> None:
        self._fit(event.size.width)

    def _fit(self, width: int) -> None:
        """Two rows of two where four buttons in a row would crop a label (its interval
        first) or not fit at all: each needs its label, a space either side and a margin."""
        label = max(len(str(button.label)) for button in self.buttons.values())
        self.set_class(width < 4 * (max(label + 2, self.MIN_BUTTON) + 1), "-narrow")

    @staticmethod
    def label(rating: Rating, outcome: Outcome | None) -> str:
        return rating_label(rating, outcome)

    def show_preview(self, preview: dict[Rating, Outcome], suggested: Rating | None) -> None:
        for rating, button in self.buttons.items():
            label = self.label(rating, preview.get(rating))
            button.label = f"» {label}" if rating == suggested else label
            button.set_class(rating == suggested, "-suggested")
        if self.size.width:  # (mounted: the longer labels may need two rows now)
            self._fit(self.size.width)

    def on_key_button_pressed(self, event: KeyButton.Pressed) -> None:
        event.stop()
        for rating, button in self.buttons.items():
            if button is event.button:
                self.post_message(self.Rated(rating))
