"""`prep stats`: progress: reviews, retention, due forecast, mastery per deck, streak, demos verified."""

from __future__ import annotations

import click

from prep.engine.textsafe import quoted
from prep.tui.commands.common import (
    Ctx,
    UsageError,
    demo_names,
)

# every time zone's local midnight of these days has a UTC form
SINCE_RANGE = "0001-01-02 to 9999-12-30"


@click.command("stats")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@click.option(
    "--since",
    metavar="DATE",
    help="Total reviews and true retention from this date (YYYY-MM-DD) on; the daily "
    "history, streak and forecast are unchanged.",
)
@click.pass_obj
def stats(obj: Ctx, as_json: bool, since: str | None) -> None:
    """Progress: reviews, retention, due forecast, mastery per deck, streak, demos verified."""
    from prep.engine.study import stats as stats_mod
    from prep.engine.study.clockback import clock_behind
    from prep.engine.timeutil import to_utc, utcnow

    since_dt = None
    if since is not None:
        from datetime import datetime

        try:
            typed = datetime.fromisoformat(since)
        except ValueError:
            raise UsageError(
                f"--since {quoted(since)} is not a date (expected YYYY-MM-DD)"
            ) from None
        try:
            since_dt = to_utc(typed.astimezone())
        except (ValueError, OverflowError):  # no local or UTC form (the first or last day)
            raise UsageError(
                f"--since {quoted(since)} is out of range: give a date from {SINCE_RANGE}"
            ) from None
    with obj.store(reading=True, empty_ok=True) as store:
        # through the deck cache, reconciled on load (a read-only database: a private cache)
        coll = obj.collection(strict=False, store=store)
        now = utcnow()
        result = stats_mod.compute(store, coll, now, since=since_dt, known_demos=demo_names())
        behind = clock_behind(store, now)
    if behind is not None:  # (stderr: --json stays one JSON object)
        click.echo(f"prep: {behind.line()}", err=True)
    if as_json:
        import json

        click.echo(json.dumps(result.to_dict(), indent=2))
    else:
        from prep.tui.reports import stats_text

        click.echo(stats_text(result))
