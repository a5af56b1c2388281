"""The TUI's side of the model worker (prep.demos.pretrained.grader.worker): one long-lived subprocess
that holds torch, spoken to in JSON lines. Torch-free: the TUI never imports torch.

`WorkerClient.request(op, **fields)` returns a concurrent.futures.Future at once; a reader
thread resolves it when the worker's response arrives. Callers wait on it in a Textual thread
worker (never on the UI thread). The process starts on the first request (or `start()`), and
`close()` ends it; a worker that dies fails every pending request with one line.
"""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
import threading
from concurrent.futures import Future
from typing import Any

DEFAULT_COMMAND = (sys.executable, "-m", "prep.demos.pretrained.grader.worker")


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
    def __init__(self, command: tuple[str, ...] | list[str] = DEFAULT_COMMAND) -> None:
        self.command = list(command)
        self._proc: subprocess.Popen[str] | None = None
        self._pending: dict[int, Future[Any]] = {}
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        self._closed = False

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def start(self) -> None:
        with self._lock:
            if self.running or self._closed:
                return
            env = dict(os.environ, TOKENIZERS_PARALLELISM="false")
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
            threading.Thread(target=self._read, args=(self._proc,), daemon=True).start()

    def request(self, op: str, **fields: Any) -> Future[Any]:
        """Send one request; the Future holds the `result`, or raises WorkerError."""
        fut: Future[Any] = Future()
        if self._closed:
            fut.set_exception(WorkerError("the model worker is closed"))
            return fut
        self.start()
        rid = next(self._ids)
        line = json.dumps({"id": rid, "op": op, **fields}) + "\n"
        with self._lock:
            self._pending[rid] = fut
            proc = self._proc
        try:
            assert proc is not None and proc.stdin is not None
            proc.stdin.write(line)
            proc.stdin.flush()
        except (OSError, ValueError, AssertionError):
            self._fail_all("the model worker stopped")
        return fut

    def _read(self, proc: subprocess.Popen[str]) -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            try:
                msg = json.loads(line)
            except ValueError:
                continue
            with self._lock:
                fut = self._pending.pop(msg.get("id"), None)
            if fut is None or fut.done():
                continue
            if msg.get("ok"):
                fut.set_result(msg.get("result"))
            else:
                fut.set_exception(WorkerError(str(msg.get("error", "the worker failed"))))
        code = proc.wait()
        self._fail_all(f"the model worker stopped (exit {code})")

    def _fail_all(self, why: str) -> None:
        with self._lock:
            pending, self._pending = self._pending, {}
        for fut in pending.values():
            if not fut.done():
                fut.set_exception(WorkerError(why))

    def close(self) -> None:
        """End the worker (its stdin closes; it exits when it has answered what it has)."""
        with self._lock:
            self._closed = True
            proc, self._proc = self._proc, None
        if proc is None:
            return
        end_process(proc)
        self._fail_all("the model worker is closed")
