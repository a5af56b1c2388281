"""`prep serve --host ""` (a `--host "$HOST"` with HOST unset) is refused in one line: the empty
address listened on every network, behind a warning that read "listening on : anyone ..."."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.test_serve import free_port, prep_executable


@pytest.mark.parametrize("host", ["", " "])
def test_an_empty_host_is_refused(tmp_path: Path, host: str) -> None:
    server = subprocess.Popen(
        [*prep_executable(), "--db", str(tmp_path / "p.db"), "serve", "--host", host]
        + ["--port", str(free_port())],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        out, err = server.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        server.kill()
        out, err = server.communicate()
        pytest.fail(f"prep serve --host {host!r} is listening: {out}{err}")
    assert server.returncode == 2, (out, err)
    assert err.startswith("prep: --host: an empty address would listen on every network")
    assert len(err.strip().splitlines()) == 1 and "token=" not in out
