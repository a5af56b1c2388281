"""The evidence drawn: heatmaps, scatters and bar charts as Rich renderables, and SVG export.

Torch-free (the TUI imports it). A demo puts its figures in `Report.figures`, a dict of plain
JSON: {name: {"kind": "heatmap" | "scatter" | "bars", "title": str, ...arrays}}:

- heatmap: "rows" and "cols" (labels), "values" (rows x cols numbers), optional "caption";
- scatter: "x", "y" (numbers), "xlabel", "ylabel", optional "labels" (one per point);
- bars: "labels", "values" (numbers), optional "caption".

The same renderables are what the demo screen shows and what `prep demo NAME --plot FILE.svg`
writes (Rich's own SVG export: no plotting library).
"""

from __future__ import annotations

import io
import math
import sys
from pathlib import Path
from typing import Any

from rich.console import Console, Group, RenderableType
from rich.text import Text

SHADES = " ░▒▓█"  # light to dark, for heatmap cells
SCATTER_W, SCATTER_H = 48, 14


def _finite(values: list[float]) -> list[float]:
    return [v for v in values if isinstance(v, int | float) and math.isfinite(v)]


def heatmap(fig: dict[str, Any]) -> RenderableType:
    """Each cell two characters wide, shaded by its value between the smallest and largest."""
    rows, cols, values = fig["rows"], fig["cols"], fig["values"]
    flat = _finite([v for row in values for v in row])
    lo, hi = (min(flat), max(flat)) if flat else (0.0, 1.0)
    span = hi - lo or 1.0
    width = max((len(str(r)) for r in rows), default=0)
    out = Text()
    out.append(" " * (width + 1) + "".join(f"{str(c)[-2:]:>2}" for c in cols) + "\n", "dim")
    for label, row in zip(rows, values, strict=True):
        out.append(f"{str(label):>{width}} ", "dim")
        for v in row:
            level = 0 if not math.isfinite(v) else round((v - lo) / span * (len(SHADES) - 1))
            out.append(SHADES[level] * 2, "cyan")
        out.append("\n")
    out.append(f"scale: '{SHADES[1]}' near {lo:.3g} … '{SHADES[-1]}' {hi:.3g}", "dim")
    return _titled(fig, out)


def scatter(fig: dict[str, Any]) -> RenderableType:
    """Points on a character grid, x to the right, y up; axes labelled with their ranges."""
    xs, ys = fig["x"], fig["y"]
    pts = [(x, y) for x, y in zip(xs, ys, strict=True) if math.isfinite(x) and math.isfinite(y)]
    grid = [[" "] * SCATTER_W for _ in range(SCATTER_H)]
    if pts:
        x0, x1 = min(p[0] for p in pts), max(p[0] for p in pts)
        y0, y1 = min(p[1] for p in pts), max(p[1] for p in pts)
        for x, y in pts:
            col = round((x - x0) / ((x1 - x0) or 1.0) * (SCATTER_W - 1))
            row = SCATTER_H - 1 - round((y - y0) / ((y1 - y0) or 1.0) * (SCATTER_H - 1))
            grid[row][col] = "•" if grid[row][col] == " " else "◆"
    else:
        x0 = x1 = y0 = y1 = 0.0
    out = Text()
    out.append(f"{fig.get('ylabel', 'y')} ({y0:.3g} … {y1:.3g}) ↑\n", "dim")
    for line in grid:
        out.append("│", "dim")
        out.append("".join(line) + "\n", "yellow")
    out.append("└" + "─" * SCATTER_W + "→ ", "dim")
    out.append(f"{fig.get('xlabel', 'x')} ({x0:.3g} … {x1:.3g})", "dim")
    return _titled(fig, out)


def bars(fig: dict[str, Any]) -> RenderableType:
    """One horizontal bar per value, from a zero line (negative values to the left)."""
    labels, values = fig["labels"], fig["values"]
    flat = _finite(values)
    biggest = max((abs(v) for v in flat), default=1.0) or 1.0
    half = 20
    width = max((len(str(lab)) for lab in labels), default=0)
    out = Text()
    for label, v in zip(labels, values, strict=True):
        n = round(abs(v) / biggest * half) if math.isfinite(v) else 0
        left = ("█" * n).rjust(half) if v < 0 else " " * half
        right = ("█" * n).ljust(half) if v >= 0 else " " * half
        out.append(f"{str(label):>{width}} ", "dim")
        out.append(left, "red")
        out.append("│", "dim")
        out.append(right, "green")
        out.append(f" {v:.3g}\n")
    return _titled(fig, out)


def _titled(fig: dict[str, Any], body: Text) -> RenderableType:
    parts: list[RenderableType] = [Text(str(fig.get("title", "")), style="bold")]
    parts.append(body)
    if fig.get("caption"):
        parts.append(Text(str(fig["caption"]), style="italic dim"))
    return Group(*parts)


DRAW = {"heatmap": heatmap, "scatter": scatter, "bars": bars}


def render_figures(figures: dict[str, Any]) -> list[RenderableType]:
    """Every figure of a report drawn, in order; an unknown kind is named, not drawn."""
    out: list[RenderableType] = []
    for name, fig in figures.items():
        draw = DRAW.get(fig.get("kind", "")) if isinstance(fig, dict) else None
        if draw is None:
            out.append(Text(f"{name}: no drawing for this figure", style="dim"))
            continue
        try:
            out.append(draw(fig))
        except (KeyError, TypeError, ValueError) as exc:  # a malformed figure never breaks a run
            out.append(Text(f"{name}: figure unreadable ({exc})", style="dim"))
        out.append(Text(""))
    return out


def print_figures(figures: dict[str, Any], file: Any = None) -> None:
    """Every figure drawn to `file` (stdout by default), as the demo screen draws it."""
    console = Console(file=file if file is not None else sys.stdout)
    console.print()
    for part in render_figures(figures):
        console.print(part)


def write_svg(path: Path, title: str, text: str, figures: dict[str, Any]) -> None:
    """The report's text and its figures, drawn as in the terminal, to `path` as SVG."""
    console = Console(record=True, width=100, file=io.StringIO())
    console.print(Text(text))
    for part in render_figures(figures):
        console.print(part)
    path.write_text(console.export_svg(title=title), encoding="utf-8")
