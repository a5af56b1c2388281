"""Every command at a --db that does not exist: only the commands in common.CREATES may make the
database, and only for input they accept; every other command, and every refused input, is one
line, exit 2, and leaves no file or folder behind (cli13). Before, `config parameters` and
`config plan_decks` with a bad value, `backup --restore MISSING`, `sync /nonexistent`,
`optimize`, `unmark`, `backup`, an import of a corrupt file and a quiz or mock of an unknown
deck each left an empty database (and the folders above it) at a mistyped path."""

from __future__ import annotations

from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from prep.engine.store import Store
from prep.tui.cli import COMMANDS, main
from prep.tui.commands.common import CREATES

REFUSED, SHOWN, MADE = "refused", "shown", "made"  # exit 2 / exit 0 without a file / a new db


def _cases(tmp: Path) -> list[tuple[list[str], str, str | None]]:
    """(arguments, what happens, standard input) for each command; every command of the tree
    has at least one row (test_every_command_is_walked)."""
    corrupt, good, a_file, empty_dir = _inputs(tmp)
    out = tmp / "out.json"
    return [
        (["quiz", "--plain", "--deck", "nope"], REFUSED, ""),
        (["quiz", "--plain"], MADE, "q\n"),
        (["mock", "--plain", "--deck", "nope"], REFUSED, ""),
        (["cram"], SHOWN, None),
        (["demo", "no-such-demo"], REFUSED, None),
        (["demo", "--list"], SHOWN, None),
        (["stats"], REFUSED, None),
        (["marks"], REFUSED, None),
        (["unmark", "wo-core-two-roles"], REFUSED, None),
        (["check"], SHOWN, None),
        (["config"], SHOWN, None),
        (["config", "new_per_day"], SHOWN, None),
        (["config", "--reset", "--yes"], SHOWN, None),
        (["config", "parameters", "1,2,3"], REFUSED, None),
        (["config", "parameters", "x"], REFUSED, None),
        (["config", "plan_decks", "no-such-deck"], REFUSED, None),
        (["config", "new_per_day", "many"], REFUSED, None),
        (["config", "no_such_setting", "1"], REFUSED, None),
        (["config", "sync_dir", str(a_file)], REFUSED, None),
        (["config", "device_name", "a\x01b"], REFUSED, None),
        (["config", "new_per_day", "7"], MADE, None),
        (["config", "plan_decks", "wo-core"], MADE, None),
        (["optimize"], REFUSED, None),
        (["optimize", "--yes"], REFUSED, None),
        (["export", "--format", "json", "-o", str(out)], REFUSED, None),
        (
            ["grade", "--rubric", str(tmp / "no.yaml"), "--answers", str(tmp / "no.jsonl")],
            REFUSED,
            None,
        ),
        (["import", str(tmp / "missing.json")], REFUSED, None),
        (["import", str(corrupt)], REFUSED, None),
        (["import", str(good)], MADE, None),
        (["serve", "--host", ""], REFUSED, None),
        (["sync", str(tmp / "nonexistent")], REFUSED, None),
        (["sync", str(a_file)], REFUSED, None),
        (["sync"], REFUSED, None),
        (["sync", "--status"], REFUSED, None),
        (["sync", str(empty_dir)], MADE, None),
        (["sync", str(tmp / "sync-hostile")], REFUSED, None),  # (its only journal damaged)
        (["backup"], REFUSED, None),
        (["backup", "--list"], REFUSED, None),
        (["backup", "--restore", "prep-20260101-000000-000000-daily.db"], REFUSED, None),
    ]


def _inputs(tmp: Path) -> tuple[Path, Path, Path, Path]:
    """The files the rows name (made by _make_inputs): a corrupt export, a good one, a file
    where a folder is expected, an empty sync folder."""
    return tmp / "corrupt.json", tmp / "good.json", tmp / "a-file", tmp / "sync-here"


def _make_inputs(tmp: Path, good: bytes) -> None:
    corrupt, good_file, a_file, empty_dir = _inputs(tmp)
    corrupt.write_text('{"format": ')
    good_file.write_bytes(good)
    a_file.write_text("x")
    empty_dir.mkdir()
    (tmp / "sync-hostile" / "0123456789abcdef").mkdir(parents=True)
    (tmp / "sync-hostile" / "0123456789abcdef" / "00000001.jsonl").write_text('{"format"\n')


def _tree(folder: Path) -> set[str]:
    return {str(p.relative_to(folder)) for p in folder.rglob("*")}


@pytest.fixture(scope="module")
def setting(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("missing")
    src = tmp / "src.db"
    with Store.open(src) as store:
        store.update_settings(new_per_day=4)
    result = CliRunner().invoke(
        main, ["--db", str(src), "export", "--format", "json", "-o", str(tmp / "good.json")]
    )
    assert result.exit_code == 0, result.output
    return tmp


def test_every_command_is_walked(setting: Path) -> None:
    """A command added to the tree without a row here fails: the walk covers all of them."""
    with click.Context(main) as ctx:
        tree = set(main.list_commands(ctx))
    assert tree == set(COMMANDS)
    walked = {args[0] for args, _what, _input in _cases(setting / "names")}
    assert tree <= walked, sorted(tree - walked)
    assert set(CREATES) <= tree  # (the table names real commands)


def _case_ids() -> list[str]:
    return [" ".join(args[:3]) for args, _w, _i in _cases(Path("/nonexistent-ids"))]


@pytest.mark.parametrize("index", range(len(_case_ids())), ids=_case_ids())
def test_a_missing_db_is_made_only_by_a_command_allowed_to(
    setting: Path, tmp_path: Path, index: int
) -> None:
    _make_inputs(tmp_path, (setting / "good.json").read_bytes())
    args, what, stdin = _cases(tmp_path)[index]
    before = _tree(tmp_path)
    db = tmp_path / "new" / "p.db"  # its folder missing too: nothing may make it
    result = CliRunner().invoke(main, ["--db", str(db), *args], input=stdin)
    made = _tree(tmp_path) - before
    if what == MADE:
        assert args[0] in CREATES
        assert result.exit_code == 0, result.output
        assert db.is_file()
        assert not [n for n in made if ".new-" in n], made  # (an import's staged file: gone)
        if args[0] == "import":  # the new database holds the export's progress
            with Store.open(db) as store:
                assert store.settings().new_per_day == 4
        return
    assert made == set(), (args, sorted(made), result.output)
    if what == REFUSED:
        assert result.exit_code == 2, (args, result.output)
        (line,) = result.stderr.strip().splitlines()[-1:]  # one line, no traceback
        assert line.startswith("prep") and "Traceback" not in result.output
    else:
        assert result.exit_code == 0, (args, result.output)


def test_an_import_through_a_dangling_link_makes_the_file_it_names(
    setting: Path, tmp_path: Path
) -> None:
    """A --db that is a symlink to a file not made yet: the import fills the file the link
    names (the staged copy would find the link in its place and refuse)."""
    real = tmp_path / "real.db"
    link = tmp_path / "link.db"
    link.symlink_to(real)
    result = CliRunner().invoke(main, ["--db", str(link), "import", str(setting / "good.json")])
    assert result.exit_code == 0, result.output
    assert link.is_symlink() and real.is_file()
    with Store.open(real) as store:
        assert store.settings().new_per_day == 4
