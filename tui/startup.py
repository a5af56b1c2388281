"""Start-up of `prep`: Python's cyclic garbage collector waits for the first frame.

Start-up builds hundreds of thousands of objects that live as long as the process (Textual's
and prep's modules and classes, the app's widgets and styles, the day's cards) and frees few:
the collector's passes over them cost the first card about 60 ms of CPU (measured: ~115
young, ~10 middle and one full collection before the first frame of `prep quiz`). So `run`
(the console script) pauses it; the app resumes it once the first frame is on its way to the
terminal, every other command as it begins. What start-up built is then frozen (moved out of
the collector's sight, as CPython's docs suggest for a program after its start-up), so later
collections, between two answers, do not walk it again.
"""

from __future__ import annotations

import gc

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
