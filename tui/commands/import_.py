"""`prep import`: import a json or csv export (from `prep export`) into this database."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from prep.tui.commands.common import (
    Ctx,
    UsageError,
)

if TYPE_CHECKING:
    pass


@click.command("import")
@click.argument("file", metavar="FILE")
@click.pass_obj
def import_cmd(obj: Ctx, file: str) -> None:
    """Import a json or csv export (from `prep export`) into this database.

    All or nothing: on a corrupt file or a conflict (a card with a different review
    history here, or marked differently here) nothing changes. Importing the same file
    twice adds nothing twice."""
    from prep.engine.transfer.export import ExportError
    from prep.engine.transfer.importer import import_file

    with obj.store() as store:
        try:
            result = import_file(store, Path(file).expanduser())
        except ExportError as exc:
            raise UsageError(str(exc)) from None
    click.echo(f"Imported {file}: {result.summary()}.")
