"""Terminal-app timings, each beside a minimal Textual app measured in the same run.

    python tests/benchmarks/tui_bench.py [--repeat 5] [--cards 10000]

Times are taken where a frame is written to the terminal (App._display), not around Pilot
calls (Pilot's own idle waits dominate those). Targets: `prep` (home) within 2x the floor;
`prep quiz` (straight to the first card) within 1.5x; rating -> next card under 16 ms with
10k cards. The bundled decks, through a deck cache that the warm-up run fills.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

T0 = time.perf_counter()


def instrument(app, ready) -> None:
    """Record the time of the first frame written once ``ready()`` holds, then exit."""
    original = app._display

    def display(screen, renderable) -> None:
        original(screen, renderable)
        if app.painted is None and ready():
            app.painted = time.perf_counter() - T0
            app.set_timer(0.2, app.exit)

    app._display = display
    app.painted = None


def first_frame(mode: str, db: str) -> None:
    """Child process: start -> first frame of `mode` (floor | home | quiz | card)."""
    from textual.app import App

    if mode == "floor":
        from textual.widgets import Footer, Static

        class Floor(App):
            def compose(self):
                yield Static("hello")
                yield Footer()

        app = Floor()
        instrument(app, lambda: True)
    else:
        from prep.tui.app import PrepApp

        app = PrepApp(db=db, questions=[], review_first=mode == "quiz")

        def ready() -> bool:
            screen = app.screen
            if mode == "home":
                from prep.tui.screens.home import HomeScreen

                return isinstance(screen, HomeScreen) and screen.query_one("#decks").row_count > 0
            if mode == "quiz":  # `prep quiz`: straight to the first card
                return type(screen).__name__ == "ReviewScreen" and screen.card is not None
            if type(screen).__name__ == "HomeScreen" and not getattr(app, "_started", False):
                app._started = True
                app.call_later(app.action_start)
            # the review screen's module is imported by the app when the session starts
            return type(screen).__name__ == "ReviewScreen" and screen.card is not None

        instrument(app, ready)
    app.run(headless=True, size=(80, 24))
    print(f"{app.painted:.6f}")


def frame_times(app) -> list[float]:
    frames: list[float] = []
    original = app._display

    def display(screen, renderable) -> None:
        original(screen, renderable)
        frames.append(time.perf_counter())

    app._display = display
    return frames


async def key_to_frame(pilot, frames, key, changed) -> float:
    n = len(frames)
    t0 = time.perf_counter()
    await pilot.press(key)
    while not changed() or len(frames) == n:
        await asyncio.sleep(0)
    return frames[n] - t0


async def rating_to_next_card(n_cards: int, n: int) -> list[float]:
    from prep.engine.store import Store
    from prep.tui.screens.review import ReviewScreen
    from prep.tui.testing import big_collection, make_app, seed_due

    store = Store.open(Path(tempfile.mkdtemp(prefix="prep-tui-bench-")) / "bench.db")
    coll = big_collection(n_cards)
    seed_due(store, coll)
    app = make_app(store=store, collection=coll)
    out = []
    async with app.run_test(size=(80, 24)) as pilot:
        frames = frame_times(app)
        await pilot.press("enter")
        screen = app.screen
        assert isinstance(screen, ReviewScreen)
        for _ in range(n):
            await pilot.press("space")
            await pilot.pause()
            before = screen.card.id
            out.append(await key_to_frame(pilot, frames, "3", lambda b=before: screen.card.id != b))
            await pilot.pause()
    return out


async def reveal_to_answer(n_cards: int, n: int) -> list[float]:
    """space -> the frame with the answer, on the first card of a fresh screen each time: the
    rating bar is mounted then (and Markdown imported, unless the warm-up has done it)."""
    from prep.engine.store import Store
    from prep.tui.testing import big_collection, make_app, seed_due

    store = Store.open(Path(tempfile.mkdtemp(prefix="prep-tui-bench-")) / "bench.db")
    coll = big_collection(n_cards)
    seed_due(store, coll)
    out = []
    for _ in range(n):
        app = make_app(store=store, collection=coll, review_first=True)
        async with app.run_test(size=(80, 24)) as pilot:
            frames = frame_times(app)
            await pilot.pause(0.5)  # as a reader would: the question is read first
            screen = app.screen
            out.append(await key_to_frame(pilot, frames, "space", lambda s=screen: s.revealed))
    return out


async def floor_key_to_frame(n: int) -> list[float]:
    from textual.app import App
    from textual.widgets import Static

    class Floor(App):
        def compose(self):
            yield Static("0", id="s")

        def key_3(self) -> None:
            s = self.query_one("#s", Static)
            s.update(str(int(str(s.render())) + 1))

    app = Floor()
    out = []
    async with app.run_test(size=(80, 24)) as pilot:
        frames = frame_times(app)
        for _ in range(n):
            out.append(await key_to_frame(pilot, frames, "3", lambda: True))
            await pilot.pause()
    return out


def row(label: str, seconds: float, floor: float | None = None, target: str = "") -> None:
    ratio = f"{seconds / floor:6.2f}x" if floor else " " * 7
    print(f"  {label:<46} {seconds * 1000:9.1f} ms  {ratio}  {target}", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--cards", type=int, default=10_000)
    ap.add_argument("--child", nargs=2, metavar=("MODE", "DB"))
    args = ap.parse_args()
    if args.child:
        first_frame(*args.child)
        return
    db = str(Path(tempfile.mkdtemp(prefix="prep-tui-bench-")) / "first.db")

    # An installed prep has its bytecode compiled, as Textual's in site-packages is: with
    # PYTHONDONTWRITEBYTECODE set (some shells and containers set it), every child would
    # compile prep's modules from source while the floor's come compiled. The warm-up run
    # writes them.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}

    def child(mode: str) -> float:
        out = subprocess.run(
            [sys.executable, __file__, "--child", mode, db],
            capture_output=True,
            text=True,
            env=env,
        )
        return float(out.stdout.strip().splitlines()[-1])

    # Rounds of one run per mode, so that load from elsewhere on the machine falls on every
    # mode alike; the first round warms caches, creates the database and fills the deck cache.
    modes = ("floor", "home", "quiz", "card")
    runs: dict[str, list[float]] = {mode: [] for mode in modes}
    for round_ in range(args.repeat + 1):
        for mode in modes:
            seconds = child(mode)
            if round_:
                runs[mode].append(seconds)
    median = {mode: statistics.median(times) for mode, times in runs.items()}

    def paired(mode: str) -> float:
        """The median over rounds of this mode's time over the floor's in the same round."""
        return statistics.median(t / f for t, f in zip(runs[mode], runs["floor"], strict=True))

    floor = median["floor"]
    row("floor: minimal Textual app, first frame", floor, floor)
    row("prep: home screen with deck counts", median["home"], floor, "target <= 2x")
    row("prep quiz: first card on screen", median["quiz"], floor, "target <= 1.5x")
    row("prep: home, then Enter at once: first card", median["card"], floor)
    print(
        "  paired (median of per-round ratios): "
        + ", ".join(f"{mode} {paired(mode):.2f}x" for mode in ("home", "quiz", "card")),
        flush=True,
    )
    n = max(20, args.repeat * 10)
    key_floor = statistics.median(asyncio.run(floor_key_to_frame(n)))
    row("floor: key -> next frame, minimal app", key_floor, key_floor)
    reveal = statistics.median(asyncio.run(reveal_to_answer(args.cards, max(5, args.repeat))))
    row(f"space -> answer frame, first reveal ({args.cards:,} cards)", reveal, key_floor)
    samples = sorted(asyncio.run(rating_to_next_card(args.cards, n)))
    row(
        f"rating -> next card frame ({args.cards:,} cards), median",
        statistics.median(samples),
        key_floor,
        "target < 16 ms",
    )
    row(
        f"rating -> next card frame ({args.cards:,} cards), p95",
        samples[int(0.95 * len(samples)) - 1],
        key_floor,
    )


if __name__ == "__main__":
    main()
