"""Keys pressed while a rating is saving: held, then applied in order once it is saved.

A rating is committed before the next card is shown, and a busy database makes that take a while
(retried for up to ten seconds). Keys are not lost meanwhile (as in Anki): `u` pressed just after a
rating undoes it once it is saved, Esc goes home after it, q quits after it. What a held key does is
decided when it is applied, on the screen as it is then, with one rule that keeps a rating on the
card it was meant for: a key that acts on a card (rate, reveal, pick, mark, type, run its demo)
applies only to a card that was on screen when the key was pressed. A 3 pressed while the last
card was saving, or while the database was blocking the app, is never given to the next card, which
the learner has not seen; it is reported instead. If the save fails, the card stays and a rating
pressed meanwhile applies to it (it was on screen when the key was pressed).

The press time is the Key event's own (Textual stamps it when the terminal's bytes are read, on
the same monotonic clock as ``get_time``), so this also holds for keys read while the event loop was
blocked in a commit: they reach the screen after the next card is set up, and are refused there.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from textual import events
from textual._time import get_time  # the clock Key events are stamped with

if TYPE_CHECKING:  # a mixin of the review screen (not a screen of its own)
    from textual.screen import Screen as _Screen
else:
    _Screen = object

# the screen's actions that act on the card shown (its rating, its front, its marks, its demo)
CARD_ACTIONS = frozenset(
    {"rate", "take", "primary", "reveal", "show_choices", "pick", "mark", "type_answer", "demo"}
)


@dataclass(frozen=True)
class HeldKey:
    """A key pressed while a rating was saving, and whether it then acted on the card shown."""

    key: str
    character: str | None
    time: float
    on_card: bool

    @property
    def label(self) -> str:
        printable = self.character and self.character.isprintable() and self.character.strip()
        return self.character if printable and self.character else self.key


class HeldKeys(_Screen):
    """Mixed into ReviewScreen: holds keys while ``saving`` and applies them after; refuses a card's key pressed before
    that card was shown. The screen sets ``saving``, calls ``card_shown`` when a card is shown and
    ``saved`` when a save ends (saved or not)."""

    saving: bool

    def __init__(self) -> None:
        super().__init__()
        self._held: list[HeldKey] = []
        self._shown_at = float("-inf")  # when the card on screen was shown

    def card_shown(self) -> None:
        self._shown_at = get_time()

    def saved(self, ok: bool = True) -> None:
        """The save ended: apply the held keys (after what the save does next, e.g. the next
        card shown). When it failed (``ok`` False) there is no rating of it to undo: a held
        undo is refused, never given to the rating before it (another card's)."""
        if not ok:
            undos = [held for held in self._held if self._action_of(held.key) == "undo"]
            if undos:
                self._held = [held for held in self._held if held not in undos]
                self.notify(
                    "Key u not applied: the rating was not saved, so there is nothing of it "
                    "to undo (u now undoes the rating before it).",
                    severity="warning",
                    timeout=8,
                )
        self.call_later(self._apply_held)

    def _action_of(self, key: str, *, enabled: bool = False) -> str | None:
        """The name of this screen's action bound to ``key`` (only an enabled one, given
        ``enabled``), or None."""
        active = self.active_bindings.get(key)
        if active is None or active.node is not self or (enabled and not active.enabled):
            return None
        return active.binding.action.partition("(")[0]

    def on_key(self, event: events.Key) -> None:
        key, time = event.key, event.time
        if self.saving or self._held:  # (later keys wait behind the held ones: order kept)
            self._held.append(HeldKey(key, event.character, time, self._acts_on_card(key)))
        elif time >= self._shown_at or not self._acts_on_card(key):
            return  # (the usual case: one comparison, the bindings not asked)
        else:
            self._refused([HeldKey(key, event.character, time, True)])
        event.stop()
        event.prevent_default()

    def _acts_on_card(self, key: str) -> bool:
        return self._action_of(key, enabled=True) in CARD_ACTIONS

    def _may_act(self, held: HeldKey) -> bool:
        """False when ``held`` acts (or acted, when pressed) on a card and this card was not
        yet shown when it was pressed."""
        if held.time >= self._shown_at:
            return True
        return not (held.on_card or self._acts_on_card(held.key))

    def _refused(self, keys: list[HeldKey]) -> None:
        if keys:
            names = ", ".join(held.label for held in keys)
            self.notify(
                f"Key{'s' if len(keys) > 1 else ''} {names} not applied: pressed before this card "
                "was shown (while the last rating was saving).",
                severity="warning",
                timeout=6,
            )

    async def _apply_held(self) -> None:
        refused: list[HeldKey] = []
        while self._held and not self.saving:
            if self.app.screen is not self:  # a held key left this screen: the rest go on there
                for held in self._held:
                    self.app.post_message(events.Key(held.key, held.character))
                self._held.clear()
                break
            held = self._held.pop(0)
            if not self._may_act(held):
                refused.append(held)
                continue
            active = self.active_bindings.get(held.key)
            if active is not None and active.enabled:
                await self.app.run_action(active.binding.action, active.node)
        self._refused(refused)
