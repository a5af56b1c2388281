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

A click on the rating bar is a key press by other means (Anki answers a click and its key through
one path), so it follows the same rule: held as the key it mirrors, applied after the save if its
card is still on screen, refused in the same one line if not (it was dropped silently before).
q and ctrl+c are held too: prep quits once the rating is saved, saying so meanwhile (a held ctrl+c
was lost: its first binding is the screen's copy). If the save fails (the database stayed busy for
the ten seconds), prep does not quit: it says the rating was not saved, and the next q quits.

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
# keys that quit prep from anywhere: held during a save like any key, so the rating is saved
# first; said at once, since a quit that waits looks like one ignored (a held ctrl+c was dropped)
QUIT_KEYS = frozenset({"q", "ctrl+c"})


@dataclass(frozen=True)
class HeldKey:
    """A key pressed while a rating was saving, and whether it then acted on the card shown."""

    key: str
    character: str | None
    time: float
    on_card: bool
    clicked: str | None = None  # a click on this button (its label), held as the key it mirrors

    @property
    def label(self) -> str:
        if self.clicked is not None:
            return f"click on {self.clicked}"
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
        self._unsaved = False  # the last save ended without saving (a quit held meanwhile waits)

    def card_shown(self) -> None:
        self._shown_at = get_time()

    def saved(self, ok: bool = True) -> None:
        """The save ended (``ok``: the rating is saved): apply the held keys (after what the
        save does next, e.g. the next card shown). When it failed there is no rating of it to
        undo: a held undo is refused, never given to the rating before it (another card's); a
        held quit waits for the learner (``_apply_held``)."""
        self._unsaved = not ok
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
            if key in QUIT_KEYS and self.saving:
                self.notify("Quitting once this rating is saved…", timeout=4)
        elif time >= self._shown_at or not self._acts_on_card(key):
            return  # (the usual case: one comparison, the bindings not asked)
        else:
            self._refused([HeldKey(key, event.character, time, True)])
        event.stop()
        event.prevent_default()

    def held_click(self, key: str, label: str, time: float) -> bool:
        """A click on a button of the card that mirrors ``key`` (a rating, Show answer), pressed at
        ``time``: True when it is held (a save is running: it applies after, as the key would) or
        refused (its card was gone when it came); False when the caller should act on it now.
        A click is a key press by other means (Anki answers both through one path), so it gets
        the key's rule; dropping it silently left the learner unsure what was rated."""
        held = HeldKey(key, None, time, True, clicked=label)
        if self.saving or self._held:
            self._held.append(held)
        elif time < self._shown_at:  # read while a commit blocked the app: meant for the last card
            self._refused([held])
        else:
            return False
        return True

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
            plural = "s" if len(keys) > 1 else ""
            clicked = [held.clicked for held in keys if held.clicked is not None]
            if len(clicked) == len(keys):  # "Click on Easy", not "Click click on Easy"
                what = f"Click{plural} on {', '.join(clicked)}"
            else:  # "Key 3", "Keys 3, click on Easy"
                what = f"Key{plural} {', '.join(held.label for held in keys)}"
            self.notify(
                f"{what} not applied: pressed before this card was shown (while the last rating "
                "was saving).",
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
            if held.key in QUIT_KEYS and self._unsaved:
                # pressed to quit once the rating was saved, and it was not: quitting would drop
                # it unseen; the learner decides (the next q quits)
                self._unsaved = False
                self.notify(
                    "Not quit: your rating was not saved. Rate the card again, or press "
                    f"{held.label} again to quit without it.",
                    severity="warning",
                    timeout=10,
                )
                continue
            if held.key == "ctrl+c":  # (its first binding is the screen's copy: nothing selected)
                await self.app.run_action("app.help_quit")
                continue
            active = self.active_bindings.get(held.key)
            if active is not None and active.enabled:
                await self.app.run_action(active.binding.action, active.node)
        self._refused(refused)
