"""The demo worker: one long-lived process per app session that keeps torch (and a demo's model)
loaded, streams progress and checks as they are measured, and can be stopped mid-run.

The real worker runs a real (small, CPU) demo twice in one process; the app is driven with a
fake worker that speaks the same protocol (no torch in the app's tests)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from prep.demos import worker as demo_worker
from prep.demos._torch import threads_for_load
from prep.demos.pretrained.grader.rubric import Rubric
from prep.engine.store import Store
from prep.tui.screens.demo import DemoScreen
from prep.tui.screens.review import ReviewScreen
from prep.tui.testing import fake_demo_command, make_app
from prep.tui.worker import WorkerClient, WorkerError
from tests.pilot import async_test, text_of, wait_until

pytestmark = pytest.mark.usefixtures("utc_local_time")


# --------------------------------------------------------------------------- the real worker


def test_real_worker_runs_demos_in_one_process_and_streams_checks() -> None:
    worker = WorkerClient()
    try:
        ping = worker.request("ping", warm="block-diagonal").result(timeout=300)
        assert ping["torch"] is True and ping["pid"] == worker.pid
        runs = []
        for _ in range(2):
            events: list[dict] = []
            result = worker.request(
                "demo", on_event=events.append, name="block-diagonal", device="cpu"
            ).result(timeout=300)
            runs.append((result, events))
        for result, events in runs:
            assert result["name"] == "block-diagonal" and result["passed"] is True
            kinds = [(e["event"], e.get("section")) for e in events]
            # progress first, then the claim's checks, then the contrast's, before the answer
            assert kinds[0][0] == "progress"
            assert kinds.index(("checks", "claim")) < kinds.index(("checks", "contrast"))
            claim = next(e for e in events if e["event"] == "checks" and e["section"] == "claim")
            assert [c["name"] for c in claim["checks"]] == [c["name"] for c in result["checks"]]
            # and before that, each check on its own the moment it was made
            for section, final in (("claim", result["checks"]), ("contrast", result["contrast"])):
                done = kinds.index(("checks", section))
                one_by_one = [
                    (i, e["check"]["name"])
                    for i, e in enumerate(events)
                    if e["event"] == "check" and e["section"] == section
                ]
                assert [name for _, name in one_by_one] == [c["name"] for c in final]
                assert all(i < done for i, _ in one_by_one)
        # a live run each time (its own timing), in the same process that imported torch once
        assert runs[0][0]["seconds"] > 0 and runs[1][0]["seconds"] > 0
        assert worker.starts == 1 and worker.pid == ping["pid"]
        assert any("torch imported" in e.get("message", "") for e in runs[0][1])
        assert not any("torch imported" in e.get("message", "") for e in runs[1][1])
        # a bad request answers with one line; the worker lives on
        with pytest.raises(WorkerError, match="unknown demo 'nope'"):
            worker.request("demo", name="nope").result(timeout=60)
        assert worker.request("ping").result(timeout=60)["pid"] == ping["pid"]
    finally:
        worker.close()
    assert not worker.running


def test_cancel_stops_a_running_demo_at_its_next_step() -> None:
    out: list[str] = []

    class Out:
        def write(self, text: str) -> None:
            out.append(text)

        def flush(self) -> None:
            pass

    w = demo_worker.Worker(Out())  # type: ignore[arg-type]
    w.cancel(7)  # the cancel arrives while request 7 runs: its first step stops it
    answer = w.handle({"id": 7, "op": "demo", "name": "block-diagonal", "device": "cpu"})
    assert answer == {"id": 7, "ok": False, "cancelled": True, "error": "stopped"}
    again = w.handle({"id": 8, "op": "demo", "name": "block-diagonal", "device": "cpu"})
    assert again["ok"] is True and again["result"]["passed"] is True


@pytest.mark.parametrize(
    ("cores", "load", "threads"),
    [(2, 0.0, 2), (2, 0.6, 2), (2, 1.6, 1), (2, 11.0, 1), (16, 4.0, 13), (16, 40.0, 1)],
)
def test_threads_follow_the_machines_load(cores: int, load: float, threads: int) -> None:
    assert threads_for_load(cores, load) == threads


@pytest.mark.parametrize("cores", [2, 4, 16])
def test_one_more_thread_for_each_core_the_load_leaves_free(cores: int) -> None:
    """The headroom (cores - load) counted in cores idle 80% of the time, the same way at every
    size: 0.5 of a core is no thread (on 2 cores at load 1.5: one thread), 0.8 is one; 1.5 cores
    are one more thread, not two (it was rounded half to even: 1.5 -> 2, 2.5 -> 2, 0.5 -> 0)."""
    for headroom, extra in [(0.0, 0), (0.5, 0), (0.79, 0), (0.8, 1), (1.5, 1), (1.8, 2), (2.5, 2)]:
        load = cores - headroom
        assert threads_for_load(cores, load) == min(cores, 1 + extra), (cores, load)


# --------------------------------------------------------------------------- the app

FAKE_WORKER = r"""
import json, os, sys, time
log = open(sys.argv[1], "a")
for line in sys.stdin:
    req = json.loads(line)
    log.write(line); log.flush()
    rid, op = req["id"], req["op"]
    def send(msg):
        sys.stdout.write(json.dumps({"id": rid, **msg}) + "\n"); sys.stdout.flush()
    if op == "ping":
        send({"ok": True, "result": {"pid": os.getpid()}})
    elif op == "cancel":
        send({"ok": True, "result": {}})
    elif op == "grade":
        send({"ok": True, "result": {"points": [{"id": "p1", "text": "t", "covered": True,
              "score": 0.9, "sentence": f"pid {os.getpid()}"}], "seconds": 0.0}})
    elif op == "demo":
        check = {"name": "max |write outside slice|", "measured": 0.0, "expected": "== 0.0",
                 "passed": True, "detail": "", "kind": "identity"}
        send({"event": "progress", "message": "measuring the claim"})
        send({"event": "checks", "section": "claim", "checks": [check]})
        gate = sys.argv[2]
        while not os.path.exists(gate):  # the test opens the gate once it saw the claim
            time.sleep(0.02)
        contrast = dict(check, measured=0.8, expected=">= 0.01", kind="measurement")
        send({"event": "checks", "section": "contrast", "checks": [contrast]})
        send({"ok": True, "result": {
            "name": req["name"], "claim": "c", "device": "cpu", "device_name": "test cpu",
            "device_reason": "", "dtype": "float32", "scale": "small", "seed": 0,
            "sizes": {}, "seconds": 0.01, "passed": True, "checks": [check],
            "contrast_label": "a dense W_O", "contrast": [contrast],
            "notes": [f"pid {os.getpid()}"], "cards": []}})
"""


def fake_worker(tmp_path: Path) -> tuple[WorkerClient, Path, Path]:
    script = tmp_path / "fake_worker.py"
    script.write_text(FAKE_WORKER, encoding="utf-8")
    log, gate = tmp_path / "requests.jsonl", tmp_path / "gate"
    return WorkerClient([sys.executable, str(script), str(log), str(gate)]), log, gate


def requests(log: Path) -> list[dict]:
    if not log.exists():
        return []
    return [json.loads(line) for line in log.read_text().splitlines()]


@async_test
async def test_app_warms_the_worker_streams_checks_and_reuses_it(tmp_path: Path) -> None:
    worker, log, gate = fake_worker(tmp_path)
    store = Store.open(tmp_path / "prep.db")
    # demo_command would fail: every run must go through the worker
    app = make_app(
        store=store, demo_command=fake_demo_command(tmp_path, "crash"), demo_worker=worker
    )
    assert app.grading.client is worker  # one worker process for demos and grading
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("enter")
        # the first card links a demo: the worker is warmed up while the card is read
        await wait_until(pilot, lambda: any(r["op"] == "ping" for r in requests(log)))
        assert requests(log)[0]["warm"] == "block-diagonal"
        await pilot.press("space", "r")
        demo = app.screen
        assert isinstance(demo, DemoScreen)
        # the claim's check is on screen while the demo still runs
        await wait_until(pilot, lambda: "PASS" in text_of(app, "#checks"))
        assert demo.running and "contrast" not in text_of(app, "#checks")
        gate.touch()
        await wait_until(pilot, lambda: not demo.running)
        assert text_of(app, "#demo-status").startswith("PASS: all 2 checks hold")
        assert [r["passed"] for r in store.demo_runs()] == [True]
        first_pid = demo.report.notes[0]
        await pilot.press("r")  # again: the same process answers
        await wait_until(pilot, lambda: not demo.running)
        assert demo.report.notes[0] == first_pid and worker.starts == 1
        assert len(store.demo_runs()) == 2
        # Esc during a run asks the worker to stop it, and the card is back as it was
        gate.unlink()
        await pilot.press("r")
        await wait_until(pilot, lambda: "PASS" in text_of(app, "#checks") and demo.running)
        await pilot.press("escape")
        assert isinstance(app.screen, ReviewScreen) and app.screen.revealed
        gate.touch()  # (the fake reads its next line once this run is done; the real worker
        # reads a cancel at once: test_cancel_stops_a_running_demo_at_its_next_step)
        await wait_until(pilot, lambda: any(r["op"] == "cancel" for r in requests(log)))
        assert requests(log)[-1]["target"] == requests(log)[-2]["id"]
        await pilot.pause(0.2)
        assert len(store.demo_runs()) == 2  # a run the learner left is not recorded
        # grading goes through the same process, which the Esc left running
        rubric = Rubric.from_texts("q", ["t"])
        grade = app.grading.grade(rubric, "an answer").result(timeout=30)
        assert grade.points[0].sentence == first_pid and worker.starts == 1
    assert not worker.running  # the app closed it on the way out


@async_test
async def test_a_worker_error_is_one_line_and_the_app_lives_on(tmp_path: Path) -> None:
    app = make_app()
    app.demo_worker = WorkerClient([sys.executable, "-c", "raise SystemExit(4)"])
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("enter", "space", "r")
        demo = app.screen
        await wait_until(pilot, lambda: not demo.running)
        assert "the worker stopped" in text_of(app, "#demo-status")
        await pilot.press("escape", "3")
        assert isinstance(app.screen, ReviewScreen) and app.screen.card.id == "wo-shape"


def test_checks_stream_as_made_tagged_by_section_and_intermediates_do_not() -> None:
    from prep.demos import harness
    from prep.demos._torch import torch

    heard: list[tuple[str, object]] = []
    with harness.listening(lambda event, payload: heard.append((event, payload))):
        with harness.measuring("claim"):
            first = harness.at_most("a", 0.0, 1.0)
            with harness.not_streamed():  # an intermediate the demo turns into another check
                harness.at_least("scratch", 0.0, 1.0)
            second = harness.exactly_zero("b", torch.zeros(3))
        harness.emit_checks("claim", [first, second])
    assert heard == [
        ("check", ("claim", first)),
        ("check", ("claim", second)),
        ("checks", ("claim", [first, second])),
    ]
    # outside the worker (no listener) nothing is observed: `prep demo` is as before
    with harness.measuring("claim"):
        harness.at_most("c", 0.0, 1.0)
    assert len(heard) == 3
