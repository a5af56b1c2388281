"""End to end: the real `prep` (bundled decks plus a test deck) in tmux, driven with send-keys and
read with capture-pane; the review it stores is checked in the database afterwards."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from prep.engine.store import Store
from prep.tui.testing import write_decks

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed"),
]


def test_real_prep_in_tmux(tmp_path: Path) -> None:
    prep = Path(sys.executable).parent / "prep"
    assert prep.exists(), prep
    decks = write_decks(tmp_path / "decks")
    db = tmp_path / "prep.db"
    sock_dir = Path(tempfile.mkdtemp(prefix="prep-tmux-"))  # socket paths must be short
    tmux = ["tmux", "-S", str(sock_dir / "s"), "-f", "/dev/null"]

    def pane() -> str:
        out = subprocess.run(
            [*tmux, "capture-pane", "-p", "-t", "e2e"], capture_output=True, text=True
        )
        return out.stdout

    def wait_for(what: Callable[[str], bool], label: str, timeout: float = 60) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            screen = pane()
            if what(screen):
                return screen
            time.sleep(0.1)
        raise AssertionError(f"timed out waiting for {label}; the pane shows:\n{pane()}")

    def keys(*names: str) -> None:
        subprocess.run([*tmux, "send-keys", "-t", "e2e", *names], check=True)

    command = f"env PREP_DB={db} TERM=xterm-256color {prep} --questions {decks}"
    subprocess.run(
        [*tmux, "new-session", "-d", "-s", "e2e", "-x", "100", "-y", "30", command], check=True
    )
    try:
        # `prep` opens on the first card; Esc goes home, Enter there starts again
        wait_for(lambda s: "learning" in s and "Show answer" in s, "the first card")
        keys("Space")
        wait_for(lambda s: "Again" in s and "Good" in s, "the rating bar")
        keys("3")
        wait_for(lambda s: "Saved: Good" in s, "the next card")
        keys("Escape")
        wait_for(lambda s: "All decks" in s and "Enter" in s, "the home screen")
        keys("Enter")
        wait_for(lambda s: "Show answer" in s and "All decks" not in s, "a card again")
        keys("q")
        deadline = time.monotonic() + 30
        while (
            subprocess.run([*tmux, "has-session", "-t", "e2e"], capture_output=True).returncode == 0
        ):
            assert time.monotonic() < deadline, "prep did not quit"
            time.sleep(0.1)
    finally:
        subprocess.run([*tmux, "kill-server"], capture_output=True)
        shutil.rmtree(sock_dir, ignore_errors=True)
    with Store.open(db) as store:
        stored = store.reviews()
    assert len(stored) == 1 and stored[0].rating == 3
