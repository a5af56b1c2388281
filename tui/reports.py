"""The text reports the command line prints (`prep stats`, `prep cram`, `prep optimize`): the
engine computes the results, the front end words them.
"""

from __future__ import annotations

import math
from datetime import date, datetime
from typing import TYPE_CHECKING

from prep.engine.study import plan as plan_mod
from prep.engine.study.cram import recall_text
from prep.engine.study.present import count, counts_text, human_interval, percent

if TYPE_CHECKING:
    from prep.engine.study.cram import CramDeck
    from prep.engine.study.optimize import FitResult
    from prep.engine.study.scheduler import Settings
    from prep.engine.study.statsresult import Due, MarkCounts, OnTheDay, Recall, Stats


def marks_text(marks: MarkCounts) -> str:
    """``2 suspended · 1 buried · 3 flagged``."""
    return f"{marks.suspended} suspended · {marks.buried} buried · {marks.flagged} flagged"


def stats_text(stats: Stats) -> str:
    """The human form of `prep stats`."""
    r, tr, d, cards = stats.reviews, stats.true_retention, stats.due, stats.cards
    since = f" since {stats.since[:10]}" if stats.since else ""
    if tr.all.reviews:
        retention = (
            f"true{since} {percent(tr.all.rate)} over {count(tr.all.reviews, 'review')}"
            f"   last 30 days {percent(tr.last_30_days.rate)}"
        )
    else:  # true retention counts reviews of cards already learned (as the stats screen says)
        retention = f"true retention{since}: no reviews of learned cards yet"
    lines = [
        f"Reviews      today {r.today}   total{since} {r.total}   streak {count(stats.streak_days, 'day')}",
        f"Retention    {retention}   target {percent(stats.desired_retention)}",
        f"Session      {session_text(stats)}",
        f"Coming up    {coming_text(d)}",
        f"Cards        {cards.seen} of {cards.total} seen   " + marks_text(stats.marks),
        "",
        f"{'Deck':<22}{'cards':>6}{'seen':>6}{'mature':>8}{'mastery':>9}",
    ]
    for name, dm in stats.decks.items():
        lines.append(f"{name:<22}{dm.cards:>6}{dm.seen:>6}{dm.mature:>8}{percent(dm.mastery):>9}")
    if stats.tags:  # mastery per tag (topic), as the app's stats screen and --json give it
        width = max(22, *(len(tag) + 2 for tag in stats.tags))
        lines += ["", f"{'Tag':<{width}}{'cards':>6}{'seen':>6}{'mature':>8}{'mastery':>9}"]
        for tag, m in stats.tags.items():
            lines.append(
                f"{tag:<{width}}{m.cards:>6}{m.seen:>6}{m.mature:>8}{percent(m.mastery):>9}"
            )
    listed = []
    if stats.leeches:
        listed.append(f"Leeches      {', '.join(stats.leeches)}")
    # (`prep marks` shows each with its deck and prompt)
    for kind, ids in (("suspended", stats.marked.suspended), ("flagged", stats.marked.flagged)):
        if ids:
            listed.append(f"{kind.capitalize():<13}{', '.join(ids)}")
    if stats.changed:
        listed.append(f"Edited       {', '.join(stats.changed)} (text changed since last review)")
    if listed:
        lines += ["", *listed]
    if stats.interview:
        lines += ["", *interview_lines(stats.interview)]
    demos = stats.demos
    lines += ["", f"Demos        {len(demos.verified)} verified"]
    for run in demos.latest:
        mark = ("PASS" if run.passed else "FAIL") if run.known else "????"
        line = f"  {mark}  {run.name:<22} {run.device:<5} {run.scale or '':<6} {run.ran_at[:16]}"
        if not run.known:
            line += "  (no such demo here: not verified)"
        lines.append(line)
    return "\n".join(lines)


def session_text(stats: Stats) -> str:
    """What today's session serves now, in home's and the session bar's words (counts_text):
    ``new 19 · learning 1 · due 0`` (due: reviews; learning: learning steps)."""
    s = stats.session
    return f"{counts_text((s.new, s.learning, s.due))}   (as home counts it)"


def coming_text(d: Due) -> str:
    """The cards coming up by study day: reviews and learning steps ("steps") together (not "due",
    which home and the session bar say of reviews alone)."""
    return (
        f"today {d.today}   tomorrow {d.tomorrow}   next 7 days {d.next_7_days}   (reviews + steps)"
    )


def interview_lines(day: OnTheDay, tags: int | None = None) -> list[str]:
    """The interview part of `prep stats`: the plan, then FSRS's predicted recall on the day
    per deck and per tag (weakest tags first; ``tags``: at most that many)."""
    header = plan_mod.interview_header(date.fromisoformat(day.date), day.days_left)
    target = percent(day.target)
    lines = [
        f"{header} · {day.plan}",  # as home and --plain say it (PlanDay.heading)
        f"Predicted recall on the day (FSRS's forgetting curve, if nothing more is studied; "
        f"target {target})",
        f"{'Deck':<22}{'cards':>6}{'seen':>6}{'recall':>8}{'lowest':>8}{'below':>7}",
    ]

    def row(name: str, g: Recall) -> str:
        return (
            f"{name:<22}{g.cards:>6}{g.seen:>6}{percent(g.recall):>8}"
            f"{percent(g.lowest):>8}{g.below_target:>7}"
        )

    lines += [row(name, g) for name, g in day.decks.items()]
    lines.append(row("all", day.all))
    shown = list(day.tags.items())[:tags]
    if shown:
        lines += [
            "",
            f"{'Tag (weakest first)':<22}{'cards':>6}{'seen':>6}{'recall':>8}{'lowest':>8}{'below':>7}",
        ]
        lines += [row(name, g) for name, g in shown]
        if tags is not None and len(day.tags) > tags:
            lines.append(f"  ... {len(day.tags) - tags} more (prep stats --json lists every tag)")
    return lines


def cram_text(sheet: list[CramDeck]) -> str:
    """The plain-text sheet `prep cram` prints."""
    if not sheet:
        return "No 60-second bullets yet: no main card has 'bullets'."
    out: list[str] = []
    for d in sheet:
        if out:
            out.append("")
        out.append(f"== {d.title} ({d.name}) ==" if d.name else f"== {d.title} ==")
        for item in d.items:
            out.append("")
            out.append(recall_text(item) + item.prompt)
            out.extend(f"  - {b}" for b in item.bullets)
    return "\n".join(out)


def optimize_text(result: FitResult, settings: Settings, now: datetime) -> str:
    """What `prep optimize` prints: old and new parameters, and their estimated effect."""
    from prep.engine.study.optimize import PARAMETER_NAMES, first_intervals

    lines = [
        f"Fitted on {result.trainable} of your {result.reviews} reviews in {result.seconds:.1f}s.",
        "",
        f"{'':<5}{'parameter':<34}{'old':>10}{'new':>10}",
    ]
    for i, (a, b) in enumerate(zip(result.old, result.new, strict=True)):
        name = PARAMETER_NAMES[i] if i < len(PARAMETER_NAMES) else ""
        mark = " *" if abs(a - b) >= 5e-5 else ""
        lines.append(f"{'w' + str(i):<5}{name:<34}{a:>10.4f}{b:>10.4f}{mark}")
    lines += ["", "Estimated effect"]
    if not (math.isnan(result.old_loss) or math.isnan(result.new_loss)):
        better = result.old_loss - result.new_loss
        pct = 100 * better / result.old_loss if result.old_loss else 0.0
        verdict = f"better by {pct:.1f}%" if better > 0 else "no better: keep the old ones"
        lines.append(
            f"  log loss on your reviews: old {result.old_loss:.4f}  new {result.new_loss:.4f}"
            f"  ({verdict}; lower predicts your recall better)"
        )
    old_iv = first_intervals(result.old, settings, now)
    new_iv = first_intervals(result.new, settings, now)
    show = ", ".join
    lines.append(
        f"  a new card answered Good each time it is due (desired retention "
        f"{percent(settings.desired_retention)}):"
    )
    lines.append(f"    old: {show(human_interval(v) for v in old_iv.values())}")
    lines.append(f"    new: {show(human_interval(v) for v in new_iv.values())}")
    lines.append("  (* marks a changed parameter)")
    return "\n".join(lines)
