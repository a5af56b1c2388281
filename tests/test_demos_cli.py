"""`prep.demos.cli.main` and `python -m prep.demos`: exit codes, JSON, recording, import weight."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from prep.demos import cli
from prep.demos._torch import torch
from prep.demos.registry import names


def run_module(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "prep.demos", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PREP_DB": ""},
    )


def test_subprocess_json_run_passes() -> None:
    proc = run_module("block-diagonal", "--json", "--device", "cpu")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.strip().splitlines()
    assert len(lines) == 1, "--json prints exactly one JSON object"
    data = json.loads(lines[0])
    assert data["name"] == "block-diagonal" and data["passed"] is True
    assert data["device"] == "cpu" and data["scale"] == "small" and data["seed"] == 0
    assert all(c["passed"] for c in data["checks"] + data["contrast"])
    assert "Traceback" not in proc.stderr


def test_json_and_human_output_agree(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["cross-head-mixing", "--json", "--device", "cpu", "--seed", "2"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert cli.main(["cross-head-mixing", "--device", "cpu", "--seed", "2"]) == 0
    human = capsys.readouterr().out
    for c in data["checks"] + data["contrast"]:
        mark = "PASS" if c["passed"] else "FAIL"
        assert f"{mark}  [{c['kind']}] {c['name']}" in human
    assert human.count("PASS  ") == len(data["checks"]) + len(data["contrast"])
    assert data["claim"].split()[0] in human and "seed 2" in human


def test_failing_check_exits_1_and_teaches(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from prep.demos import harness
    from prep.demos.synthetic import block_diagonal

    def broken(setup):
        return [harness.Check("max |write outside slice|", 0.5, "== 0.0", False, "dense W_O?")]

    monkeypatch.setattr(block_diagonal, "check", broken)
    assert cli.main(["block-diagonal", "--device", "cpu"]) == 1
    out = capsys.readouterr().out
    assert "FAIL  [identity] max |write outside slice|" in out and "hint: dense W_O?" in out
    assert cli.main(["block-diagonal", "--device", "cpu", "--json"]) == 1
    assert json.loads(capsys.readouterr().out)["passed"] is False


def test_unknown_name_exits_2_with_suggestion(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["block-diagonl"]) == 2
    err = capsys.readouterr().err
    assert "did you mean block-diagonal" in err and len(err.strip().splitlines()) == 1


def test_unknown_name_in_subprocess() -> None:
    proc = run_module("ov-ranks")
    assert proc.returncode == 2
    assert "ov-rank" in proc.stderr and "Traceback" not in proc.stderr


@pytest.mark.skipif(torch.cuda.is_available(), reason="cuda is available here")
def test_device_cuda_without_cuda_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["per-head-sum", "--device", "cuda"]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "cuda" in err
    assert "Traceback" not in err


@pytest.mark.parametrize(
    "argv",
    [["per-head-sum", "--scale", "huge"], ["per-head-sum", "--seed", "x"], [], ["--list", "extra"]],
)
def test_usage_errors_exit_2(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(argv) == 2
    assert capsys.readouterr().err.strip()


def test_help_exits_0(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["--help"]) == 0
    assert "--device" in capsys.readouterr().out


def test_list_shows_every_demo_and_cards(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["--list"], linked_cards=lambda n: [f"card-{n}"]) == 0
    out = capsys.readouterr().out
    for name in names():
        assert name in out and f"card-{name}" in out
    assert cli.main(["--list"]) == 0
    assert "backs cards" not in capsys.readouterr().out


def test_cards_line_only_with_linked_cards(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["per-head-sum", "--device", "cpu"], linked_cards=lambda n: ["a", "b"]) == 0
    assert "backs cards: a, b" in capsys.readouterr().out
    assert cli.main(["per-head-sum", "--device", "cpu"]) == 0
    assert "backs cards" not in capsys.readouterr().out


def test_large_on_cpu_prints_a_note(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from prep.demos.synthetic import per_head_sum

    monkeypatch.setitem(per_head_sum.SCALES, "large", per_head_sum.SCALES["small"])
    assert cli.main(["per-head-sum", "--scale", "large", "--device", "cpu", "--json"]) == 0
    captured = capsys.readouterr()
    assert "meant for a GPU" in captured.err
    assert json.loads(captured.out)["scale"] == "large"


def test_run_hands_back_the_report_it_printed(capsys) -> None:
    code, report = cli.run(["per-head-sum", "--device", "cpu", "--json"])
    data = json.loads(capsys.readouterr().out)
    assert code == 0 and report is not None and report.passed
    assert report.to_dict()["checks"] == data["checks"]
    assert cli.run(["--list"]) == (0, None) and cli.run(["nope"])[1] is None


def test_registry_and_cli_import_without_torch() -> None:
    code = (
        "import sys, prep.demos.registry, prep.demos.cli\n"
        "assert 'torch' not in sys.modules, 'registry/cli imported torch'\n"
        "assert prep.demos.cli.main(['--list']) == 0\n"
        "assert 'torch' not in sys.modules, '--list imported torch'\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
