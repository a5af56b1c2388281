"""The model worker: one long-lived process that holds the torch side for the TUI.

    python -m prep.demos.pretrained.grader.worker

It speaks JSON lines on stdin/stdout, one request and one response a line, matched by `id`:

    {"id": 1, "op": "ping"}                          -> {"id": 1, "ok": true, "result": {...}}
    {"id": 2, "op": "grade", "rubric": {...}, "answer": "..."}
                                                    -> {"id": 2, "ok": true, "result": Grade}
    {"id": 3, "op": "nope"}                          -> {"id": 3, "ok": false, "error": "..."}

Requests run in order. The grader loads on the first request that needs it (the TUI sends a
`ping` with "warm": true as soon as it starts, so the load happens while the learner reads the
card). A new op is one function in OPS (the demo runner can be routed through here the same
way). stdout carries nothing but responses; anything else the libraries print goes to stderr.
End of input ends the worker.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from typing import Any, TextIO

from prep.demos.pretrained.grader.batch import missing
from prep.demos.pretrained.grader.rubric import Rubric

_state: dict[str, Any] = {}


def _grader() -> Any:
    if "grader" not in _state:
        hint = missing()
        if hint:
            raise RuntimeError(hint)
        from prep.demos.pretrained.grader.model import Grader

        start = time.perf_counter()
        _state["grader"] = Grader()
        _state["load_seconds"] = round(time.perf_counter() - start, 2)
    return _state["grader"]


def op_ping(req: dict[str, Any]) -> dict[str, Any]:
    if req.get("warm"):
        _grader()
    return {
        "grader": missing() is None,
        "loaded": "grader" in _state,
        "load_seconds": _state.get("load_seconds"),
        "hint": missing(),
    }


def op_grade(req: dict[str, Any]) -> dict[str, Any]:
    rubric = Rubric.from_dict(req["rubric"])
    answer = req.get("answer")
    if not isinstance(answer, str):
        raise ValueError("'answer' must be text")
    return _grader().grade(rubric, answer).to_dict()


OPS: dict[str, Callable[[dict[str, Any]], Any]] = {"ping": op_ping, "grade": op_grade}


def handle(line: str) -> dict[str, Any]:
    try:
        req = json.loads(line)
    except ValueError:
        return {"id": None, "ok": False, "error": "not a JSON object"}
    rid = req.get("id") if isinstance(req, dict) else None
    op = OPS.get(req.get("op")) if isinstance(req, dict) else None
    if op is None:
        return {"id": rid, "ok": False, "error": f"unknown op (expected {', '.join(OPS)})"}
    try:
        return {"id": rid, "ok": True, "result": op(req)}
    except Exception as exc:  # a bad request answers with its error; the worker lives on
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        return {"id": rid, "ok": False, "error": first}


def serve(stdin: TextIO, stdout: TextIO) -> None:
    for line in stdin:
        if line.strip():
            stdout.write(json.dumps(handle(line)) + "\n")
            stdout.flush()


def main() -> int:
    out = sys.stdout
    sys.stdout = sys.stderr  # library chatter must never corrupt the protocol
    serve(sys.stdin, out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
