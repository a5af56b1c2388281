"""The grader (prep.demos.pretrained.grader): its rubric and answer files, its text rules, the worker's
protocol, `prep grade`, and the real grader on one counterexample per answer style (MiniLM
loaded once per session: conftest's `minilm`)."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from prep.demos import worker
from prep.demos.pretrained.grader import batch
from prep.demos.pretrained.grader import text as tx
from prep.demos.pretrained.grader.rubric import Rubric, RubricError, load_rubric, parse_rubric

RUBRIC_YAML = """\
question: Beyond shape preservation, what does W_O do after the heads are concatenated?
points:
  - id: mix
    text: W_O mixes heads, so each head can write along directions shared with other heads.
  - id: weight
    text: Each head's block of W_O can amplify a useful head or suppress a noisy one.
  - id: slice
    text: Without W_O each head writes only into its own fixed slice of the residual stream.
"""


@pytest.fixture(scope="module")
def grader(minilm):
    from prep.demos.pretrained.grader.model import Encoder, Grader

    return Grader(encoder=Encoder(real=minilm))


@pytest.fixture
def rubric(tmp_path: Path) -> Rubric:
    path = tmp_path / "r.yaml"
    path.write_text(RUBRIC_YAML, encoding="utf-8")
    return load_rubric(path)


# --- files ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("points: []\n", "'question' must be non-empty text"),
        ("question: q\npoints: []\n", "'points' must be a non-empty list"),
        ("question: q\npoints: [{id: a, text: x}, {id: a, text: y}]\n", "point id a appears twice"),
        ("question: q\npoints: [{id: a}]\n", "point a needs a non-empty 'text'"),
        ("question: q\npoints: [x]\n", "point 1 must be a mapping"),
        ("question: q\nextra: 1\npoints: [{id: a, text: x}]\n", "unknown key 'extra'"),
        ("question: [unclosed\n", ":2: not valid YAML"),
        ("- a list\n", "a rubric is a mapping"),
    ],
)
def test_a_bad_rubric_is_one_line_naming_the_file(tmp_path: Path, text: str, message: str):
    path = tmp_path / "bad.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(RubricError) as err:
        load_rubric(path)
    assert str(err.value).startswith(str(path)) and message in str(err.value)
    assert "\n" not in str(err.value)


@pytest.mark.parametrize(
    ("lines", "message"),
    [
        (['{"answer_id": 1, "answer": "x"}', "not json"], ":2: not a JSON object"),
        (['{"answer": "x"}'], ':1: expected {"answer_id"'),
        (['{"answer_id": 1, "answer": 3}'], ":1: answer must be text"),
        (['{"answer_id": true, "answer": "x"}'], ":1: answer_id must be text or a whole number"),
        (['{"answer_id": 1, "answer": "x"}', '{"answer_id": 1, "answer": "y"}'], ":2: answer_id 1"),
        ([], "no answers"),
    ],
)
def test_bad_answers_are_one_line_naming_file_and_line(tmp_path: Path, lines, message):
    path = tmp_path / "a.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(RubricError) as err:
        batch.read_answers(path)
    assert str(err.value).startswith(str(path)) and message in str(err.value)


def test_rubric_round_trips_through_the_worker_form(rubric: Rubric):
    assert Rubric.from_dict(json.loads(json.dumps(rubric.to_dict()))) == rubric
    assert [p.id for p in rubric.points] == ["mix", "weight", "slice"]


# --- text rules ----------------------------------------------------------------------------


def test_negation_rule_and_sentences():
    assert tx.negation_mismatch("W_O mixes heads.", "W_O does not mix heads.")
    assert tx.negation_mismatch("W_O mixes heads.", "Heads don't get mixed by W_O.")
    assert not tx.negation_mismatch("Heads never share a direction.", "No head can share one.")
    assert not tx.negation_mismatch("Without W_O heads keep slices.", "Without it, slices stay.")
    assert tx.sentences("1) First one. 2) Second; third\n- fourth") == [
        "First one.",
        "Second;",
        "third",
        "fourth",
    ]
    assert tx.function_ratio("W_O, heads, mixing, residual") == 0.0


def test_sentences_do_not_end_at_abbreviations_or_a_bare_choice_letter():
    # a citation is one sentence with its claim (the rubric pass found "Xiao et al." and
    # "2023." graded as sentences of their own); a choice answer's "(c)." has nothing to grade
    assert tx.sentences("Sinks were named by Xiao et al. 2023. They absorb mass.") == [
        "Sinks were named by Xiao et al. 2023.",
        "They absorb mass.",
    ]
    assert tx.sentences("(c). W_O is shared, e.g. across heads, i.e. once. No. It is.") == [
        "W_O is shared, e.g. across heads, i.e. once.",
        "No.",
        "It is.",
    ]
    assert tx.sentences("See Fig. 3 vs. Eq. 2. Next.") == ["See Fig. 3 vs. Eq. 2.", "Next."]


NO_WO = (
    "No W_O: shapes still line up, but each head's write slice is fixed by its index and heads "
    "never share a direction."
)


@pytest.mark.parametrize(
    ("point", "sentence", "mismatch"),
    [
        # the user pass: both say 'not', about different things (mix vs share)
        (NO_WO, "W_O does not mix heads across the residual stream.", True),
        (NO_WO, "No two heads would ever share a direction, each stuck in its slice.", False),
        # "no X:" / "no X means" is a condition, not a denial
        ("Without W_O each head writes into its own slice.", "no W_O means fixed slices.", False),
        # the sentence asserts what the point denies, whatever else it negates
        (
            "W_O cannot be folded into the next layer because LayerNorm sits in between.",
            "W_O can be folded into the next layer with no problem, since nothing sits there.",
            True,
        ),
        (
            "W_O cannot be folded into the next layer.",
            "W_O can be folded into the next layer.",
            True,
        ),
        ("The pattern can shrink the output but never amplify it.", "Softmax rows amplify.", True),
        # a negated point said positively in other words is left to the head
        (
            "The pattern can shrink the output but never amplify it.",
            "The output is a convex combination of the values.",
            False,
        ),
        ("The pattern can shrink the output but never amplify it.", "It can't amplify.", False),
        # round 13's learner pass: a denial in one clause is no denial of another clause's claim
        (
            "With the MLP outputs zeroed too, the residual stream is exactly the embedding.",
            "At init every block writes nothing, and if the MLP outputs are zero too the "
            "residual stream is just the embedding.",
            False,
        ),
        (
            "W_O still gets a gradient, z_h times the upstream gradient.",
            "W_O still gets a gradient, but W_Q, W_K and W_V get none on the first step.",
            False,
        ),
        # ... and a denial whose cue ends its clause denies the words before it
        ("W_O mixes heads.", "W_O does nothing.", True),
        (
            "With W_O exactly zero, every block writes nothing.",
            "Every block writes nothing.",
            False,
        ),
    ],
)
def test_negation_rule_compares_what_is_denied(point: str, sentence: str, mismatch: bool):
    assert tx.negation_mismatch(point, sentence) is mismatch


# --- the grader, one counterexample per style --------------------------------------------------


def covered(grader, rubric: Rubric, answer: str) -> dict[str, bool]:
    return {v.id: v.covered for v in grader.grade(rubric, answer).points}


def test_strong_answer_covers_every_point_with_its_sentence(grader, rubric):
    answer = (
        "W_O lets the heads write along shared directions, so it mixes them. "
        "Each head's block of W_O can also amplify a useful head or suppress a noisy one. "
        "Without W_O, every head would be stuck in its own fixed slice of the residual stream."
    )
    grade = grader.grade(rubric, answer)
    assert {v.id: v.covered for v in grade.points} == {"mix": True, "weight": True, "slice": True}
    by_id = {v.id: v for v in grade.points}
    assert by_id["weight"].sentence.startswith("Each head's block")
    assert by_id["slice"].sentence.startswith("Without W_O")


def test_negated_points_are_not_covered(grader, rubric):
    answer = (
        "W_O does not mix heads, and no head writes along a direction shared with others. "
        "A head's block of W_O can never amplify or suppress it."
    )
    assert covered(grader, rubric, answer) == {"mix": False, "weight": False, "slice": False}


def test_shuffled_salad_is_not_covered(grader, rubric):
    answer = "Slice the residual directions amplify W_O heads fixed noisy shared stream suppress."
    assert covered(grader, rubric, answer) == {"mix": False, "weight": False, "slice": False}


KNOWN_LIMIT = (
    "known limitation of the shipped grader (frozen MiniLM features): a sentence about the same "
    "subject can score as covering a point it does not state; "
    "see demos/pretrained/weights/grader_metrics.json (partial, rambling)"
)


def test_keyword_list_salad_is_not_covered(grader, rubric):
    answer = (
        "W_O heads mixing shared directions, amplify suppress noisy, fixed slice residual stream."
    )
    assert covered(grader, rubric, answer) == {"mix": False, "weight": False, "slice": False}


TWO_ROLES = Rubric.from_texts(
    "Beyond shape preservation, name two things W_O does after the heads are concatenated.",
    [
        "Two distinct roles of W_O beyond shape preservation: cross-head mixing and learned "
        "per-head weighting.",
        NO_WO,
    ],
)


def test_a_denial_of_something_else_covers_no_negated_point(grader):
    """The user pass: 'W_O does not mix heads' graded as covering 'No W_O: ... heads never
    share a direction' (both say 'not'; round 1's rule let it through at 0.77)."""
    answer = "W_O does not mix heads across the residual stream."
    assert covered(grader, TWO_ROLES, answer) == {"p1": False, "p2": False}


def test_the_user_pass_answer_covers_nothing(grader):
    """With its second sentence, the vague 'It only fixes the shape ...' scored about 0.5 on
    both points until round 4 (a strict xfail then); point_margin and sentence_margin, which
    weigh a sentence against the rubric's other points and the answer's other sentences, let
    it pass."""
    answer = (
        "W_O does not mix heads across the residual stream. It only fixes the shape so the "
        "output matches d_model."
    )
    assert covered(grader, TWO_ROLES, answer) == {"p1": False, "p2": False}


def test_off_topic_and_empty_answers_cover_nothing(grader, rubric):
    off = "Layer normalisation subtracts the mean and divides by the standard deviation."
    assert not any(covered(grader, rubric, off).values())
    assert not any(covered(grader, rubric, "  ").values())


def test_partial_and_rambling_answers_cover_only_what_they_say(grader, rubric):
    """A strict xfail until round 13 (the weighting sentence earned the mixing and slice
    points at 0.75 and 0.73): own_share's rule, a sentence less than a third of which is about
    a point does not cover it (grader/model.py)."""
    partial = "Each head's block of W_O can scale it up when it is useful or down when it is noise."
    assert covered(grader, rubric, partial) == {"mix": False, "weight": True, "slice": False}
    rambling = (
        "Well, attention is a big topic and I have used it in many projects. "
        "People draw those heatmaps all the time, they are fun. "
        "The important bit is that each head's block of W_O can amplify useful heads and "
        "suppress noisy ones. Anyway, that is my answer."
    )
    assert covered(grader, rubric, rambling) == {"mix": False, "weight": True, "slice": False}


TERSE = "Mixes heads into shared directions; weights each head; no W_O means fixed slices."


def test_terse_answers_are_found(grader, rubric):
    found = covered(grader, rubric, TERSE)
    assert found["mix"] and found["slice"]


@pytest.mark.xfail(
    strict=True,
    reason="round 12's head (run 11: generic negatives and idf_recall) scores the three-word "
    "'weights each head;' 0.09 on the weighting point (run 10: covered). It shares only 'head', "
    "the decks' commonest word, with the point, as a generic sentence does; generic sentences "
    "credited fell 0.24 -> 0.026 of their points, held-out terse accuracy 0.778 -> 0.756",
)
def test_a_three_word_terse_sentence_is_found(grader, rubric):
    assert covered(grader, rubric, TERSE)["weight"]


@pytest.mark.xfail(
    strict=True,
    reason="round 3's head (cos_sentence) scored this one-sentence paraphrase 0.40 on the mixing "
    "point, round 4's (run 10) 0.25; run 7's head found it. Held-out paraphrases found rose "
    "0.455 -> 0.523 -> 0.636 all the same (grader_metrics.json, runs 9 and 10); "
    "tests/test_grader_paraphrase.py holds one it finds",
)
def test_paraphrased_answers_are_found(grader, rubric):
    paraphrase = "The output projection lets every attention unit deposit onto common axes."
    assert covered(grader, rubric, paraphrase)["mix"]


# --- the worker ----------------------------------------------------------------------------


def test_worker_answers_ping_grade_and_errors_one_line_each(grader, rubric, monkeypatch):
    monkeypatch.setitem(worker._state, "grader", grader)
    requests = [
        {"id": 1, "op": "ping"},
        {"id": 2, "op": "grade", "rubric": rubric.to_dict(), "answer": "W_O mixes the heads."},
        {"id": 3, "op": "nope"},
        {"id": 4, "op": "grade", "rubric": rubric.to_dict(), "answer": 5},
    ]
    stdin = io.StringIO("\n".join(json.dumps(r) for r in requests) + "\nnot json\n")
    stdout = io.StringIO()
    worker.serve(stdin, stdout)
    lines = [json.loads(line) for line in stdout.getvalue().splitlines()]
    out = {o["id"]: o for o in lines}
    assert len(lines) == 5 and set(out) == {1, 2, 3, 4, None}
    assert out[1]["ok"] and out[1]["result"]["grader"]
    assert out[2]["ok"] and out[2]["result"]["points"][0]["covered"] is True
    assert not out[3]["ok"] and "unknown op" in out[3]["error"]
    assert not out[4]["ok"] and "'answer' must be text" in out[4]["error"]
    assert not out[None]["ok"]


def test_one_worker_grades_while_a_demo_runs_and_cancelling_the_demo_spares_grading(
    grader, rubric, monkeypatch
):
    """One process, one reader loop, two lanes: a grade sent after a long demo is answered
    while the demo still runs, and the demo's cancel (the demo screen's Esc) stops only it."""
    monkeypatch.setitem(worker._state, "grader", grader)
    stdout = io.StringIO()
    seen: list[str] = []

    def slow_demo(w: worker.Worker, req: dict) -> dict:
        import time

        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:  # runs until cancelled, noting what was answered
            seen.append(stdout.getvalue())
            w.check_cancelled(req["id"])
            time.sleep(0.01)
        raise AssertionError("never cancelled")

    monkeypatch.setitem(worker.OPS, "demo", slow_demo)

    class Lines(io.StringIO):
        """stdin that sends the cancel only once grade 2 has been answered."""

        def __iter__(self):
            import time

            yield json.dumps({"id": 1, "op": "demo", "name": "x"}) + "\n"
            answer = "W_O mixes the heads."
            yield json.dumps({"id": 2, "op": "grade", "rubric": rubric.to_dict(), "answer": answer})
            deadline = time.monotonic() + 60
            while '"id": 2' not in stdout.getvalue() and time.monotonic() < deadline:
                time.sleep(0.01)
            yield json.dumps({"id": 3, "op": "cancel", "target": 1}) + "\n"
            yield json.dumps({"id": 4, "op": "grade", "rubric": rubric.to_dict(), "answer": ""})

    worker.serve(Lines(), stdout)
    lines = [json.loads(line) for line in stdout.getvalue().splitlines()]
    out = {o["id"]: o for o in lines}
    assert out[2]["ok"] and out[2]["result"]["points"][0]["covered"] is True
    assert any('"id": 2' in s for s in seen)  # graded while the demo was running
    assert out[1]["cancelled"] and not out[1]["ok"]
    assert out[3]["ok"] and out[4]["ok"]  # grading goes on after the cancel
    assert [o["id"] for o in lines].index(2) < [o["id"] for o in lines].index(1)


def test_worker_client_round_trip_through_a_subprocess(tmp_path: Path):
    """The real subprocess and pipes (a ping needs no model): the client's futures resolve."""
    from prep.tui.worker import WorkerClient, WorkerError

    client = WorkerClient()
    try:
        assert "grader" in client.request("ping").result(timeout=60)
        with pytest.raises(WorkerError, match="unknown op"):
            client.request("nope").result(timeout=60)
    finally:
        client.close()
    with pytest.raises(WorkerError, match="closed"):
        client.request("ping").result(timeout=5)


# --- prep grade ------------------------------------------------------------------------------


def _cli(args: list[str], stdin: str = ""):
    from prep.tui.cli import main

    return CliRunner().invoke(main, args, input=stdin, catch_exceptions=False)


def test_prep_grade_batch_json_lines(grader, tmp_path: Path, monkeypatch):
    import prep.demos.pretrained.grader.model as model

    monkeypatch.setattr(model.Grader, "__init__", _reuse(grader))
    (tmp_path / "r.yaml").write_text(RUBRIC_YAML, encoding="utf-8")
    answers = [
        {"answer_id": "a1", "answer": "W_O mixes heads so they share write directions."},
        {"answer_id": 2, "answer": "W_O does not mix heads."},
    ]
    (tmp_path / "a.jsonl").write_text("\n".join(map(json.dumps, answers)) + "\n", "utf-8")
    args = ["grade", "--rubric", str(tmp_path / "r.yaml"), "--answers", str(tmp_path / "a.jsonl")]
    result = _cli([*args, "--json"])
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in result.output.splitlines()]
    assert [r["answer_id"] for r in rows] == ["a1", 2]
    assert set(rows[0]) == {"answer_id", "covered", "scores"}
    assert set(rows[0]["covered"]) == {"mix", "weight", "slice"} and rows[0]["covered"]["mix"]
    assert rows[1]["covered"] == {"mix": False, "weight": False, "slice": False}  # negated
    assert all(0.0 <= v <= 1.0 for v in rows[0]["scores"].values())


def _reuse(grader):
    def init(self, encoder=None, head=None):
        self.encoder, self.head = grader.encoder, grader.head

    return init


def test_prep_grade_card_reads_stdin_and_prints_the_verdict(tmp_path, monkeypatch):
    """The card's rubric reaches the grader and the verdict is printed point by point (a
    stub grader here: the interface, not the grader's quality)."""
    from prep.demos.pretrained.grader.rubric import Grade, PointVerdict

    seen = []

    def stub(rubric, answers):
        seen.append((rubric, answers))
        p1, p2 = rubric.points
        yield (
            answers[0][0],
            Grade(
                [
                    PointVerdict(p1.id, p1.text, True, 0.9, "W_O mixes the heads."),
                    PointVerdict(p2.id, p2.text, False, 0.2, "W_O mixes the heads."),
                ]
            ),
        )

    monkeypatch.setattr(batch, "grade_all", stub)
    deck = tmp_path / "decks"
    deck.mkdir()
    (deck / "d.yaml").write_text(
        "deck: d\ntitle: D\ncards:\n  - id: roles\n    kind: recall\n"
        "    prompt: What does W_O do?\n    answer: It mixes and weights heads.\n"
        "    points:\n      - W_O mixes heads along shared directions.\n"
        "      - W_O weights each head up or down.\n",
        encoding="utf-8",
    )
    result = _cli(["--questions", str(deck), "grade", "roles"], stdin="W_O mixes the heads.\n")
    assert result.exit_code == 0, result.output
    assert "1 of 2 points covered" in result.output
    assert "✓ W_O mixes heads" in result.output and "✗ W_O weights" in result.output
    assert "covered by: W_O mixes the heads." in result.output
    assert "suggested rating: Hard" in result.output
    assert seen[0][0].question == "What does W_O do?" and seen[0][1] == [
        ("roles", "W_O mixes the heads.\n")
    ]


@pytest.mark.parametrize(
    ("args", "stdin", "message"),
    [
        (["grade", "no-such-card"], "x", "no card 'no-such-card'"),
        (["grade", "wo-two-roles"], "", "no answer"),
        (["grade"], "", "give a CARD_ID"),
        (["grade", "wo-two-roles", "--rubric", "r.yaml"], "", "not both"),
    ],
)
def test_prep_grade_usage_errors_are_one_line_exit_2(args, stdin, message):
    result = CliRunner().invoke(__import__("prep.tui.cli").tui.cli.main, args, input=stdin)
    assert result.exit_code == 2
    assert message in result.output and "Traceback" not in result.output


def test_prep_grade_on_a_card_without_a_rubric_is_one_line_exit_2(tmp_path: Path):
    # Every bundled card has points (tests/test_deck_rubrics.py), so the card is a user deck's.
    (tmp_path / "d.yaml").write_text(
        "deck: d\ntitle: D\ncards:\n  - id: bare\n    kind: recall\n"
        "    prompt: What does W_O do?\n    answer: It mixes heads.\n",
        encoding="utf-8",
    )
    args = ["--questions", str(tmp_path), "grade", "bare"]
    result = CliRunner().invoke(__import__("prep.tui.cli").tui.cli.main, args, input="x")
    assert result.exit_code == 2, result.output
    assert "card bare has no usable rubric: no points: and no bullets" in result.output
    assert "Traceback" not in result.output


def test_prep_grade_without_the_extra_says_how_to_install(tmp_path: Path, monkeypatch):
    monkeypatch.setattr(batch.extra, "missing", lambda model=None: "missing: transformers")
    (tmp_path / "r.yaml").write_text(RUBRIC_YAML, encoding="utf-8")
    (tmp_path / "a.jsonl").write_text('{"answer_id": 1, "answer": "x"}\n', "utf-8")
    args = ["grade", "--rubric", str(tmp_path / "r.yaml"), "--answers", str(tmp_path / "a.jsonl")]
    result = CliRunner().invoke(__import__("prep.tui.cli").tui.cli.main, args)
    assert result.exit_code == 2 and "pip install 'prep[real]'" in result.output


def test_parse_rubric_accepts_integer_ids():
    rubric = parse_rubric({"question": "q", "points": [{"id": 1, "text": "x"}]}, "here")
    assert rubric.points[0].id == "1"
