"""Demo output as evidence: checks in words with their bar, three labels, names explained once,
figures drawn (terminal and SVG) with their arrays in the JSON but not in the database."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from rich.console import Console

from prep.demos import cli, figures
from prep.demos.registry import DEMOS, check_kinds
from prep.demos.report import (
    IDENTITY,
    KINDS,
    MEASUREMENT,
    SANITY,
    Check,
    Report,
    describe,
    glossary_for,
    kinds_text,
    render,
    rule_in_words,
)


def report(**extra) -> Report:
    base = dict(
        name="induction", claim="c", device="cpu", device_name="cpu", device_reason="cpu",
        dtype="float32", scale="small", seed=0, sizes={}, seconds=0.1, checks=[], contrast=[],
    )  # fmt: skip
    return Report(**(base | extra))


def drawn(renderable) -> str:
    console = Console(width=100, record=True, file=io.StringIO())
    console.print(renderable)
    return console.export_text()


def test_three_labels_and_their_counts() -> None:
    assert KINDS == (IDENTITY, SANITY, MEASUREMENT)
    checks = [Check("a", 1.0, ">= 0.5", True, kind=k) for k in (SANITY, MEASUREMENT, SANITY)]
    r = report(checks=checks)
    assert r.kind_counts() == {IDENTITY: 0, SANITY: 2, MEASUREMENT: 1}
    assert kinds_text(r.kind_counts()) == "1 measurement(s), 2 sanity check(s)"
    assert "(1 measurement(s), 2 sanity check(s))" in render(r)
    with pytest.raises(ValueError, match="kind must be one of"):
        Check("a", 1.0, "", True, kind="evidence")


def test_a_check_says_its_rule_in_words_and_where_its_bar_comes_from() -> None:
    assert rule_in_words(">= 0.5") == "must be at least 0.5"
    assert rule_in_words("== 1") == "must equal 1"
    assert rule_in_words("< 0.2") == "must be below 0.2"
    measured = Check("x", 0.7, ">= 0.5", True, kind=MEASUREMENT, bar="half the attention")
    text = describe(measured)
    assert "measured 0.7; must be at least 0.5" in text
    assert "why this bar: half the attention" in text
    assert "expected" not in render(report(checks=[measured]))  # not `measured 1, expected == 1`
    identity = describe(Check("y", 0.0, "== 0.0", True))
    assert "true by construction" in identity


def test_bar_and_figures_survive_json() -> None:
    fig = {"f": {"kind": "bars", "title": "t", "labels": ["a"], "values": [1.5]}}
    r = report(checks=[Check("x", 1.0, ">= 0.5", True, kind=SANITY, bar="why")], figures=fig)
    back = Report.from_dict(json.loads(r.to_json()))
    assert back.checks[0].bar == "why" and back.checks[0].kind == SANITY
    assert back.figures == fig
    assert "figures" not in r.summary_dict() and r.summary_dict()["checks"][0]["bar"] == "why"


def test_names_are_explained_once_per_run_when_used() -> None:
    terms = glossary_for(["L1H2: attention", "in-context accuracy drop", "L0H1 again"])
    assert len(terms) == 2 and terms[0].startswith("LxHy") and "copyable" in terms[1]
    assert glossary_for(["layer 3 of MiniLM"]) == []
    text = render(report(glossary=terms, checks=[Check("L1H2", 1.0, "== 1", True)]))
    assert text.count("LxHy = layer x, head y") == 1
    assert text.index("names:") < text.index("checks:")


def test_heatmap_scatter_and_bars_draw_their_values() -> None:
    heat = figures.heatmap(
        {"title": "diag", "rows": ["0", "1"], "cols": ["0", "1"], "values": [[1, 0], [0, 1]]}
    )
    lines = drawn(heat).splitlines()
    assert lines[0] == "diag" and lines[2].startswith("0 ██") and lines[3].startswith("1   ██")
    dots = drawn(figures.scatter({"title": "s", "x": [0, 1], "y": [0, 1], "xlabel": "score"}))
    assert dots.count("•") == 2 and "score (0 … 1)" in dots
    bars = drawn(figures.bars({"title": "b", "labels": ["neg", "pos"], "values": [-1.0, 2.0]}))
    assert "█" * 10 + "│" in bars and "│" + "█" * 20 in bars


def test_a_malformed_figure_is_named_not_fatal() -> None:
    parts = figures.render_figures({"bad": {"kind": "heatmap"}, "odd": {"kind": "pie"}})
    text = "".join(drawn(p) for p in parts)
    assert "bad: figure unreadable" in text and "odd: no drawing" in text


def test_plot_writes_an_svg_of_the_report_and_figures(tmp_path: Path, capsys) -> None:
    out = tmp_path / "ov.svg"
    assert cli.main(["ov-copying", "--device", "cpu", "--plot", str(out)]) == 0
    svg = out.read_text(encoding="utf-8")
    assert svg.startswith("<svg") and "ov-copying" in svg
    assert "eigenvalues" in svg  # the spectrum's title, drawn
    assert f"wrote {out}" in capsys.readouterr().err


def test_a_terminal_gets_the_figures_drawn_below_the_text(monkeypatch, capsys) -> None:
    """Plain `prep demo NAME` in a terminal draws the same figure --plot exports."""
    monkeypatch.setattr(cli, "_is_terminal", lambda: True)
    assert cli.main(["ov-copying", "--device", "cpu"]) == 0
    out = capsys.readouterr().out
    text, _, drawing = out.partition("result: all 6 checks hold")
    assert "L1H" in drawing and "eigenvalues, real part" in drawing and "λ0" in drawing
    assert "eigenvalues, real part" not in text  # below the report, not inside it


def _canned(monkeypatch, figs: dict) -> Report:
    """ov-copying's run replaced by a report with `figs`: the CLI's choices, without the run."""
    from prep.demos.decoder import ov_copying

    canned = report(name="ov-copying", figures=figs)
    monkeypatch.setattr(ov_copying, "run", lambda **_: canned)
    return canned


BARS_FIG = {"b": {"kind": "bars", "title": "a drawn figure", "labels": ["x"], "values": [1.0]}}


@pytest.mark.parametrize(
    ("terminal", "argv"),
    [(True, ["--no-plot"]), (False, []), (True, ["--json"])],
    ids=["no-plot", "piped", "json"],
)
def test_no_plot_pipes_and_json_print_todays_text(monkeypatch, capsys, terminal, argv) -> None:
    canned = _canned(monkeypatch, BARS_FIG)
    monkeypatch.setattr(cli, "_is_terminal", lambda: terminal)
    assert cli.main(["ov-copying", "--device", "cpu", *argv]) == 0
    out = capsys.readouterr().out
    assert out == (canned.to_json() if "--json" in argv else render(canned)) + "\n"
    assert out.count("a drawn figure") == ("--json" in argv)  # JSON carries it, drawn never


def test_a_terminal_without_figures_prints_the_text_only(monkeypatch, capsys) -> None:
    canned = _canned(monkeypatch, {})
    monkeypatch.setattr(cli, "_is_terminal", lambda: True)
    assert cli.main(["ov-copying", "--device", "cpu"]) == 0
    assert capsys.readouterr().out == render(canned) + "\n"
    _canned(monkeypatch, BARS_FIG)
    assert cli.main(["ov-copying", "--device", "cpu"]) == 0
    assert "a drawn figure" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("name", "why"),
    [("x.png", "ending in .svg"), ("missing/x.svg", "does not exist"), (".", "ending in .svg")],
)
def test_plot_to_a_bad_path_is_one_line_and_exit_2(tmp_path, capsys, name: str, why: str) -> None:
    assert cli.main(["per-head-sum", "--plot", str(tmp_path / name)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and why in err[0] and "--plot" in err[0]


def test_the_figures_demos_draw_carry_their_arrays(capsys) -> None:
    assert cli.main(["induction", "--device", "cpu", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    pattern = data["figures"]["pattern_induction"]["values"]
    assert len(pattern) == 32 and all(len(row) == 32 for row in pattern)
    assert abs(sum(pattern[20]) - 1.0) < 1e-2  # a row of attention sums to 1
    bars = data["figures"]["path_ablation"]
    assert len(bars["values"]) == 15  # 3 seeds x (3 paths, all three, half of all three)
    all_paths = [
        v for lab, v in zip(bars["labels"], bars["values"], strict=True) if "all three" in lab
    ]
    half = [v for lab, v in zip(bars["labels"], bars["values"], strict=True) if "half" in lab]
    assert len(all_paths) == 3 and all(
        abs(a / 2 - h) < 1e-3 for a, h in zip(all_paths, half, strict=True)
    )
    assert all(a > 0 for a in all_paths)  # the all-paths bar is drawn, not zeros


def test_list_counts_sanity_checks(capsys) -> None:
    assert check_kinds("no-wo") == {"identity": 6, "sanity": 4, "measurement": 0}
    assert cli.main(["--list"]) == 0
    out = capsys.readouterr().out
    assert "0 measurement(s), 4 sanity check(s), 6 identity check(s)" in out
    assert all(check_kinds(n) is not None for n in DEMOS)


def test_the_label_rule_holds_across_demos() -> None:
    """measurement = trained weights against a null: synthetic demos have none; a demo on
    trained weights has at least one, or its claim says its checks are sanity checks, or it is
    an identity demo (the algebra checked on real weights)."""
    for name, info in DEMOS.items():
        kinds = check_kinds(name)
        assert kinds is not None, name
        if info.weights == "synthetic":
            assert kinds["measurement"] == 0, name
        elif kinds["measurement"] == 0:
            identity_demo = kinds["sanity"] <= 1 < kinds["identity"]
            assert "sanity" in info.claim or identity_demo, name
