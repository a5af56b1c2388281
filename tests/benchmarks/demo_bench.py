"""Demo latency as a learner waits for it: key -> result, from the app's side.

    python tests/benchmarks/demo_bench.py [--demos dla real-per-head-sum | --all] [--runs 3]
                                          [--no-before]

Per demo, three ways, interleaved on the same machine:
- before: a fresh `python -m prep.demos NAME --json` per run (what the app did until issue 26);
- worker, 1st run: the app's demo worker started cold (torch imported, the model loaded) and
  the demo run at once -- the worst case: the key pressed before the background warm-up is done;
- worker, again: the next runs in the same worker (what every later key press costs).
The floor beside them is the demo's own compute as the report times it (the worker's runs), and
the worker's CPU seconds for a run (the work itself, less sensitive than wall time to other work
on the machine; the distributed demos' rank processes are not in it). --all: every demo of the
registry. Nothing asserts; the load average is printed with each row.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from prep.demos.registry import names
from prep.tui.worker import WorkerClient


def subprocess_run(name: str) -> float:
    t = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "prep.demos", name, "--json"], capture_output=True, check=False
    )
    return time.perf_counter() - t


def cpu_seconds(pid: int | None) -> float:
    """CPU seconds (user + system) the process has used so far (Linux; NaN elsewhere). Less
    sensitive to other work on the machine than wall time: the work itself, not the wait."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        fields = stat.rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return float("nan")


def worker_runs(name: str, runs: int) -> tuple[float, list[float], list[float], list[float]]:
    """(first key -> result on a cold worker, later key -> results, the reports' seconds, the
    worker's CPU seconds for each later run)."""
    worker = WorkerClient()
    try:
        times, computes, cpus = [], [], []
        for _ in range(runs + 1):
            t, c = time.perf_counter(), cpu_seconds(worker.pid)
            report = worker.request("demo", name=name).result(timeout=900)
            times.append(time.perf_counter() - t)
            cpus.append(cpu_seconds(worker.pid) - c)
            computes.append(float(report["seconds"]))
        return times[0], times[1:], computes[1:], cpus[1:]
    finally:
        worker.close()


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--demos", nargs="+", default=["dla", "real-per-head-sum"])
    parser.add_argument("--all", action="store_true", help="every demo of the registry")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument(
        "--no-before", action="store_true", help="skip the fresh-process column (the slowest)"
    )
    args = parser.parse_args()
    demos = names() if args.all else args.demos
    print(f"demo latency, key -> result (load average {os.getloadavg()[0]:.1f} at the start)")
    print(
        f"{'demo':<22} {'before':>9} {'worker 1st':>11} {'again':>8} {'compute':>8} "
        f"{'cpu':>7} {'load':>5}"
    )
    for name in demos:
        before = (
            float("nan")
            if args.no_before
            else statistics.median(subprocess_run(name) for _ in range(max(1, args.runs // 2)))
        )
        first, again, compute, cpu = worker_runs(name, args.runs)
        shown = "       -" if args.no_before else f"{before:>8.2f}s"
        print(
            f"{name:<22} {shown} {first:>10.2f}s {statistics.median(again):>7.2f}s "
            f"{statistics.median(compute):>7.2f}s {statistics.median(cpu):>6.2f}s "
            f"{os.getloadavg()[0]:>5.1f}",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
