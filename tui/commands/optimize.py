"""`prep optimize`: fit FSRS parameters to your own review log (fsrs's optimizer)."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

import click

from prep.tui.commands.common import (
    Ctx,
    UsageError,
    say_damaged,
)

if TYPE_CHECKING:
    pass


@click.command("optimize")
@click.option("--yes", "-y", is_flag=True, help="Save the new parameters without asking.")
@click.option("--dry-run", is_flag=True, help="Show the new parameters; never save.")
@click.pass_obj
def optimize(obj: Ctx, yes: bool, dry_run: bool) -> None:
    """Fit FSRS parameters to your own review log (fsrs's optimizer).

    Needs 512 reviews made a day or more after the card's previous review. Shows the
    old and new parameters and the estimated effect, then asks before saving
    (`prep config parameters default` goes back to the defaults)."""

    from prep.engine.study import optimize as opt
    from prep.engine.timeutil import utcnow

    with obj.store() as store:
        settings = store.settings()
        damaged: list = []
        logs = opt.review_logs(store.reviews(damaged=damaged))
        say_damaged(damaged, "are fitted")
        try:
            n = opt.check_enough(logs)
        except opt.OptimizeError as exc:
            raise UsageError(str(exc)) from None
        click.echo(f"Fitting FSRS parameters to {n} of your reviews...", err=True)
        meter = _ProgressLine("Fitting")
        result = opt.fit(store, progress=meter, damaged=damaged)
        meter.done()
        from prep.tui.reports import optimize_text

        click.echo(optimize_text(result, settings, utcnow()))
        if not result.changed:
            click.echo("The fit gives the parameters you already have; nothing to save.")
            return
        if dry_run:
            click.echo("Not saved (--dry-run).")
            return
        save = yes
        if not yes:
            from prep.tui.ask import confirm  # (bounded: never reads a whole stream)

            save = confirm("Save these parameters?", default=False)
        if save:
            # only the parameters, against the settings saved now: a `prep config` made
            # during the fit or at the prompt stays
            try:
                store.update_settings(parameters=result.new)
            except ValueError as exc:
                raise UsageError(f"not saved: {exc}") from None
            click.echo("Saved. `prep config parameters default` goes back to the defaults.")
        else:
            click.echo("Not saved.")


class _ProgressLine:
    """Progress of long work on stderr: one line redrawn in place on a terminal (at most five
    times a second), else a line at every tenth, so a log or a pipe shows it too."""

    def __init__(self, label: str) -> None:
        import time

        self.label = label
        self.clock = time.monotonic
        self.started = self.clock()
        self.drawn_at = -1.0
        self.shown = -1  # the last tenth printed (not a terminal)
        self.tty = sys.stderr is not None and sys.stderr.isatty()

    def text(self, fraction: float) -> str:
        from datetime import timedelta

        from prep.engine.study.present import human_interval

        elapsed = self.clock() - self.started
        line = f"{self.label}: {100 * fraction:3.0f}%  {human_interval(timedelta(seconds=elapsed))}"
        if 0.02 < fraction < 1:
            left = elapsed * (1 - fraction) / fraction
            line += f", about {human_interval(timedelta(seconds=left))} left"
        return line

    def __call__(self, fraction: float) -> None:
        if self.tty:
            now = self.clock()
            if now - self.drawn_at >= 0.2 or fraction >= 1:
                self.drawn_at = now
                click.echo("\r\x1b[2K" + self.text(fraction), err=True, nl=False)
            return
        tenth = int(fraction * 10)
        if tenth > self.shown:
            self.shown = tenth
            click.echo(self.text(fraction), err=True)

    def done(self) -> None:
        if self.tty and self.drawn_at >= 0:
            click.echo("", err=True)
