"""`prep demo NAME [--device D] [--scale S] [--seed N] [--json] [--plot FILE.svg] [--no-plot]
[--model M]`, `prep demo --list [--json]`.

A demo with figures draws them below its text when stdout is a terminal (the same drawings as the
demo screen and `--plot`); `--no-plot`, `--json` or piped output print the text only.

Exit codes: 0 every check holds, 1 a check failed, 2 a usage error (also: a real-weight demo
without the optional `real` extra, or a --model that cannot be loaded). torch is imported only
once a demo actually runs, so `--list` and usage errors stay fast and torch-free. `run` hands the
report back: the front end that called it records the run (`prep demo` in prep.tui.cli).
"""

from __future__ import annotations

import argparse
import difflib
import importlib
import json
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

from prep.demos.pretrained import extra
from prep.demos.registry import DEMOS, check_kinds, names
from prep.demos.report import Report, kinds_text, render
from prep.demos.safetext import one_line_safe

PROG = "prep demo"
LinkedCards = Callable[[str], list[str]]


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        """One line on stderr and exit 2, like argparse, without the usage block."""
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


SEED_MIN, SEED_MAX = -(2**63), 2**63 - 1  # what torch.manual_seed and the run log hold


def _seed(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text[:40]!r} is not a whole number") from None
    if not SEED_MIN <= value <= SEED_MAX:
        raise argparse.ArgumentTypeError(f"must be between {SEED_MIN} and {SEED_MAX} (64 bits)")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog=PROG,
        description="Run one demo that numerically checks a claim about W_O.",
        epilog="Exit status: 0 every check holds, 1 a check failed, 2 usage error.",
    )
    parser.add_argument("name", nargs="?", metavar="NAME", help="demo to run (see --list)")
    parser.add_argument("--list", action="store_true", help="list every demo and its claim")
    parser.add_argument(
        "--device",
        choices=("auto", "cpu", "cuda", "mps"),
        default="auto",
        help="auto = cuda, then mps, then cpu (default: auto)",
    )
    parser.add_argument(
        "--scale",
        choices=("small", "large"),
        default="small",
        help="small runs in about a second on a CPU; large uses production sizes (GPU)",
    )
    parser.add_argument("--seed", type=_seed, default=0, help="random seed (default: 0)")
    parser.add_argument("--json", action="store_true", help="print one JSON object, no prose")
    parser.add_argument(
        "--plot",
        metavar="FILE.svg",
        type=Path,
        help="also write the report and its figures, drawn as in the terminal, to FILE.svg",
    )
    parser.add_argument(
        "--no-plot",
        action="store_true",
        help="print the text only, without the figures drawn below it (the default when "
        "stdout is not a terminal)",
    )
    parser.add_argument(
        "--model",
        metavar="PATH_OR_NAME",
        help="real-* demos only: a BERT- or GPT-2-family checkpoint folder (or a hub name, "
        "where there is a network) instead of the shipped all-MiniLM-L6-v2",
    )
    return parser


def _is_terminal() -> bool:
    """Whether stdout is a terminal: figures are drawn there only, never into a pipe or file."""
    return sys.stdout.isatty()


def _cards(linked_cards: LinkedCards | None, name: str) -> list[str]:
    if linked_cards is None:
        return []
    try:
        return list(linked_cards(name))
    except Exception as exc:  # a broken deck must not break the demo
        _say(f"{PROG}: warning: could not list the cards for {name}: {exc}")
        return []


def _plot_problem(path: Path) -> str:
    """Why `path` cannot take the SVG, checked before the demo runs ('' when it can)."""
    if path.suffix.lower() != ".svg":
        return "the figure is written as SVG: give a file name ending in .svg"
    if path.is_dir():
        return "is a folder"
    if not path.parent.is_dir():
        return f"folder {path.parent} does not exist"
    try:
        real = path.resolve()  # (a link: the file it leads to is the one written)
    except (OSError, RuntimeError):  # (3.11-3.12 raise RuntimeError on a loop)
        return "a symbolic link loop"
    if not real.parent.is_dir():
        return f"it leads to {real}, and there is no folder {real.parent}"
    return ""


def list_entries(linked_cards: LinkedCards | None = None) -> list[dict[str, Any]]:
    """Per demo: name, claim, weights, cards and its declared count of checks of each kind."""
    return [
        {
            "name": info.name,
            "claim": info.claim,
            "weights": info.weights,
            "cards": _cards(linked_cards, info.name),
            "checks": check_kinds(info.name),  # None when the demo declares no CHECK_KINDS
        }
        for info in DEMOS.values()
    ]


def _kinds_text(kinds: dict[str, int] | None, weights: str) -> str:
    if kinds is None:
        return "checks: not declared"
    text = kinds_text(kinds)
    return text + (" on all-MiniLM-L6-v2" if weights == "pretrained" else "")


def print_list(linked_cards: LinkedCards | None = None, *, as_json: bool = False) -> None:
    entries = list_entries(linked_cards)
    if as_json:
        print(json.dumps(entries))
        return
    width = max(len(n) for n in names())
    indent = " " * (width + 2)
    for entry in entries:
        first = f"{entry['name']:<{width}}  "
        print(textwrap.fill(entry["claim"], 100, initial_indent=first, subsequent_indent=indent))
        print(
            f"{indent}weights: {entry['weights']}; {_kinds_text(entry['checks'], entry['weights'])}"
        )
        if entry["cards"]:
            print(
                textwrap.fill(
                    ", ".join(entry["cards"]),
                    100,
                    initial_indent=indent + "backs cards: ",
                    subsequent_indent=indent + "  ",
                )
            )


def unknown_name_message(name: str) -> str:
    close = difflib.get_close_matches(name, names(), n=3, cutoff=0.5)
    hint = f"; did you mean {' or '.join(close)}?" if close else ""
    return f"{PROG}: unknown demo {name!r}{hint} (`{PROG} --list` shows all)"


def _say(line: str) -> None:
    """One line on stderr (an error, a note), its control characters written as escapes: a
    --model, a --plot path or an error quoting them comes from outside, and must not reach the
    terminal as commands (a --model's ESC]0;... set the window title)."""
    print(one_line_safe(line), file=sys.stderr)


def main(argv: list[str] | None = None, *, linked_cards: LinkedCards | None = None) -> int:
    """Run the CLI; returns the exit code."""
    return run(argv, linked_cards=linked_cards)[0]


def run(
    argv: list[str] | None = None, *, linked_cards: LinkedCards | None = None
) -> tuple[int, Report | None]:
    """Run the CLI; returns the exit code and the report of the demo that ran (None after
    --list, --help or a usage error). Recording the run is the caller's: demos know nothing of
    the progress database."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse: 0 after --help, 2 on a usage error
        return (exc.code if isinstance(exc.code, int) else 2), None
    if args.list and args.name is not None:  # it was silently ignored
        _say(f"{PROG}: error: --list takes no demo name (got {args.name!r})")
        return 2, None
    if args.list:
        print_list(linked_cards, as_json=args.json)
        return 0, None
    if args.name is None:
        _say(f"{PROG}: error: give a demo NAME or --list (see {PROG} --help)")
        return 2, None
    if args.name not in DEMOS:
        _say(unknown_name_message(args.name))
        return 2, None
    if args.plot is not None and (message := _plot_problem(args.plot)):
        _say(f"{PROG}: error: --plot {args.plot}: {message}")
        return 2, None
    real = DEMOS[args.name].weights == "pretrained"
    if args.model is not None and not real:
        _say(
            f"{PROG}: error: --model works with the real-weight demos only "
            f"({', '.join(n for n in names() if DEMOS[n].weights == 'pretrained')})"
        )
        return 2, None
    if args.model is not None and not args.model.strip():  # (an unset "$MODEL": not the default)
        _say(
            f"{PROG}: error: --model is empty: give a checkpoint folder or hub name, or leave "
            "--model out for the shipped all-MiniLM-L6-v2"
        )
        return 2, None
    if args.model is not None and (why := _model_problem(args.model)):
        _say(f"{PROG}: error: --model {args.model}: {why}")
        return 2, None
    if real and (missing := extra.missing(args.model)):
        _say(f"{PROG} {args.name}: {missing}")
        return 2, None

    try:
        return _run_demo(args, linked_cards)
    except KeyboardInterrupt:  # 130 as a shell reports Ctrl-C; 1 would mean a check failed
        _say(f"{PROG}: interrupted")
        return 130, None


def _model_problem(model: str) -> str | None:
    """Why --model can be neither a checkpoint folder nor a hub name, seen before torch or
    transformers loads: an entry on disk that leads to no folder (a symbolic link loop, a link
    to nothing) or a name that looks like a path (a / in it, or starting with . or ~) that
    is not there. Such a value was taken for a hub name: ~48 s of retries offline. None for a
    folder, or a hub name (no / in it: the loader's own rule, pretrained.load)."""
    import errno
    import os

    if model == "-":
        return "a checkpoint folder or hub name, not standard input (a folder named - is ./-)"
    looks_local = os.sep in model or (os.altsep or os.sep) in model or model[:1] in (".", "~")
    try:
        if os.path.isdir(model) or not (looks_local or os.path.lexists(model)):
            return None  # (a folder; or a hub name, nothing of that name here)
        os.stat(model)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return "a symbolic link loop, not a checkpoint folder"
        if os.path.islink(model):
            return "a symbolic link to nothing, not a checkpoint folder"
        if exc.errno in (errno.ENOENT, errno.ENOTDIR):
            return "no such folder"
        return f"cannot look at it ({exc.strerror or exc})"
    return "not a folder (a checkpoint is a folder of config and weights)" if looks_local else None


def _run_demo(
    args: argparse.Namespace, linked_cards: LinkedCards | None
) -> tuple[int, Report | None]:
    from prep.demos import harness  # imports torch
    from prep.demos._torch import set_threads

    try:
        choice = harness.select_device(args.device)
    except harness.DeviceError as exc:
        _say(f"{PROG}: {exc}")
        return 2, None
    # torch's intra-op threads for the machine's load, as the app's worker sets them: on 2 busy
    # cores, 2 threads spin-waiting for each other ran block-diagonal 305 s (73 CPU-s) instead
    # of ~10 s; on a quiet machine this is every core, torch's default.
    set_threads()
    if args.scale == "large" and choice.device.type == "cpu":
        _say(f"{PROG}: note: --scale large is meant for a GPU; on cpu it may take minutes")
    from prep.demos.decoder.decoder import WeightsError

    module = importlib.import_module(DEMOS[args.name].module)
    report: Report
    if DEMOS[args.name].weights == "pretrained":
        from prep.demos.pretrained.pretrained import ModelError

        try:
            report = module.run(scale=args.scale, device=choice, seed=args.seed, model=args.model)
        except ModelError as exc:
            _say(f"{PROG} {args.name}: {exc}")
            return 2, None
    else:
        try:
            report = module.run(scale=args.scale, device=choice, seed=args.seed)
        except WeightsError as exc:  # the shipped decoder's files are missing or malformed
            _say(f"{PROG}: {exc}")
            return 2, None
    report.cards = _cards(linked_cards, args.name)
    print(report.to_json() if args.json else render(report), flush=True)
    if report.figures and not (args.json or args.no_plot) and _is_terminal():
        from prep.demos.figures import print_figures

        print_figures(report.figures)
    if args.plot is not None:
        from prep.demos.figures import write_svg

        try:
            write_svg(args.plot, f"prep demo {args.name}", render(report), report.figures)
        except OSError as exc:
            _say(f"{PROG}: error: --plot {args.plot}: {exc.strerror or exc}")
            return 2, report
        _say(f"{PROG}: wrote {args.plot}")
    return (0 if report.passed else 1), report
