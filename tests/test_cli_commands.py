"""The command line's table of contents (tui/cli.py's COMMANDS, click's lazy group): every
command's --help works, every command module is listed, and `prep --help` stays light."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from prep.tui.cli import COMMANDS, main

ROOT = Path(__file__).resolve().parent.parent
COMMANDS_DIR = ROOT / "tui" / "commands"


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_command_has_working_help(name: str) -> None:
    result = CliRunner().invoke(main, [name, "--help"])
    assert result.exit_code == 0, result.output
    assert f"Usage: main {name}" in result.output or f"Usage: prep {name}" in result.output
    first = result.output.split("\n\n")[1].strip()
    assert first, f"prep {name} has no help text"


def test_prep_help_lists_every_command_and_imports_neither_torch_nor_textual() -> None:
    code = (
        "import sys\n"
        "from prep.tui.cli import run\n"
        "try:\n"
        "    run(['--help'])\n"
        "except SystemExit:\n"
        "    pass\n"
        "heavy = [m for m in ('torch', 'textual', 'prep.tui.app') if m in sys.modules]\n"
        "print('HEAVY', heavy)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    ).stdout
    assert "HEAVY []" in out
    listed = out.split("Commands:")[1]
    for name in COMMANDS:
        assert f"\n  {name} " in listed, name


def test_every_command_module_is_in_the_table_and_the_table_names_real_commands() -> None:
    modules = {p.stem for p in COMMANDS_DIR.glob("*.py")} - {"__init__", "common"}
    listed = {target.split(":")[0].rsplit(".", 1)[1] for target in COMMANDS.values()}
    assert modules == listed
    for name, target in COMMANDS.items():
        command = main.get_command(None, name)  # type: ignore[arg-type]
        assert command is not None and command.name == name, target


def test_a_command_module_imports_only_click_and_the_shared_module_at_its_top() -> None:
    """What a command needs (the store, the decks, textual, torch) is imported when it runs:
    listing the commands in `prep --help` imports every command module."""
    allowed = {"__future__", "click", "prep.tui.commands", "prep.tui.commands.common"}
    allowed.add("prep.tui.entry")  # (the console script's: the standard library at its top)
    allowed.add("prep.engine.paths")  # (user-named paths read as a shell reads them: pathlib)
    allowed.add("prep.engine.textsafe")  # (a value quoted in a message: re alone)
    allowed |= set(sys.stdlib_module_names)
    for path in sorted(COMMANDS_DIR.glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in tree.body:
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [node.module or ""]
            for name in names:
                assert name in allowed or name.split(".")[0] in sys.stdlib_module_names, (
                    f"{path.name}: imports {name} at the top"
                )
