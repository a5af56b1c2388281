"""`prep config`: show settings, or set one: prep config new_per_day 10."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from prep.engine.paths import expand_user
from prep.engine.textsafe import quoted, quoted_all
from prep.tui.commands.common import (
    Ctx,
    UsageError,
)

if TYPE_CHECKING:
    from collections.abc import Collection
    from pathlib import Path

    from prep.engine.store import Store
    from prep.engine.study.scheduler import Settings


@click.command(
    "config", context_settings={"ignore_unknown_options": True}
)  # `new_per_day -1` is a value
@click.argument("key", required=False)
@click.argument("value", required=False)
@click.option(
    "--reset",
    is_flag=True,
    help="Restore every setting to its default (asks first; the database is backed up).",
)
@click.option("--yes", "-y", is_flag=True, help="With --reset: do not ask (needed off a terminal).")
@click.pass_obj
def config(obj: Ctx, key: str | None, value: str | None, reset: bool, yes: bool) -> None:
    """Show settings, or set one: prep config new_per_day 10.

    FSRS parameters: `prep config parameters` shows them, `prep config parameters default`
    goes back to fsrs's defaults, `prep config parameters "w0,w1,...,w20"` sets all 21
    (fit them to your own reviews with `prep optimize`)."""

    from dataclasses import replace

    from prep.engine.store import Store, resolve_db_path
    from prep.engine.store.dbfile import is_empty_file
    from prep.engine.study.scheduler import Settings

    if yes and not reset:
        raise UsageError("--yes goes with --reset (setting one value never asks)")
    if reset and key is not None:
        raise UsageError(
            f"--reset restores every setting; it takes no setting name ({quoted(key)})"
        )
    typed: Any = None
    if key is not None and key not in ("parameters", "sync_dir", "device_name"):
        # an unknown name or a value that does not parse is refused before the database is
        # opened: a mistyped `--db` path was created as an empty database for it
        if key not in Settings.settable():
            known = ", ".join([*Settings.settable(), "parameters"])
            raise UsageError(f"unknown setting {quoted(key)} (settings: {known})")
        if value is not None:
            try:
                typed = Settings.parse_value(key, value)  # the setting's own parse type
                replace(Settings(), **{key: typed}).validated()  # (each bound is its own)
            except ValueError as exc:
                message = str(exc) if str(exc).startswith(key) else f"{key}: {exc}"
                raise UsageError(message) from None
    if value is not None:  # (every value refused before a database is opened or made)
        _check_value(obj, key, value, typed)
    path = resolve_db_path(obj.db)
    if value is None and (not path.exists() or is_empty_file(path)):
        # nothing saved yet: show the defaults (--reset: nothing to reset), create nothing
        store = Store.memory()
    else:
        store = obj.store(create=True)  # (a valid setting on a new installation makes it)
    with store:
        if reset:
            _reset(store, yes)
            return
        settings = store.settings()
        if key is None:
            for k, v in settings.to_dict().items():
                click.echo(f"{k} = {_text(k, v)}")
            return
        if key == "parameters":
            _config_parameters(store, settings, value)
            return
        if key == "sync_dir":  # a setting of this machine: never synced
            from prep.engine.decks.deck import one_line_safe  # (a folder's name: escaped)

            if value is not None:
                _set_sync_dir(store, value)
            click.echo(one_line_safe(f"sync_dir = {store.get_meta('sync_dir') or 'none'}"))
            return
        if key == "device_name":  # this machine's name in the others' sync summaries
            _device_name(store, value)
            return
        if value is None:  # (as the list of every setting shows it)
            click.echo(f"{key} = {_text(key, settings.to_dict()[key])}")
            return
        if key == "plan_decks" and typed is not None:
            _known_decks(typed, obj.collection(strict=False, store=store).decks)
        try:
            # this one setting, against the settings saved now (another prep may have changed
            # others since they were read)
            store.update_settings(**{key: typed})
        except ValueError as exc:
            message = str(exc) if str(exc).startswith(key) else f"{key}: {exc}"
            raise UsageError(message) from None
        if key == "interview_date":
            _say_plan(obj, store, store.settings())
            return
        click.echo(f"{key} = {_text(key, store.settings().to_dict()[key])}")


def _check_value(obj: Ctx, key: str | None, value: str, typed: Any) -> None:
    """Refuse a value that cannot be set (one line, exit 2) before a database is opened, so a
    refused value never makes one at a missing --db: the settings' own values are checked
    above; here the FSRS parameters, a sync folder, a device name, an interview date (from
    today to a year ahead: plan.date_problem), and plan_decks' names
    (against the decks read without a database only when there is none yet: else the
    command checks them through the deck cache)."""
    from prep.engine.store import devices

    if key == "parameters":
        _parse_parameters(value)
    elif key == "sync_dir":
        _sync_dir_path(value)
    elif key == "device_name":
        why = devices.name_problem(value)
        if why is not None:
            raise UsageError(f"device_name: {why}")
    elif key == "plan_decks" and typed is not None and obj.missing():
        _known_decks(typed, obj.collection(strict=False).decks)
    elif key == "interview_date" and typed is not None:
        from prep.engine.study.plan import date_problem, study_date
        from prep.engine.study.scheduler import interview_day
        from prep.engine.timeutil import utcnow

        why = date_problem(interview_day(typed), study_date(utcnow()))
        if why is not None:  # (a date in the past, or more than a year ahead)
            raise UsageError(f"interview_date: {why}")


def _known_decks(named: list[str], decks: Collection[str]) -> None:
    unknown = [d for d in named if d not in decks]
    if unknown:
        raise UsageError(
            f"plan_decks: no deck named {quoted_all(unknown)} (decks: {', '.join(decks) or 'none'})"
        )


def _text(key: str, value: object) -> str:
    """A setting's value as `prep config` prints it, from ``Settings.to_dict`` (lists as
    lists, whether every setting is listed, one is asked for or one was just set)."""
    if key == "plan_decks":
        return "all" if value is None else ",".join(value)  # type: ignore[arg-type]
    if value is None:  # what None means there
        return "none" if key == "interview_date" else "default"
    return str(value)


def _set_sync_dir(store: Store, value: str) -> None:
    """`prep config sync_dir DIR`: the folder (one that does not exist yet is kept: the sync
    tool may make it); `none` clears it, as `interview_date none` does, rather than naming a
    folder "none" (an empty value is refused, as every setting's is)."""
    path = _sync_dir_path(value)
    if path is None:
        with store.transaction():
            store.conn.execute("DELETE FROM meta WHERE key = 'sync_dir'")
        return
    with store.transaction():
        store.set_meta("sync_dir", str(path))


def _sync_dir_path(value: str) -> Path | None:
    """The folder `prep config sync_dir VALUE` names (None: cleared), or UsageError."""
    if not value.strip():  # `"$DIR"` unset: every background sync stopped without a word
        raise UsageError(
            "sync_dir: an empty value (an unset shell variable?) is not a folder; nothing "
            "changed; to clear it on purpose: prep config sync_dir none"
        )
    if value.strip().lower() == "none":
        return None
    try:
        path = expand_user(value).resolve()
    except (OSError, RuntimeError):  # (3.11-3.12 raise RuntimeError on a loop)
        raise UsageError(f"sync_dir: {value}: a symbolic link loop; nothing changed") from None
    try:  # (a name's bytes that are not UTF-8: the database keeps text, sqlite3 refuses it)
        str(path).encode("utf-8")
    except UnicodeEncodeError:
        raise UsageError(
            f"sync_dir: {path}: its name holds bytes that are not UTF-8, which prep cannot "
            "keep as a setting; rename the folder (or give it as `prep sync DIR` each time)"
        ) from None
    if path.exists() and not path.is_dir():
        raise UsageError(
            f"sync_dir: {value}: not a folder; name the folder your sync tool keeps in step "
            "(or none to clear it)"
        )
    return path


def _device_name(store: Store, value: str | None) -> None:
    """`prep config device_name [NAME]`: a machine setting (never synced as a setting; the
    journal's header carries it, so the others say "received 3 from NAME")."""
    from prep.engine.store import devices

    if value is not None:
        why = devices.name_problem(value)
        if why is not None:
            raise UsageError(f"device_name: {why}")
        with store.transaction():
            devices.set_name(store.conn, value)
    with store.transaction():
        click.echo(f"device_name = {devices.name(store.conn)}")


def _say_plan(obj: Ctx, store: Store, settings: Settings) -> None:
    """What `prep config interview_date ...` did: the date, and the plan in one line."""
    from prep.engine.study.plan import plan_day
    from prep.engine.timeutil import utcnow

    if settings.interview_date is None:
        click.echo("interview_date = none (no plan: scheduling is plain FSRS, nothing lost)")
        return
    day = plan_day(store, obj.collection(strict=False, store=store), utcnow(), settings)
    if day is None:
        click.echo(f"interview_date = {settings.interview_date} (past: scheduling is plain FSRS)")
        return
    click.echo(f"interview_date = {settings.interview_date}")
    click.echo(day.heading())


def _config_parameters(store: Store, settings: Settings, value: str | None) -> None:
    """`prep config parameters [default | "w0,w1,...,w20"]`."""
    from prep.engine.study.optimize import current_parameters

    if value is None:
        shown = ", ".join(f"{w:.4f}" for w in current_parameters(settings))
        origin = "fsrs defaults" if settings.parameters is None else "your own"
        click.echo(f"parameters = {shown} ({origin})")
        return
    weights = _parse_parameters(value)
    if weights is None:
        store.update_settings(parameters=None)
        click.echo("parameters = default (fsrs defaults)")
        return
    try:
        store.update_settings(parameters=weights)
    except ValueError as exc:  # with the settings saved now (changed since they were read)
        raise UsageError(f"parameters: {exc}") from None
    click.echo(f"parameters = {', '.join(f'{w:.4f}' for w in weights)} (your own)")


def _parse_parameters(value: str) -> tuple[float, ...] | None:
    """The 21 FSRS parameters `prep config parameters VALUE` names (None: the defaults), or
    UsageError naming what is wrong."""
    from dataclasses import replace

    from prep.engine.study.scheduler import Settings

    if value.strip().lower() in ("default", "defaults"):
        return None
    weights = []
    for part in value.replace(",", " ").split():
        try:
            weights.append(float(part))
        except ValueError:
            raise UsageError(f"parameters: {quoted(part)} is not a number") from None
    try:
        updated = replace(Settings(), parameters=tuple(weights)).validated()
    except ValueError as exc:
        raise UsageError(f"parameters: {_fsrs_refusal(str(exc))}") from None
    assert updated.parameters is not None
    return tuple(updated.parameters)


SHOWN_BOUNDS = 3  # the parameters out of bounds a refusal names; the others are counted


def _fsrs_refusal(text: str) -> str:
    """fsrs's refusal in one line of sensible length: its heading, the first SHOWN_BOUNDS
    parameters out of bounds and how many more (21 NaNs were a line of 1,153 characters, now 233)."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    head, items = (lines[0], lines[1:]) if lines else ("", [])
    if len(items) > SHOWN_BOUNDS:
        items = [*items[:SHOWN_BOUNDS], f"and {len(items) - SHOWN_BOUNDS} more"]
    sep = " " if head.endswith(":") else "; "
    return head + (sep + "; ".join(items) if items else "")


def _changed(settings: Settings) -> list[str]:
    """The settings that differ from the defaults, as the user would read them."""
    from prep.engine.study.scheduler import Settings

    default = Settings().to_dict()
    out = []
    for k, v in settings.to_dict().items():
        if v == default[k]:
            continue
        if k == "parameters":
            out.append("parameters (the FSRS parameters fitted or set for you)")
        elif k == "plan_decks":
            out.append(f"plan_decks {','.join(v)}")
        elif isinstance(v, list):
            out.append(f"{k} {' '.join(f'{x:g}' for x in v)}")
        else:
            out.append(f"{k} {v}")
    return out


def _reset(store: Store, yes: bool) -> None:
    """`prep config --reset`: every setting back to its default, as the other destructive
    commands do it: asked first on a terminal (--yes off one), the database backed up, and
    what was cleared said."""
    import sys

    from prep.engine.store import StoreError, backup
    from prep.engine.study.scheduler import Settings

    try:
        changed = _changed(store.settings())
    except StoreError:  # saved invalid (a hand edit): what --reset is for
        changed = ["the saved settings, which cannot be read"]
    if not changed:
        click.echo("settings are already at their defaults; nothing changed")
        return
    what = "; ".join(changed)
    if not yes:
        if sys.stdin is None or not sys.stdin.isatty():
            raise UsageError(
                f"--reset would clear {what}; not asked off a terminal: add --yes to reset"
            )
        from prep.tui.ask import confirm  # (bounded: never reads a whole stream)

        click.echo(f"--reset restores the defaults, clearing: {what}")
        if not confirm("Reset every setting?", default=False):
            click.echo("nothing changed")
            return
    try:
        saved = backup.make(store, "reset")
    except backup.BackupError as exc:
        raise UsageError(f"not reset: {exc}") from None
    store.save_settings(Settings())
    click.echo(f"settings reset to their defaults; cleared: {what}")
    if saved is not None:
        from prep.engine.decks.deck import one_line_safe  # (the database's name: escaped)

        click.echo(
            one_line_safe(
                f"(the database before it: {saved}; `prep backup --restore {saved.name}`)"
            )
        )
