"""`prep demo`: run one demo: prep demo NAME [--device auto|cpu|cuda|mps] [--scale small|large]"""

from __future__ import annotations

import contextlib
import sys
from typing import TYPE_CHECKING

import click

from prep.tui.commands.common import (
    Ctx,
    UsageError,
)

if TYPE_CHECKING:
    from prep.demos.report import Report
    from prep.engine.decks.collection import CachedCollection


@click.command("demo", context_settings={"ignore_unknown_options": True, "allow_extra_args": True})
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
@click.pass_obj
def demo(obj: Ctx, args: tuple[str, ...]) -> None:
    """Run one demo: prep demo NAME [--device auto|cpu|cuda|mps] [--scale small|large]
    [--seed N] [--json] [--model PATH_OR_NAME]; `prep demo --list [--json]` lists them."""
    from prep.demos.cli import run as run_demo

    _refuse_database_plot(obj, args)
    with contextlib.ExitStack() as stack:
        loaded: list[CachedCollection] = []  # read once (`--list` asks for every demo's cards)

        def linked_cards(name: str) -> list[str]:
            if not loaded:
                loaded.append(stack.enter_context(obj.cached_collection(strict=False)))
            return loaded[0].ids_for_demo(name)  # from an index: no card is built

        code, report = run_demo(list(args), linked_cards=linked_cards)
    if report is not None:
        _record(obj.db, report)
    sys.exit(code)


def _refuse_database_plot(obj: Ctx, args: tuple[str, ...]) -> None:
    """`--plot FILE.svg` never writes over the progress database or a file SQLite keeps
    beside it (a symlink or a hard link named .svg), as `prep export -o` never does: every
    argument that could be the figure's file (it ends in .svg) is checked before the run."""
    from pathlib import Path

    from prep.engine.store import StoreError, resolve_db_path
    from prep.engine.transfer.dbfiles import database_target

    names = [a.partition("=")[2] if a.startswith("--") else a for a in args]
    svgs = [Path(n) for n in names if n.lower().endswith(".svg")]
    if not svgs:
        return
    try:
        db = resolve_db_path(obj.db)
    except StoreError:  # (no default place: HOME not there; no database to write over)
        return
    hit = database_target(svgs, db)
    if hit is not None:
        target, kept = hit
        raise UsageError(
            f"--plot {target}: that is the progress database's own file ({kept}); writing "
            "the figure over it would replace your progress. Name another file"
        )


def _record(db: str | None, report: Report) -> None:
    """Record the run in the progress database (a run that finished may create it: common.
    CREATES); a failure here is only a warning (the demo's own verdict and exit code
    stand)."""
    from prep.engine.store import StoreError, resolve_db_path
    from prep.tui.runs import record_run
    from prep.tui.upgrade import open_store

    try:
        with open_store(db, create=True) as store:
            record_run(store, report)
    except StoreError as exc:
        try:
            where = f" in {resolve_db_path(db)}"
        except StoreError:  # (no default place: HOME not there; exc says so)
            where = ""
        click.echo(f"prep demo: warning: run not recorded{where}: {exc}", err=True)
