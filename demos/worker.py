"""The demo worker: one long-lived process that holds the torch side for the TUI.

    python -m prep.demos.worker

torch, each demo module and the model a demo needs are imported and loaded once, by the first
request that needs them, and then kept for the app's session: from the second run on, a demo
costs its own compute only. It still runs live every time; nothing is cached but code and
weights.

JSON lines on stdin/stdout, one request a line, answered by one final line matched by `id`
(the protocol of the grading worker, so one process can serve both: a new op is one function
in OPS):

    {"id": 1, "op": "ping", "warm": "dla"}     -> {"id": 1, "ok": true, "result": {...}}
    {"id": 2, "op": "demo", "name": "dla", "scale": "small", "device": "auto", "seed": 0}
        -> {"id": 2, "event": "progress", "message": "loading the shipped decoder"}
        -> {"id": 2, "event": "checks", "section": "claim", "checks": [{...}, ...]}
        -> {"id": 2, "event": "checks", "section": "contrast", "checks": [...]}
        -> {"id": 2, "ok": true, "result": {the Report as a dict}}
    {"id": 3, "op": "cancel", "target": 2}     -> demo 2 stops at its next progress point
                                                  and answers {"ok": false, "cancelled": true}
    {"id": 4, "op": "nope"}                    -> {"id": 4, "ok": false, "error": "..."}

`ping` with "warm": a demo name imports torch, that demo's module and its model (the app sends
it in the background when the first card with a demo is shown). Requests run one at a time, in
order; `cancel` is read while a demo runs. stdout carries nothing but these lines (library
chatter goes to stderr). End of input ends the worker.
"""

from __future__ import annotations

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

_state: dict[Any, Any] = {}  # "harness", loaded modules and models, timings


class Cancelled(Exception):
    """The front end asked to stop the demo that is running (the learner left its screen)."""


class Worker:
    def __init__(self, out: TextIO) -> None:
        self.out = out
        self._write_lock = threading.Lock()
        self._cancelled: set[Any] = set()
        self.current: Any = None

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

    def handle(self, req: Any) -> dict[str, Any]:
        rid = req.get("id") if isinstance(req, dict) else None
        op = OPS.get(str(req.get("op"))) if isinstance(req, dict) else None
        if op is None:
            return {"id": rid, "ok": False, "error": f"unknown op (expected {', '.join(OPS)})"}
        self.current = rid
        try:
            return {"id": rid, "ok": True, "result": op(self, req)}
        except Cancelled:
            return {"id": rid, "ok": False, "cancelled": True, "error": "stopped"}
        except Exception as exc:  # a bad request answers with its error; the worker lives on
            first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
            return {"id": rid, "ok": False, "error": first}
        finally:
            self.current = None
            self._cancelled.discard(rid)


# --------------------------------------------------------------------------- loading


def _harness() -> Any:
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
    if key not in _state:
        from prep.demos.pretrained import pretrained

        _state[key] = pretrained.load(None, device)
    return _state[key]


def threads_for_load(cores: int, load: float) -> int:
    """Torch's intra-op threads for one run: every core on a quiet machine, fewer as other work
    queues for them (on 2 busy cores, 2 threads ran the decoder demos 3x slower than 1)."""
    return max(1, min(cores, round(cores - load) + 1))


def _set_threads(torch: Any) -> int:
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cores = os.cpu_count() or 1
    try:
        load = os.getloadavg()[0]
    except OSError:
        load = 0.0
    n = threads_for_load(cores, load)
    torch.set_num_threads(n)
    return n


# --------------------------------------------------------------------------- ops


def op_ping(worker: Worker, req: dict[str, Any]) -> dict[str, Any]:
    warm = req.get("warm")
    if warm:
        harness = _harness()
        if isinstance(warm, str) and warm in DEMOS:
            _module(warm)
            if DEMOS[warm].weights == "pretrained" and extra.missing(None) is None:
                _real(harness.select_device(req.get("device", "auto")).device)
    return {
        "pid": os.getpid(),
        "torch": "harness" in _state,
        "import_seconds": _state.get("import_seconds"),
        "models": sorted(k[1] for k in _state if isinstance(k, tuple)),
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
        _set_threads(harness.torch)
        module = _module(name)
        choice = harness.select_device(req.get("device", "auto"))
        scale, seed = req.get("scale", "small"), int(req.get("seed", 0))
        if real:
            report = module.run(scale=scale, device=choice, seed=seed, real=_real(choice.device))
        else:
            report = module.run(scale=scale, device=choice, seed=seed)
    return report.to_dict()


def op_cancel(worker: Worker, req: dict[str, Any]) -> dict[str, Any]:
    worker.cancel(req.get("target"))
    return {"target": req.get("target")}


OPS: dict[str, Callable[[Worker, dict[str, Any]], Any]] = {
    "ping": op_ping,
    "demo": op_demo,
    "cancel": op_cancel,
}


# --------------------------------------------------------------------------- serving


def serve(stdin: TextIO, stdout: TextIO) -> None:
    """Answer requests until end of input. A reader thread takes `cancel` at once, so a demo can
    be stopped while it runs; everything else runs here, in order."""
    worker = Worker(stdout)
    todo: queue.Queue[Any] = queue.Queue()

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
                worker.send(worker.handle(req))
            else:
                todo.put(req)
        worker.cancel(worker.current)  # the front end is gone: stop what runs, drop the rest
        while not todo.empty():
            todo.get_nowait()
        todo.put(None)

    threading.Thread(target=read, daemon=True).start()
    while (req := todo.get()) is not None:
        worker.send(worker.handle(req))


def main() -> int:
    out = sys.stdout
    sys.stdout = sys.stderr  # library chatter must never corrupt the protocol
    serve(sys.stdin, out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
