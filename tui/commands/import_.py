"""`prep import`: import a json or csv export (from `prep export`) into this database."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

import click

from prep.engine.paths import expand_user
from prep.tui.commands.common import (
    NAMED_PATH,
    Ctx,
    UsageError,
)

if TYPE_CHECKING:
    from prep.engine.transfer.readers import Piped


@click.command("import")
@click.argument("file", type=NAMED_PATH, metavar="FILE")
@click.pass_obj
def import_cmd(obj: Ctx, file: str) -> None:
    """Import a json or csv export (from `prep export`) into this database; FILE - reads a
    json export from standard input.

    All or nothing: on a corrupt file or a conflicting review nothing changes. A card whose
    history went on both here and in the file is merged as `prep sync` merges; a card marked
    differently here keeps this database's mark. Importing the same file twice adds nothing
    twice. The database is backed up first."""

    from prep.engine.store import backup
    from prep.engine.transfer.export import ExportError
    from prep.engine.transfer.importer import import_file
    from prep.engine.transfer.readers import Piped, read_piped, readable
    from prep.tui.commands import common

    source: Path | Piped = expand_user(file)
    try:
        if file == "-":  # (read whole first: it is read twice, and a pipe cannot be again)
            stdin = common.piped_stdin("prep import -", "an export", "prep import - < FILE.json")
            source = read_piped(stdin)
        readable(source)  # (the file's own checks first: nothing opened for a typo)
    except ExportError as exc:
        raise UsageError(_labelled(str(exc), file, source)) from None
    # an export that names a merged-away card's id lands on the card that kept it (the
    # decks are read, not synced: a refused import changes nothing)
    aliases = obj.collection(strict=False).aliases()
    # into a new database only once the whole file is taken in (a refused file makes none)
    with obj.staged_store() as (store, made):
        try:
            # backed up once the file is read and checked (a refused file backs nothing up)
            result = import_file(
                store,
                source,
                aliases,
                before_write=None if made else lambda: backup.make(store, "import"),
            )
        except ExportError as exc:
            raise UsageError(_labelled(str(exc), file, source)) from None
        except backup.BackupError as exc:
            raise UsageError(str(exc)) from None
    from prep.engine.decks.deck import one_line_safe  # (a file's name: escaped)

    shown = "the export on standard input" if isinstance(source, Piped) else file
    click.echo(one_line_safe(f"Imported {shown}: {result.summary()}."))


def _labelled(message: str, file: str, source: object) -> str:
    """An export's error as the user named the file: the file named - given as ./- is
    Path("-"), whose errors would read "-: ..." as if about standard input; "./-: ..."."""
    if file != "-" and str(source) == "-" and message.startswith("-:"):
        return os.curdir + os.sep + message
    return message
