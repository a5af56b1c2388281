"""The rank processes of the distributed demos (tensor-parallel, sequence-parallel).

Every run starts `world_size` ranks that join a fresh process group on a free loopback port,
do their part and the collectives for real, write their result to the run's exchange folder and
leave the group. Two ways to have those processes:

- fresh interpreters (`python -m MODULE ARGS...`, as torchrun starts them): what `prep demo` does,
  one process per rank per run; each pays for starting Python and importing torch (~1.3 s).
- kept ranks (`keep_warm()`, the app's demo worker): `world_size` interpreters that imported
  torch once and then run one rank job after another, each in a new process group that is
  destroyed at its end. Nothing but the interpreter is reused: the inputs are read, the group
  joined and the collectives run every time. A rank that times out is killed and replaced.

Each demo module provides `rank_main(argv)`, the rank's work for the argument list it would get
on a fresh interpreter's command line; its output (and a crash's traceback) goes to the log
file the run names. Torch-free at import: the app's worker imports this to turn kept ranks on.

    python -m prep.demos.synthetic.ranks    (a kept rank: JSON jobs on stdin, exit codes out)
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import subprocess
import sys
import threading
import time
import traceback
from pathlib import Path
from typing import Any

_keep = False
_kept: list[subprocess.Popen[str]] = []
_lock = threading.Lock()


def keep_warm(on: bool = True) -> None:
    """Keep rank interpreters between runs in this process (the demo worker turns it on)."""
    global _keep
    _keep = on
    if not on:
        close()


def _alive(proc: subprocess.Popen[str]) -> bool:
    return proc.poll() is None


def _start_kept(env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", __name__],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        bufsize=1,
        env=env,
    )


def warm(world_size: int, env: dict[str, str]) -> None:
    """Have `world_size` kept ranks started (they import torch in the background); no-op unless
    keep_warm() is on."""
    if not _keep:
        return
    with _lock:
        _kept[:] = [p for p in _kept if _alive(p)]
        while len(_kept) < world_size:
            _kept.append(_start_kept(env))


def close() -> None:
    """End every kept rank (their stdin closes; they exit)."""
    with _lock:
        kept, _kept[:] = list(_kept), []
    for proc in kept:
        with contextlib.suppress(OSError):
            if proc.stdin:
                proc.stdin.close()
        try:
            proc.wait(timeout=2)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def run(
    module: str,
    rank_args: list[list[str]],
    folder: Path,
    env: dict[str, str],
    timeout: float,
) -> list[int | None]:
    """Run `module`'s rank_main once per rank (rank r with rank_args[r]), its output logged to
    folder/rank{r}.log; wait up to `timeout` s in all. Returns each rank's exit code (None: it
    did not finish in time and was killed). Raises OSError if a rank cannot be started."""
    if _keep:
        return _run_kept(module, rank_args, folder, env, timeout)
    return _run_fresh(module, rank_args, folder, env, timeout)


def _run_fresh(
    module: str, rank_args: list[list[str]], folder: Path, env: dict[str, str], timeout: float
) -> list[int | None]:
    procs: list[subprocess.Popen[bytes]] = []
    logs = []
    try:
        for r, args in enumerate(rank_args):
            log = open(folder / f"rank{r}.log", "wb")  # noqa: SIM115 closed below
            logs.append(log)
            cmd = [sys.executable, "-m", module, *args]
            procs.append(subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env))
        for p in procs:
            try:
                p.wait(timeout)
            except subprocess.TimeoutExpired:
                break
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait(5)
        for log in logs:
            log.close()
    return [p.returncode for p in procs]


def _run_kept(
    module: str, rank_args: list[list[str]], folder: Path, env: dict[str, str], timeout: float
) -> list[int | None]:
    world = len(rank_args)
    warm(world, env)
    with _lock:
        ranks, _kept[:] = _kept[:world], _kept[world:]
    codes: list[int | None] = [None] * world
    try:
        for r, (proc, args) in enumerate(zip(ranks, rank_args, strict=True)):
            job = {"module": module, "args": args, "log": str(folder / f"rank{r}.log")}
            assert proc.stdin is not None
            proc.stdin.write(json.dumps(job) + "\n")
            proc.stdin.flush()

        def answer(r: int) -> None:
            out = ranks[r].stdout
            line = out.readline() if out is not None else ""
            codes[r] = int(line) if line.strip().lstrip("-").isdigit() else None

        readers = [threading.Thread(target=answer, args=(r,), daemon=True) for r in range(world)]
        for t in readers:
            t.start()
        deadline = time.monotonic() + timeout  # the ranks run at the same time
        for t in readers:
            t.join(max(0.0, deadline - time.monotonic()))
    except OSError:
        codes = [None] * world
    finally:
        for r, proc in enumerate(ranks):
            if codes[r] is None and _alive(proc):
                proc.kill()  # stuck in a collective or gone: never reused
                proc.wait(5)
        with _lock:  # the ones that answered serve the next run
            _kept[:0] = [p for r, p in enumerate(ranks) if codes[r] is not None and _alive(p)]
    return codes


# --------------------------------------------------------------------------- a kept rank


def serve() -> int:
    """Import torch once, then run one rank job a line until end of input."""
    proto = os.fdopen(os.dup(1), "w", buffering=1)  # answers go here; fd 1/2 go to each job's log
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    from prep.demos._torch import torch  # noqa: F401 (the point of a kept rank)

    for line in sys.stdin:
        job: Any = json.loads(line)
        code = 0
        with open(job["log"], "wb") as log:
            os.dup2(log.fileno(), 1)
            os.dup2(log.fileno(), 2)
            try:
                importlib.import_module(job["module"]).rank_main(list(job["args"]))
            except BaseException:  # noqa: BLE001 (the log says what; the parent reads it)
                traceback.print_exc()
                code = 1
            finally:
                sys.stdout.flush()
                sys.stderr.flush()
                os.dup2(devnull, 1)
                os.dup2(devnull, 2)
        proto.write(f"{code}\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(serve())
