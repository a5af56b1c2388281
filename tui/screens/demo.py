"""Run one demo live: a subprocess (the app never imports torch), its output streamed into a
log, the checks shown as PASS/FAIL when it is done, the run recorded like a CLI run.

The claim, the log and the checks read as one page that scrolls (arrows, PgUp/PgDn), so at
80x24 nothing is cut off; the status line stays at the bottom.

Esc returns to the screen below (the card exactly as it was); a run still going is stopped.
A demo that fails or crashes says so here, and the app keeps working.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import time

from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.timer import Timer

from prep.demos.figures import render_figures
from prep.demos.report import Check, Report, describe
from prep.engine.decks.deck import Card, text_safe
from prep.engine.store import StoreError
from prep.tui.base import PrepScreen
from prep.tui.runs import record_run
from prep.tui.widgets.footer import Footer
from prep.tui.widgets.text import Static

STREAM_LIMIT = 4 * 1024 * 1024  # one JSON report line can be long
# what demos/harness.progress() starts its stderr lines with (not imported: harness is torch)
PROGRESS_PREFIX = "progress: "
SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"


def _fmt(value: float | int) -> str:
    if isinstance(value, int):
        return str(value)
    if value == 0.0:
        return "0.0"
    return f"{value:.4g}"


def parse_report(line: str) -> Report | None:
    """The demo's report, if this output line is its JSON (`prep demo NAME --json`)."""
    line = line.strip()
    if not (line.startswith("{") and line.endswith("}")):
        return None
    try:
        data = json.loads(line)
    except ValueError:
        return None
    if not (isinstance(data, dict) and "checks" in data and "passed" in data):
        return None
    try:
        return Report.from_dict(data)
    except (KeyError, TypeError, ValueError):
        return None


class DemoScreen(PrepScreen):
    DEFAULT_CSS = """
    DemoScreen #demo-title {
        height: 1;
        padding: 0 2;
        background: $panel;
    }

    DemoScreen #demo-body {
        height: 1fr;
    }

    DemoScreen #demo-claim {
        height: auto;
        padding: 0 2;
        color: $text-muted;
    }

    DemoScreen #demo-log {
        height: auto;
        min-height: 3;
        margin: 0 1;
        padding: 0 1;
        border: round $primary 50%;
    }

    DemoScreen #checks {
        height: auto;
        margin: 0 2 1 2;
    }

    DemoScreen #demo-status {
        height: auto;
        padding: 0 2;
    }
    """
    BINDINGS = [
        Binding("escape", "back", "Back", tooltip="Back to where you were (stops a running demo)"),
        Binding("r", "rerun", "Run again", tooltip="Run the demo again"),
    ]

    def __init__(self, name: str, *, card: Card | None = None) -> None:
        super().__init__()
        self.demo_name = name
        self.card = card
        self.report: Report | None = None
        self.exit_code: int | None = None
        self.running = False
        self.recorded_id: int | None = None
        self._process: asyncio.subprocess.Process | None = None
        self.log_lines: list[str] = []  # what the log shows, as plain lines
        self.progress = ""  # the demo's latest `progress:` line
        self._started = 0.0
        self._frame = 0
        self._ticker: Timer | None = None

    def compose(self) -> ComposeResult:
        yield Static(id="demo-title")
        with VerticalScroll(id="demo-body"):
            yield Static(id="demo-claim")
            yield Static(id="demo-log")
            yield Static(id="checks")
        yield Static(id="demo-status")
        yield Footer()

    def on_mount(self) -> None:
        claim = self.prep.demos.get(self.demo_name, "")
        self.query_one("#demo-title", Static).update(
            Text.assemble(("Demo ", "dim"), (self.demo_name, "bold"))
        )
        claim_widget = self.query_one("#demo-claim", Static)
        claim_widget.update(Text(claim, style="italic"))
        claim_widget.display = bool(claim)
        self.query_one("#demo-body").focus()
        self.start()

    # --- running ------------------------------------------------------------------------

    def start(self) -> None:
        self.report = None
        self.exit_code = None
        self.recorded_id = None
        self.query_one("#checks", Static).update("")
        self.query_one("#checks").display = False
        self.log_lines = []
        self.query_one("#demo-log", Static).update("")
        self.progress = "starting"
        self._started = time.monotonic()
        self.running = True
        self.tick()
        self._ticker = self.set_interval(0.1, self.tick)
        self.refresh_bindings()
        if self.prep.demo_worker is not None:
            self.run_in_worker()  # torch and the model stay loaded between runs
        else:
            self.run_demo()

    def tick(self) -> None:
        """While the demo runs: a spinner, the elapsed time and what it is doing now."""
        if not self.running:
            return
        self._frame = (self._frame + 1) % len(SPINNER)
        elapsed = time.monotonic() - self._started
        status = Text.assemble(
            (SPINNER[self._frame] + " ", "bold"),
            (f"Running {self.demo_name}", "bold"),
            f" · {elapsed:.1f} s",
        )
        if self.progress:
            status.append(f" · {self.progress}", style="italic")
        status.append("  (Esc stops it)", style="dim")
        self.set_status(status)

    def write_line(self, line: str) -> None:
        # (a demo's error can quote anything: an escape sequence would reach the terminal)
        self.log_lines.append(text_safe(line))
        self.query_one("#demo-log", Static).update(Text("\n".join(self.log_lines)))
        self.scroll_to_end()

    def scroll_to_end(self) -> None:
        """Scroll to the last line once the new text is laid out (scrolling at once stops
        short of the end: the page has not grown yet)."""
        body = self.query_one("#demo-body", VerticalScroll)
        self.call_after_refresh(body.scroll_end, animate=False)

    def set_status(self, text: Text) -> None:
        self.query_one("#demo-status", Static).update(text)

    @work(exclusive=True, group="demo", exit_on_error=False)
    async def run_demo(self) -> None:
        log = self
        command = self.prep.demo_command(self.demo_name)
        # The app records the run itself, in its own database (which may be --db, not
        # $PREP_DB); `python -m prep.demos` would record it a second time when PREP_DB is set.
        env = {k: v for k, v in os.environ.items() if k != "PREP_DB"}
        env["PYTHONUNBUFFERED"] = "1"
        env["PREP_DEMO_PROGRESS"] = "1"  # the demo says what it is doing, line by line
        log.write_line(f"» prep demo {self.demo_name} --json  (in a subprocess)")
        try:
            process = await asyncio.create_subprocess_exec(
                *command,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.STDOUT,  # one stream, in the order it was written
                env=env,
                limit=STREAM_LIMIT,
            )
        except OSError as exc:
            log.write_line(f"cannot start {command[0]}: {exc}")
            self.finish(None)
            return
        self._process = process

        async def pump(stream: asyncio.StreamReader | None) -> None:
            if stream is None:
                return
            while True:
                try:
                    raw = await stream.readline()
                except ValueError:  # a line longer than STREAM_LIMIT
                    raw = await stream.read(STREAM_LIMIT)
                if not raw:
                    return
                line = raw.decode("utf-8", errors="replace").rstrip("\r\n")
                report = parse_report(line)
                if report is not None:
                    self.report = report
                    self.show_checks(report)  # at once, not when the process has exited
                    self.progress = "checks in; finishing"
                    continue
                if line.startswith(PROGRESS_PREFIX):
                    self.progress = line[len(PROGRESS_PREFIX) :].strip()
                    self.tick()
                log.write_line(line)

        try:
            await pump(process.stdout)
            code = await process.wait()
        except asyncio.CancelledError:
            with contextlib.suppress(ProcessLookupError):
                process.kill()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(process.wait(), 2)
            raise
        finally:
            self._process = None
        self.finish(code)

    @work(exclusive=True, group="demo", exit_on_error=False)
    async def run_in_worker(self) -> None:
        """Run the demo in the app's demo worker (prep.tui.worker): progress and each check
        arrive as they are measured (each check appended to the list on screen; a section's
        final list replaces what streamed), the report at the end."""
        from prep.tui.worker import WorkerError

        worker = self.prep.demo_worker
        assert worker is not None
        loop = asyncio.get_running_loop()
        streamed: dict[str, list[dict]] = {"claim": [], "contrast": []}
        self.write_line(f"» {self.demo_name}  (in the demo worker: torch stays loaded)")

        def on_event(message: dict) -> None:  # the worker's reader thread
            loop.call_soon_threadsafe(event, message)

        def event(message: dict) -> None:
            kind, section = message.get("event"), message.get("section")
            if kind == "progress":
                self.progress = str(message.get("message", ""))
                self.write_line(self.progress)
                self.tick()
                return
            if section not in streamed or not self.running:
                return
            if kind == "check" and isinstance(message.get("check"), dict):
                streamed[section].append(message["check"])  # one check, the moment it is made
            elif kind == "checks":  # the section is done: its checks as the report holds them
                streamed[section] = list(message.get("checks") or [])
            else:
                return
            with contextlib.suppress(KeyError, TypeError, ValueError):
                partial = {"name": self.demo_name, "checks": streamed["claim"]}
                self.show_checks(Report.from_dict({**partial, "contrast": streamed["contrast"]}))

        future = worker.request("demo", on_event=on_event, name=self.demo_name)
        try:
            result = await asyncio.wrap_future(future)
        except asyncio.CancelledError:
            worker.cancel(future)  # the learner left: the worker stops at its next step
            raise
        except WorkerError as exc:
            if exc.cancelled:
                return
            self.write_line(str(exc))
            self.finish(2)  # one line saying why, as a usage error reads
            return
        try:
            self.report = Report.from_dict(result)
        except (KeyError, TypeError, ValueError):
            self.finish(None)
            return
        self.show_checks(self.report)
        self.finish(0 if self.report.passed else 1)

    def finish(self, code: int | None) -> None:
        self.running = False
        self.exit_code = code
        if self._ticker is not None:
            self._ticker.stop()
        report = self.report
        if report is None and code == 2 and self.log_lines:
            # a usage error: one line saying why (e.g. how to install the `real` extra)
            self.set_status(Text(self.log_lines[-1], style="bold red"))
            self.refresh_bindings()
            return
        if report is None:
            what = "could not start" if code is None else f"exited with code {code}"
            self.set_status(
                Text(
                    f"CRASHED: the demo {what} without a report (see the log above).",
                    style="bold red",
                )
            )
            self.refresh_bindings()
            return
        self.log_report(report)
        self.record(report)
        checks = report.checks + report.contrast
        failed = sum(1 for c in checks if not c.passed)
        where = f"{report.device or '?'}, {_fmt(report.seconds)} s"
        saved = "recorded" if self.recorded_id is not None else "not recorded"
        if report.passed and not failed:
            status = Text(
                f"PASS: all {len(checks)} checks hold ({where}; {saved}).", style="bold green"
            )
        else:
            status = Text(
                f"FAIL: {failed} of {len(checks)} checks failed: the claim is not shown "
                f"({where}; {saved}).",
                style="bold red",
            )
        self.set_status(status)
        self.scroll_to_end()  # again: a status that wraps grows the page after the checks did
        self.refresh_bindings()

    def log_report(self, report: Report) -> None:
        sizes = " ".join(f"{k}={v}" for k, v in report.sizes.items())
        self.write_line(
            f"{report.name or self.demo_name}: {report.device_name or report.device}"
            f" | {report.dtype} | scale {report.scale}"
            f" | seed {report.seed} | {_fmt(report.seconds)} s"
        )
        if sizes:
            self.write_line(f"sizes: {sizes}")
        for term in report.glossary:
            self.write_line(f"names: {term}")
        for note in report.notes:
            self.write_line(f"note: {note}")

    def show_checks(self, report: Report) -> None:
        """The demo's figures, then PASS/FAIL per check, the claim's and then the contrast's;
        long names wrap."""
        table = Table.grid(padding=(0, 1))
        table.add_column(width=4, no_wrap=True)
        table.add_column(ratio=1)
        label = report.contrast_label
        sections: tuple[tuple[str, list[Check]], ...] = (
            ("what the claim says", report.checks),
            (f"contrast: {label}" if label else "contrast", report.contrast),
        )
        rows = 0
        for section, checks in sections:
            if not checks:
                continue
            if rows:
                table.add_row("", "")
            table.add_row("", Text(section, style="bold italic"))
            for check in checks:
                detail = Text(
                    f"[{check.kind}] ", style="dim" if check.kind == "identity" else "bold"
                )
                detail.append(check.name)
                detail.append("\n" + describe(check), style="dim")
                table.add_row(
                    Text("PASS", style="bold green")
                    if check.passed
                    else Text("FAIL", style="bold red"),
                    detail,
                )
                rows += 1
        widget = self.query_one("#checks", Static)
        # the figures (if the demo draws any) above the checks, so the last check stays in view
        widget.update(Group(*render_figures(report.figures), table))
        widget.display = rows > 0
        if rows:
            self.scroll_to_end()  # the last check on screen, at 80x24 too

    def record(self, report: Report) -> None:
        """Record the run in the progress database, as `prep demo` does."""
        store = self.prep.store
        if store is None:
            return
        try:
            self.recorded_id = record_run(store, report, ran_at=self.prep.now())
        except StoreError as exc:
            self.notify(f"The run was not recorded: {exc}", severity="warning")

    # --- actions ------------------------------------------------------------------------

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "rerun":
            return not self.running
        return True

    def action_rerun(self) -> None:
        if not self.running:
            self.start()

    def action_back(self) -> None:
        if self.running:
            self.workers.cancel_group(self, "demo")
            self.notify(f"Stopped {self.demo_name}.")
        self.dismiss()
