"""A kill -9 in the middle of a --plain session loses no committed review."""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

from prep.engine.store import Store


class Reader:
    """Reads a child's stdout without blocking forever; markers are searched past the last one."""

    def __init__(self, proc: subprocess.Popen) -> None:
        self.proc, self.text, self.pos = proc, "", 0

    def until(self, marker: str, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        fd = self.proc.stdout.fileno()
        while marker not in self.text[self.pos :]:
            left = deadline - time.monotonic()
            if left <= 0:
                self.proc.kill()
                raise AssertionError(f"timed out waiting for {marker!r}; got:\n{self.text}")
            ready, _, _ = select.select([fd], [], [], left)
            if ready:
                chunk = os.read(fd, 4096).decode()
                assert chunk, f"process ended before {marker!r}; got:\n{self.text}"
                self.text += chunk
        self.pos = self.text.index(marker, self.pos) + len(marker)


def test_kill_9_mid_session_keeps_every_saved_rating(small_deck_dir: Path, db_path: Path) -> None:
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "prep.tui.cli",
            "--db",
            str(db_path),
            "--questions",
            str(small_deck_dir),
        ]
        + ["quiz", "--plain", "--deck", "small"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    out = Reader(proc)
    try:
        for keys in ("\n3\n", "b\n\n"):
            out.until("q quits): ")
            proc.stdin.write(keys.encode())
            proc.stdin.flush()
            out.until("Saved: ")
        out.until("Press Enter to reveal")  # the third card is on screen, mid-session
        proc.stdin.write(b"\n")  # revealed, not rated
        proc.stdin.flush()
        out.until("Rate 1-4")
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == -signal.SIGKILL
    with Store.open(db_path) as store:
        assert [(r.card_id, r.rating) for r in store.reviews()] == [("roles", 3), ("pick-one", 3)]
        assert store.card("roles").reps == 1 and store.card("roles-follow") is None
        assert store.conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
