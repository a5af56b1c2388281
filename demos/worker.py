"""The worker: one long-lived process that holds the torch side for the TUI: the demos and the
grader of typed answers.

    python -m prep.demos.worker

torch, each demo module, MiniLM and the grader are imported and loaded once, by the first
request that needs them, and then kept for the app's session: from the second run on, a demo
costs its own compute only, and grading an answer its few milliseconds. The distributed demos'
rank processes are kept too (demos/synthetic/ranks.py: interpreters with torch imported, a fresh
process group every run). MiniLM is loaded once
and shared: the real-* demos read it and the grader encodes with it. A demo still runs live
every time; nothing is cached but code and weights.

JSON lines on stdin/stdout, one request a line, answered by one final line matched by `id`;
`op` tags the request:

    {"id": 1, "op": "ping", "warm": "dla"}     -> {"id": 1, "ok": true, "result": {...}}
    {"id": 2, "op": "demo", "name": "dla", "scale": "small", "device": "auto", "seed": 0}
        -> {"id": 2, "event": "progress", "message": "loading the shipped decoder"}
        -> {"id": 2, "event": "check", "section": "claim", "check": {...}}  (each, as made)
        -> {"id": 2, "event": "checks", "section": "claim", "checks": [{...}, ...]}
        -> {"id": 2, "event": "checks", "section": "contrast", "checks": [...]}
        -> {"id": 2, "ok": true, "result": {the Report as a dict}}
    {"id": 3, "op": "cancel", "target": 2}     -> demo 2 stops at its next progress point
                                                  and answers {"ok": false, "cancelled": true}
    {"id": 4, "op": "ping", "warm": "grader"}  -> loads the grader (MiniLM and its head)
    {"id": 5, "op": "grade", "rubric": {...}, "answer": "..."}
                                               -> {"id": 5, "ok": true, "result": Grade}
    {"id": 6, "op": "nope"}                    -> {"id": 6, "ok": false, "error": "..."}

`ping` with "warm": a demo name imports torch, that demo's module and its model (the app sends
it in the background when the first card with a demo is shown); "grader" loads the grader (sent
when the learner starts typing). One reader loop takes every line: `cancel` is handled at once,
grading requests go to the grading lane and everything else to the demo lane; each lane runs
its requests one at a time, in order, so a long demo never holds up a grade and cancelling a
demo (the demo screen's Esc) never touches grading. The real-* demos and the grader take turns
on MiniLM (a demo hooks its modules while it runs). stdout carries nothing but these lines
(library chatter goes to stderr). End of input ends the worker.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import importlib
import json
import os
import queue
import sys
import threading
import time
from collections.abc import Callable
from typing import Any, TextIO

from prep.demos.pretrained import extra
from prep.demos.registry import DEMOS, names
from prep.demos.synthetic import ranks

_state: dict[Any, Any] = {}  # "harness", loaded modules and models, the grader, timings
_loading = threading.RLock()  # one lane loads at a time (torch, a model, the grader)
_minilm = threading.Lock()  # the shared MiniLM: a real-* demo or the grader, one at a time
GRADE_LANE = "grade"
DEMO_LANE = "demo"


class Cancelled(Exception):
    """The front end asked to stop the demo that is running (the learner left its screen)."""


class Worker:
    def __init__(self, out: TextIO) -> None:
        self.out = out
        self._write_lock = threading.Lock()
        self._cancelled: set[Any] = set()
        self.current: Any = None
        self.closing = False  # end of input: demos still queued are not started

    def send(self, message: dict[str, Any]) -> None:
        line = json.dumps(message) + "\n"
        with self._write_lock:
            self.out.write(line)
            self.out.flush()

    def cancel(self, target: Any) -> None:
        self._cancelled.add(target)

    def check_cancelled(self, rid: Any) -> None:
        if rid in self._cancelled:
            raise Cancelled

    def handle(self, req: Any, lane: str = DEMO_LANE) -> dict[str, Any]:
        rid = req.get("id") if isinstance(req, dict) else None
        op = OPS.get(str(req.get("op"))) if isinstance(req, dict) else None
        if op is None:
            return {"id": rid, "ok": False, "error": f"unknown op (expected {', '.join(OPS)})"}
        if lane == DEMO_LANE:
            heavy = req.get("op") == "demo" or bool(req.get("warm"))
            if rid in self._cancelled or (self.closing and heavy):
                self._cancelled.discard(rid)  # cancelled before it started
                return {"id": rid, "ok": False, "cancelled": True, "error": "stopped"}
            self.current = rid  # what end of input stops (grading ends on its own)
        try:
            return {"id": rid, "ok": True, "result": op(self, req)}
        except Cancelled:
            return {"id": rid, "ok": False, "cancelled": True, "error": "stopped"}
        except Exception as exc:  # a bad request answers with its error; the worker lives on
            first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
            return {"id": rid, "ok": False, "error": first}
        finally:
            if lane == DEMO_LANE:
                self.current = None
            self._cancelled.discard(rid)


# --------------------------------------------------------------------------- loading


def _harness() -> Any:
    with _loading:
        if "harness" not in _state:
            start = time.perf_counter()
            from prep.demos import harness

            _state["harness"] = harness
            _state["import_seconds"] = round(time.perf_counter() - start, 2)
    return _state["harness"]


def _module(name: str) -> Any:
    if name not in DEMOS:
        raise ValueError(f"unknown demo {name!r}")
    _harness()
    return importlib.import_module(DEMOS[name].module)


def _real(device: Any) -> Any:
    """The shipped pretrained model on `device`, loaded once (demos only read it: those that
    change weights work on a copy)."""
    key = ("real", device.type)
    with _loading:
        if key not in _state:
            from prep.demos.pretrained import pretrained

            _state[key] = pretrained.load(None, device)
    return _state[key]


def _grader() -> Any:
    """The grader on the CPU copy of MiniLM (the one the real-* demos use on a CPU machine)."""
    with _loading:
        if "grader" not in _state:
            from prep.demos.pretrained.grader.batch import missing

            if hint := missing():
                raise RuntimeError(hint)
            start = time.perf_counter()
            harness = _harness()
            from prep.demos.pretrained.grader.model import Encoder, Grader

            encoder = Encoder(real=_real(harness.torch.device("cpu")))
            _state["grader"] = Grader(encoder=encoder)
            _state["grader_seconds"] = round(time.perf_counter() - start, 2)
    return _state["grader"]


# --------------------------------------------------------------------------- ops


def op_ping(worker: Worker, req: dict[str, Any]) -> dict[str, Any]:
    warm = req.get("warm")
    if warm == "grader":
        _grader()
    elif warm:
        harness = _harness()
        if isinstance(warm, str) and warm in DEMOS:
            module = _module(warm)
            if hasattr(module, "warm"):  # the distributed demos: their rank interpreters
                module.warm()
            if DEMOS[warm].weights == "pretrained" and extra.missing(None) is None:
                _real(harness.select_device(req.get("device", "auto")).device)
    return {
        "pid": os.getpid(),
        "torch": "harness" in _state,
        "import_seconds": _state.get("import_seconds"),
        "models": sorted(k[1] for k in _state if isinstance(k, tuple)),
        "grader": "grader" in _state,
        "grader_seconds": _state.get("grader_seconds"),
    }


def op_demo(worker: Worker, req: dict[str, Any]) -> dict[str, Any]:
    name = req.get("name")
    if name not in DEMOS:
        raise ValueError(f"unknown demo {name!r} (one of {', '.join(names())})")
    real = DEMOS[name].weights == "pretrained"
    if real and (hint := extra.missing(None)):
        raise RuntimeError(hint)
    rid = req.get("id")

    def listener(event: str, payload: Any) -> None:
        worker.check_cancelled(rid)
        if event == "progress":
            worker.send({"id": rid, "event": "progress", "message": str(payload)})
        elif event == "check":
            section, check = payload
            worker.send({"id": rid, "event": "check", "section": section, "check": check.to_dict()})
        elif event == "checks":
            section, checks = payload
            worker.send(
                {
                    "id": rid,
                    "event": "checks",
                    "section": section,
                    "checks": [c.to_dict() for c in checks],
                }
            )

    with _harness().listening(listener):
        harness = _state["harness"]
        if "import_seconds" in _state and not _state.get("told_import"):
            _state["told_import"] = True
            listener("progress", f"torch imported in {_state['import_seconds']} s")
        from prep.demos._torch import set_threads

        set_threads()
        module = _module(name)
        choice = harness.select_device(req.get("device", "auto"))
        scale, seed = req.get("scale", "small"), int(req.get("seed", 0))
        if real:
            model = _real(choice.device)
            with _minilm:
                report = module.run(scale=scale, device=choice, seed=seed, real=model)
        else:
            report = module.run(scale=scale, device=choice, seed=seed)
    return report.to_dict()


def op_grade(worker: Worker, req: dict[str, Any]) -> dict[str, Any]:
    from prep.demos.pretrained.grader.rubric import Rubric

    rubric = Rubric.from_dict(req["rubric"])
    answer = req.get("answer")
    if not isinstance(answer, str):
        raise ValueError("'answer' must be text")
    grader = _grader()
    from prep.demos._torch import set_threads

    set_threads()
    with _minilm:
        return grader.grade(rubric, answer).to_dict()


def op_cancel(worker: Worker, req: dict[str, Any]) -> dict[str, Any]:
    worker.cancel(req.get("target"))
    return {"target": req.get("target")}


OPS: dict[str, Callable[[Worker, dict[str, Any]], Any]] = {
    "ping": op_ping,
    "demo": op_demo,
    "grade": op_grade,
    "cancel": op_cancel,
}


def lane_of(req: Any) -> str:
    """Grading requests (and the ping that warms the grader) run in the grading lane."""
    if isinstance(req, dict) and (
        req.get("op") == "grade" or (req.get("op") == "ping" and req.get("warm") == "grader")
    ):
        return GRADE_LANE
    return DEMO_LANE


# --------------------------------------------------------------------------- memory

M_TRIM_THRESHOLD = -1  # glibc's malloc.h
M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD = 256 * 1024 * 1024  # blocks below this come from the heap and are reused
TRIM_THRESHOLD = 1024 * 1024 * 1024  # the heap's free top is kept up to this much


def keep_freed_memory() -> bool:
    """Keep freed memory for reuse instead of handing it back (issue 26): glibc's mmap and trim
    thresholds raised for this process; True when it took effect (False elsewhere: another
    libc, macOS, Windows).

    glibc's malloc serves a large block (above a threshold that adapts up to 32 MiB) with its own
    mmap and gives it back to the kernel when freed, and trims the heap's top once it holds more
    than twice that threshold. A demo run frees and allocates the same few sizes thousands of times
    ((2352, 1536) float32 activations of a replay are 14 MiB each), so every fresh block was
    zero-filled page by page by the kernel again: ~115,000 minor page faults and ~0.25 CPU-s of a
    2.6 CPU-s real-importance run in the worker. With the thresholds raised the heap keeps what
    it has and reuses it (faults a run: ~115,000 -> ~500): the worker's memory stays at its high-
    water mark, which it reaches on the first run anyway. Only the worker (the app's one long-
    lived torch process) calls this; results are unchanged (which memory a tensor sits in does not change its
    numbers).
    """
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):  # musl has no mallopt
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    mmap_ok = mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD) or mallopt(M_MMAP_THRESHOLD, 32 << 20)
    return bool(mmap_ok) and bool(mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD))


# --------------------------------------------------------------------------- serving


def serve(stdin: TextIO, stdout: TextIO) -> None:
    """Answer requests until end of input. One reader loop takes every line: `cancel` at once
    (so a demo can be stopped while it runs, or before it starts), grading to the grading lane
    (its own thread), the rest to the demo lane (here); each lane in order."""
    worker = Worker(stdout)
    lanes: dict[str, queue.Queue[Any]] = {DEMO_LANE: queue.Queue(), GRADE_LANE: queue.Queue()}

    def read() -> None:
        for line in stdin:
            if not line.strip():
                continue
            try:
                req = json.loads(line)
            except ValueError:
                worker.send({"id": None, "ok": False, "error": "not a JSON object"})
                continue
            if isinstance(req, dict) and req.get("op") == "cancel":
                worker.send(worker.handle(req, lane="cancel"))
            else:
                lanes[lane_of(req)].put(req)
        # the front end is gone: stop the demo that runs, start no other (each still gets
        # its one answer line); grading answers what it has, in milliseconds each
        worker.closing = True
        worker.cancel(worker.current)
        for todo in lanes.values():
            todo.put(None)

    def run(lane: str) -> None:
        todo = lanes[lane]
        while (req := todo.get()) is not None:
            worker.send(worker.handle(req, lane=lane))

    grading = threading.Thread(target=run, args=(GRADE_LANE,), daemon=True)
    grading.start()
    threading.Thread(target=read, daemon=True).start()
    run(DEMO_LANE)
    grading.join()


def main() -> int:
    out = sys.stdout
    sys.stdout = sys.stderr  # library chatter must never corrupt the protocol
    keep_freed_memory()  # a run reuses the heap instead of faulting fresh pages in
    ranks.keep_warm()  # the distributed demos' rank interpreters live as long as the worker
    try:
        serve(sys.stdin, out)
    finally:
        ranks.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
