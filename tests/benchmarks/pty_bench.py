"""The TUI's first card as a user sees it: prep's real command line in a pseudo-terminal,
timed from exec until the card's prompt text is on the screen, beside a minimal Textual app
timed the same way in the same run (interleaved pairs, medians).

    python tests/benchmarks/pty_bench.py [--repeat 7] [--db DB --questions DIR --marker TEXT]

Without --db: the bundled decks in a fresh database (the warm-up run fills its deck cache).
anki_bench.py calls ``tui_vs_floor`` on its generated collections. Goal (issue 26): <= 1.3x
the floor at every size.
"""

from __future__ import annotations

import argparse
import fcntl
import os
import pty
import select
import signal
import statistics
import struct
import sys
import tempfile
import termios
import time
from pathlib import Path

PREP = str(Path(sys.executable).with_name("prep"))
FLOOR_MARK = "floor-ready-4f2a"
FLOOR = f"""
from textual.app import App
from textual.widgets import Footer, Static

class Floor(App):
    def compose(self):
        yield Static("{FLOOR_MARK}")
        yield Footer()

Floor().run()
"""


def _cpu_seconds(pid: int) -> float | None:
    """CPU seconds the process has used so far, all its threads (Linux; None elsewhere): the
    scheduler's nanosecond count of each thread (/proc/PID/task/*/schedstat), else user +
    system time in clock ticks (10 ms: a first card's ~0.25 s then reads as 0.24 or 0.25)."""
    try:
        total = 0
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/schedstat") as f:
                total += int(f.read().split()[0])
        return total / 1e9
    except (OSError, ValueError, IndexError):
        pass
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


def to_screen(cmd: list[str], marker: str, env: dict, timeout: float = 60.0) -> float:
    """Seconds from exec until ``marker`` has been written to the terminal (a 120x40 pty);
    then the process is ended (SIGTERM, then SIGKILL)."""
    return to_screen_cpu(cmd, marker, env, timeout)[0]


def to_screen_cpu(
    cmd: list[str], marker: str, env: dict, timeout: float = 60.0
) -> tuple[float, float | None]:
    """`to_screen`, and the CPU seconds the process had used by then: on a busy machine the
    wall time mostly measures the wait for a core; the CPU time is the work."""
    want = marker.encode()
    t = time.perf_counter()
    pid, fd = pty.fork()
    if pid == 0:  # the child: its stdin/stdout/stderr are the pty
        try:
            os.execvpe(cmd[0], cmd, env)
        finally:
            os._exit(127)
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
    seen = b""
    elapsed = None
    cpu = None
    try:
        while time.perf_counter() - t < timeout:
            ready, _, _ = select.select([fd], [], [], 0.5)
            if not ready:
                continue
            try:
                chunk = os.read(fd, 65536)
            except OSError:
                break  # the child ended
            if not chunk:
                break
            seen = seen[-len(want) :] + chunk
            if want in seen:
                elapsed = time.perf_counter() - t
                cpu = _cpu_seconds(pid)
                break
    finally:
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                break
            for _ in range(50):
                if os.waitpid(pid, os.WNOHANG)[0]:
                    break
                time.sleep(0.02)
            else:
                continue
            break
        os.close(fd)
    if elapsed is None:
        raise RuntimeError(f"{cmd[:4]}: {marker!r} never reached the screen")
    return elapsed, cpu


def pty_env() -> dict:
    env = {**os.environ, "TERM": "xterm-256color", "COLUMNS": "120", "LINES": "40"}
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # as installed (see anki_bench.prep_env)
    env.pop("PREP_QUESTIONS", None)
    return env


def tui_vs_floor(prep_cmd: list[str], marker: str, repeat: int) -> dict:
    """Medians of interleaved (prep, floor) pairs, after one warm-up of each: wall seconds
    (``tui``, ``floor``, ``ratio``) and CPU seconds (``tui_cpu``, ``floor_cpu``,
    ``cpu_ratio``, and the same of the first quartiles, ``*_q1``; none where /proc is not
    there)."""
    env = pty_env()
    floor = [sys.executable, "-c", FLOOR]
    to_screen(prep_cmd, marker, env)
    to_screen(floor, FLOOR_MARK, env)
    preps, floors = [], []
    for _ in range(repeat):
        preps.append(to_screen_cpu(prep_cmd, marker, env))
        floors.append(to_screen_cpu(floor, FLOOR_MARK, env))
    p, f = statistics.median(x[0] for x in preps), statistics.median(x[0] for x in floors)
    res: dict = {"tui": p, "floor": f, "ratio": p / f}
    if all(x[1] is not None for x in preps + floors):
        pc = statistics.median(x[1] for x in preps)  # type: ignore[misc]
        fc = statistics.median(x[1] for x in floors)  # type: ignore[misc]
        res.update(tui_cpu=pc, floor_cpu=fc, cpu_ratio=pc / fc if fc else None)
        # the quietest quarter of each: on a busy machine the medians move with the load
        pq = statistics.quantiles([x[1] for x in preps], n=4)[0]  # type: ignore[misc]
        fq = statistics.quantiles([x[1] for x in floors], n=4)[0]  # type: ignore[misc]
        res.update(tui_cpu_q1=pq, floor_cpu_q1=fq, cpu_ratio_q1=pq / fq if fq else None)
    return res


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--db")
    ap.add_argument("--questions")
    ap.add_argument("--marker", help="text of the first card's prompt (default: bundled's)")
    args = ap.parse_args()
    load = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp:
        db = args.db or str(Path(tmp) / "prep.db")
        cmd = [PREP, "--db", db]
        if args.questions:
            cmd += ["--questions", args.questions]
        marker = args.marker
        if marker is None:  # the first card's prompt, as --plain shows it
            import subprocess

            out = subprocess.run(
                [*cmd, "quiz", "--plain"], input="q\n", capture_output=True, text=True
            ).stdout.splitlines()
            marker = next(line for line in out[3:] if line.strip())[:40]
        res = tui_vs_floor([*cmd, "quiz"], marker, args.repeat)
    print(
        f"TUI first card in a pty (exec -> prompt on screen), load {load:.1f}: "
        f"prep {res['tui']:.2f} s, minimal Textual app {res['floor']:.2f} s, "
        f"{res['ratio']:.2f}x (goal <= 1.3x)"
    )
    if res.get("cpu_ratio"):
        print(
            f"  CPU used by then: prep {res['tui_cpu'] * 1e3:.1f} ms, minimal Textual app "
            f"{res['floor_cpu'] * 1e3:.1f} ms, {res['cpu_ratio']:.3f}x (first quartiles: "
            f"{res['tui_cpu_q1'] * 1e3:.1f} vs {res['floor_cpu_q1'] * 1e3:.1f} ms, "
            f"{res['cpu_ratio_q1']:.3f}x)"
        )


if __name__ == "__main__":
    main()
