"""The demo screen in the app, driven through a fake worker (no torch in the app's tests):

- each check is on screen the moment the worker has measured it, one after another, before the
  section is done and before the run ends;
- a demo that runs long on a busy machine (a worker spinning on the CPU and chattering progress)
  slows the demo, never the app: keys keep working while it runs.

The real worker's side (one event per check, in the order the report holds them) is in
test_real_worker_streams_each_check_as_it_is_made.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from prep.tui.screens.demo import DemoScreen
from prep.tui.screens.review import ReviewScreen
from prep.tui.testing import fake_demo_command, make_app
from prep.tui.worker import WorkerClient
from tests.pilot import async_test, text_of, wait_until

pytestmark = pytest.mark.usefixtures("utc_local_time")

# The fake worker: a demo whose checks come one at a time, each released by the test through a
# gate file (gate-1, gate-2, ...), so the test sees what is on screen between two checks. Before
# each gate it spins on the CPU and sends a progress line every few milliseconds (a busy machine,
# a chatty demo).
FAKE_WORKER = r"""
import json, os, sys, time
folder = sys.argv[1]
def check(i, section):
    return {"name": f"{section} check {i}", "measured": float(i), "expected": "== 0.0",
            "passed": True, "detail": "", "kind": "identity"}
def wait(gate, send):
    n = 0
    while not os.path.exists(os.path.join(folder, gate)):
        t = time.perf_counter()
        while time.perf_counter() - t < 0.005:  # busy: no sleeping, the CPU stays taken
            pass
        n += 1
        if n % 4 == 0 and n <= 2000:
            send({"event": "progress", "message": f"step {n}"})
for line in sys.stdin:
    req = json.loads(line)
    rid, op = req["id"], req["op"]
    def send(msg):
        sys.stdout.write(json.dumps({"id": rid, **msg}) + "\n"); sys.stdout.flush()
    if op != "demo":
        send({"ok": True, "result": {"pid": os.getpid()}})
        continue
    claim = [check(1, "claim"), check(2, "claim")]
    contrast = [check(3, "contrast")]
    gate = 0
    for section, checks in (("claim", claim), ("contrast", contrast)):
        for c in checks:
            gate += 1
            wait(f"gate-{gate}", send)
            send({"event": "check", "section": section, "check": c})
        send({"event": "checks", "section": section, "checks": checks})
    wait("gate-end", send)
    send({"ok": True, "result": {
        "name": req["name"], "claim": "c", "device": "cpu", "device_name": "test cpu",
        "device_reason": "", "dtype": "float32", "scale": "small", "seed": 0,
        "sizes": {}, "seconds": 0.01, "passed": True, "checks": claim,
        "contrast_label": "a dense W_O", "contrast": contrast, "notes": [], "cards": []}})
"""


def fake_worker(tmp_path: Path) -> WorkerClient:
    script = tmp_path / "fake_worker.py"
    script.write_text(FAKE_WORKER, encoding="utf-8")
    return WorkerClient([sys.executable, str(script), str(tmp_path)])


def shown(app) -> list[str]:
    """The checks' names on the demo screen, top to bottom."""
    return [
        line.split("] ", 1)[1].strip()
        for line in text_of(app, "#checks").splitlines()
        if "] " in line
    ]


@async_test
async def test_each_check_is_on_screen_as_soon_as_it_is_measured(tmp_path: Path) -> None:
    worker = fake_worker(tmp_path)
    app = make_app(demo_command=fake_demo_command(tmp_path, "crash"), demo_worker=worker)
    async with app.run_test(size=(100, 40)) as pilot:
        await pilot.press("enter", "space", "r")
        demo = app.screen
        assert isinstance(demo, DemoScreen)
        await pilot.pause(0.3)
        assert demo.running and shown(app) == []  # nothing measured yet, nothing shown
        expected: list[str] = []
        for gate, name in enumerate(["claim check 1", "claim check 2", "contrast check 3"], 1):
            (tmp_path / f"gate-{gate}").touch()
            expected.append(name)
            await wait_until(pilot, lambda: shown(app) == expected)  # noqa: B023
            assert demo.running  # it is on screen while the demo still runs
        (tmp_path / "gate-end").touch()
        await wait_until(pilot, lambda: not demo.running)
        assert shown(app) == expected
        assert text_of(app, "#demo-status").startswith("PASS: all 3 checks hold")
    assert not worker.running


@async_test
async def test_a_demo_on_a_busy_machine_never_freezes_the_app(tmp_path: Path) -> None:
    worker = fake_worker(tmp_path)
    app = make_app(demo_command=fake_demo_command(tmp_path, "crash"), demo_worker=worker)
    async with app.run_test(size=(100, 40)) as pilot:
        await pilot.press("enter", "space", "r")
        demo = app.screen
        assert isinstance(demo, DemoScreen)
        # the worker spins and chatters; the screen keeps time and takes keys meanwhile
        await wait_until(pilot, lambda: len(demo.log_lines) > 20)
        first = text_of(app, "#demo-status")
        await wait_until(pilot, lambda: text_of(app, "#demo-status") != first)
        assert demo.running and "Running" in text_of(app, "#demo-status")
        await pilot.press("pagedown", "pageup")
        assert demo.running and app.screen is demo
        # Esc leaves at once: the card is back, revealed, and can be rated while the worker
        # is still busy
        await pilot.press("escape")
        review = app.screen
        assert isinstance(review, ReviewScreen) and review.revealed
        shown_card = review.card.id
        await pilot.press("3")
        await wait_until(pilot, lambda: app.screen.card.id != shown_card)
        assert isinstance(app.screen, ReviewScreen) and not app.screen.revealed
        for gate in ("gate-1", "gate-2", "gate-3", "gate-end"):
            (tmp_path / gate).touch()
    assert not worker.running
