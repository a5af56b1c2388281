"""Stats: reviews per day (30 days), true retention, the 14-day due forecast, mastery per deck
and tag, demos verified; with an interview date, the predicted recall on the day. The numbers
are `prep stats`'s (prep.engine.study.stats.compute)."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.widgets import Header
from textual_plotext import PlotextPlot

from prep.engine.store import StoreError
from prep.engine.study.present import count, percent
from prep.engine.study.statsresult import DeckMastery, Mastery, Stats
from prep.tui.base import PrepScreen
from prep.tui.reports import coming_text, interview_lines, marks_text, session_text
from prep.tui.widgets.footer import Footer
from prep.tui.widgets.table import DataTable
from prep.tui.widgets.text import Static


def bar_chart(widget: PlotextPlot, labels: list[str], values: list[int], title: str) -> None:
    plt = widget.plt
    plt.clear_figure()
    plt.title(title)
    xs = list(range(len(values)))
    plt.bar(xs, values, width=0.8, minimum=0)
    step = max(1, len(labels) // 6)
    ticks = xs[::step]
    plt.xticks([float(t) for t in ticks], [labels[i] for i in ticks])
    top = max(values, default=0)
    step = max(1, -(-top // 4))  # whole numbers, about four ticks
    yticks = list(range(0, top + step, step)) if top else [0, 1]
    plt.yticks([float(t) for t in yticks])
    widget.refresh()


class StatsScreen(PrepScreen):
    DEFAULT_CSS = """
    StatsScreen #stats {
        padding: 0 2;
    }

    StatsScreen #stats-summary {
        margin: 1 0;
    }

    StatsScreen #stats-interview {
        margin: 0 0 1 0;
    }

    StatsScreen PlotextPlot {
        height: 12;
        margin-bottom: 1;
    }

    StatsScreen .section {
        text-style: bold;
    }

    StatsScreen DataTable {
        height: auto;
        margin-bottom: 1;
    }
    """
    BINDINGS = [
        Binding("escape", "back", "Back", tooltip="Back"),
        Binding("r", "refresh", "Refresh", tooltip="Compute the statistics again"),
    ]

    def compose(self) -> ComposeResult:
        yield Header()
        with VerticalScroll(id="stats"):
            yield Static(id="stats-summary")
            yield Static(id="stats-interview")
            yield PlotextPlot(id="per-day")
            yield PlotextPlot(id="forecast")
            yield Static("Mastery per deck", classes="section")
            yield DataTable(id="deck-mastery", cursor_type="none")
            yield Static("Mastery per tag", classes="section")
            yield DataTable(id="tag-mastery", cursor_type="none")
            yield Static(id="stats-demos")
        yield Footer()

    def on_mount(self) -> None:
        for table_id, first in (("#deck-mastery", "Deck"), ("#tag-mastery", "Tag")):
            table = self.query_one(table_id, DataTable)
            for label in (first, "Cards", "Seen", "Mature", "Mastery"):
                table.add_column(label, key=label.lower())
        self.action_refresh()
        self.query_one("#stats", VerticalScroll).focus()

    def study_day_changed(self) -> None:
        self.action_refresh()  # (today's session, the forecast: the new day's)

    def action_refresh(self) -> None:
        from prep.engine.study.stats import compute

        assert self.prep.store is not None  # (the screen opens once the database is open)
        try:
            stats = compute(
                self.prep.store,
                self.prep.collection,
                self.prep.now(),
                known_demos=self.prep.demos or None,
            )
        except StoreError as exc:
            self.query_one("#stats-summary", Static).update(
                Text(f"Cannot read progress: {exc}", style="bold red")
            )
            return
        self.show(stats)

    def show(self, stats: Stats) -> None:
        r, tr, d, cards = stats.reviews, stats.true_retention, stats.due, stats.cards
        summary = Text()
        summary.append("Reviews    ", style="bold")
        summary.append(
            f"today {r.today}   total {r.total}   streak {count(stats.streak_days, 'day')}\n"
        )
        summary.append("Retention  ", style="bold")
        if tr.all.reviews:
            summary.append(
                f"true {percent(tr.all.rate)} of {count(tr.all.reviews, 'review')}   "
                f"last 30 days {percent(tr.last_30_days.rate)}   "
            )
        else:  # true retention counts reviews of cards already learned: none yet
            summary.append("true retention: no reviews of learned cards yet   ", style="dim")
        summary.append(f"target {percent(stats.desired_retention)}\n")
        summary.append("Session    ", style="bold")
        summary.append(session_text(stats) + "\n")
        summary.append("Coming up  ", style="bold")
        summary.append(coming_text(d) + "\n")
        summary.append("Cards      ", style="bold")
        summary.append(f"{cards.seen} of {cards.total} seen")
        summary.append(f"   {marks_text(stats.marks)}", style="dim")
        if stats.leeches:
            summary.append(f"   leeches: {', '.join(stats.leeches)}", style="red")
        marked = (
            ("suspended", stats.marked.suspended, "yellow"),
            ("flagged", stats.marked.flagged, "red"),
        )
        for kind, ids, style in marked:
            if ids:
                summary.append(f"\n{kind.capitalize():<11}", style="bold")
                summary.append(", ".join(ids), style=style)
        self.query_one("#stats-summary", Static).update(summary)
        interview = self.query_one("#stats-interview", Static)
        interview.display = stats.interview is not None
        if stats.interview is not None:  # the ten weakest tags here; `prep stats` lists them all
            interview.update(Text("\n".join(interview_lines(stats.interview, tags=10))))

        per_day = stats.per_day
        bar_chart(
            self.query_one("#per-day", PlotextPlot),
            [p.date[5:] for p in per_day],
            [p.reviews for p in per_day],
            "Reviews per day, last 30 days",
        )
        forecast = stats.forecast
        bar_chart(
            self.query_one("#forecast", PlotextPlot),
            [f.date[5:] for f in forecast],
            [f.due for f in forecast],
            "Reviews and learning steps per day, next 14 days",
        )
        rows: tuple[tuple[str, dict[str, DeckMastery] | dict[str, Mastery]], ...] = (
            ("#deck-mastery", stats.decks),
            ("#tag-mastery", stats.tags),
        )
        for table_id, groups in rows:
            table = self.query_one(table_id, DataTable)
            table.clear()
            for name, m in groups.items():
                table.add_row(name, m.cards, m.seen, m.mature, percent(m.mastery))

        demos = stats.demos
        text = Text()
        text.append("Demos verified  ", style="bold")
        text.append(f"{len(demos.verified)} of {len(self.prep.demos) or len(demos.latest)}\n")
        for run in demos.latest:
            if not run.known:
                mark = Text("????", style="dim")  # imported, of a demo this prep does not have
            elif run.passed:
                mark = Text("PASS", style="bold green")
            else:
                mark = Text("FAIL", style="bold red")
            text.append("  ")
            text.append(mark)
            when = (run.ran_at or "")[:16].replace("T", " ")
            text.append(f"  {run.name:<20} {run.device:<5} {run.scale or '':<6} {when}\n")
        self.query_one("#stats-demos", Static).update(text)

    def action_back(self) -> None:
        self.dismiss()
