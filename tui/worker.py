"""The TUI's side of the worker (prep.demos.worker): one long-lived subprocess that holds torch
for the demos and the grader, spoken to in JSON lines. Torch-free: the TUI never imports torch.

`WorkerClient.request(op, on_event=None, **fields)` returns a concurrent.futures.Future at once;
one reader thread calls `on_event(message)` for each streamed event of that request (a demo's
progress and checks) and resolves the Future with the final answer. Callers never wait on the UI
thread. The process starts on the first request (or `warm()`), lives for the app's session, and
`close()` ends it; a worker that dies fails every pending request with one line, and the next
request starts a fresh one. `cancel(fut)` stops a running demo; grading goes on.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import subprocess
import sys
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

DEFAULT_COMMAND = (sys.executable, "-m", "prep.demos.worker")

Event = Callable[[dict[str, Any]], None]


class WorkerError(Exception):
    """The worker answered with an error, or is gone; the message is one line. ``cancelled``:
    the request was stopped on purpose (the demo screen's Esc), not failed."""

    def __init__(self, message: str, *, cancelled: bool = False) -> None:
        super().__init__(message)
        self.cancelled = cancelled


def end_process(proc: subprocess.Popen[Any]) -> None:
    """End a worker process: close its stdin (it exits when it has answered what it has),
    and kill it when it has not within 2 s."""
    try:
        if proc.stdin:
            proc.stdin.close()
        proc.wait(timeout=2)
    except (OSError, subprocess.TimeoutExpired):
        proc.kill()
        proc.wait()


class WorkerClient:
    """The client of the one worker process: demos and grading share it (and its MiniLM)."""

    def __init__(self, command: tuple[str, ...] | list[str] = DEFAULT_COMMAND) -> None:
        self.command = list(command)
        self._proc: subprocess.Popen[str] | None = None
        self._pending: dict[int, tuple[Future[Any], Event | None]] = {}
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        self._closed = False
        self._warmed: set[str] = set()
        self.starts = 0  # processes started this session (1 while it stays alive)

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self.running and self._proc is not None else None

    def start(self) -> None:
        with self._lock:
            if self.running or self._closed:
                return
            # the app records runs in its own database; the worker records nothing
            env = {k: v for k, v in os.environ.items() if k != "PREP_DB"}
            env.update(PYTHONUNBUFFERED="1", TOKENIZERS_PARALLELISM="false")
            self._proc = subprocess.Popen(
                self.command,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                text=True,
                encoding="utf-8",
                bufsize=1,
                env=env,
            )
            self.starts += 1
            threading.Thread(target=self._read, args=(self._proc,), daemon=True).start()

    def warm(self, demo: str | None = None) -> None:
        """Start the worker and let it import torch (and `demo`'s module and model; "grader":
        the grader and MiniLM) in the background, once each; returns at once."""
        key = demo or ""
        if self._closed or key in self._warmed:
            return
        self._warmed.add(key)
        self.request("ping", warm=demo or True)

    def request(self, op: str, on_event: Event | None = None, **fields: Any) -> Future[Any]:
        """Send one request; the Future holds the `result`, or raises WorkerError."""
        fut: Future[Any] = Future()
        if self._closed:
            fut.set_exception(WorkerError("the worker is closed"))
            return fut
        try:
            self.start()
        except OSError as exc:
            fut.set_exception(WorkerError(f"cannot start {self.command[0]}: {exc}"))
            return fut
        rid = next(self._ids)
        line = json.dumps({"id": rid, "op": op, **fields}) + "\n"
        with self._lock:
            self._pending[rid] = (fut, on_event)
            proc = self._proc
        fut.request_id = rid  # type: ignore[attr-defined]
        try:
            assert proc is not None and proc.stdin is not None
            proc.stdin.write(line)
            proc.stdin.flush()
        except (OSError, ValueError, AssertionError):
            self._fail_all("the worker stopped")
        return fut

    def cancel(self, fut: Future[Any]) -> None:
        """Ask the worker to stop the request behind `fut` (it answers 'cancelled')."""
        rid = getattr(fut, "request_id", None)
        with self._lock:  # still unanswered (fut itself may be cancelled by asyncio already)
            pending = rid in self._pending
        if pending and self.running:
            self.request("cancel", target=rid)

    def _read(self, proc: subprocess.Popen[str]) -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            try:
                msg = json.loads(line)
            except ValueError:
                continue
            if not isinstance(msg, dict):
                continue
            rid: Any = msg.get("id")
            if "event" in msg:
                with self._lock:
                    entry = self._pending.get(rid)
                if entry is not None and entry[1] is not None:
                    with contextlib.suppress(Exception):  # a listener's slip must not stop
                        entry[1](msg)  # the reader
                continue
            with self._lock:
                entry = self._pending.pop(rid, None)
            if entry is None or entry[0].done():
                continue
            if msg.get("ok"):
                entry[0].set_result(msg.get("result"))
            else:
                error = str(msg.get("error", "the worker failed"))
                entry[0].set_exception(WorkerError(error, cancelled=bool(msg.get("cancelled"))))
        code = proc.wait()
        with self._lock:
            if self._proc is proc:
                self._proc = None
            self._warmed.clear()
        self._fail_all(f"the worker stopped (exit {code})")

    def _fail_all(self, why: str) -> None:
        with self._lock:
            pending, self._pending = self._pending, {}
        for fut, _ in pending.values():
            if not fut.done():
                fut.set_exception(WorkerError(why))

    def close(self) -> None:
        """End the worker (its stdin closes: it stops what runs and exits)."""
        with self._lock:
            self._closed = True
            proc, self._proc = self._proc, None
        if proc is None:
            return
        end_process(proc)
        self._fail_all("the worker is closed")
