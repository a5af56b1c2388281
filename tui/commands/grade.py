"""`prep grade`: grade typed answers point by point against a rubric (in-process, like
`prep demo`; torch is imported by prep.demos.pretrained.grader only once the input is known to be good).

    prep grade CARD_ID                                  one answer on stdin, a verdict per point
    prep grade --rubric R.yaml --answers A.jsonl --json one JSON object per answer
                                                        (an empty one: {"answer_id", "empty": true,
                                                        "covered": null, "scores": null}, ungraded)
"""

from __future__ import annotations

import json
import sys

import click

from prep.engine.textsafe import quoted
from prep.tui.commands.common import NAMED_PATH, Ctx, UsageError


@click.command("grade")
@click.argument("card_id", required=False, metavar="CARD_ID")
@click.option(
    "--rubric",
    "rubric_path",
    type=NAMED_PATH,  # (as given: only "-" itself is standard input, ./- is a file)
    metavar="R.yaml",
    help="A rubric file: question and points (a list of id and text; - reads standard input).",
)
@click.option(
    "--answers",
    "answers_path",
    type=NAMED_PATH,  # (as given: only "-" itself is standard input, ./- is a file)
    metavar="A.jsonl",
    help='One {"answer_id": ..., "answer": ...} a line (- reads standard input).',
)
@click.option("--json", "as_json", is_flag=True, help="Print JSON (one object a line).")
@click.pass_obj
def grade(
    obj: Ctx,
    card_id: str | None,
    rubric_path: str | None,
    answers_path: str | None,
    as_json: bool,
) -> None:
    """Grade a typed answer point by point: CARD_ID reads one answer from stdin; --rubric with
    --answers grades a batch. Offline, on the CPU, with the optional `real` extra."""
    from prep.demos.pretrained.grader import batch
    from prep.demos.pretrained.grader.rubric import Rubric, RubricError, load_rubric
    from prep.engine.decks.deck import one_line_safe
    from prep.engine.decks.rubric import card_rubric, suggest_rating
    from prep.engine.transfer.jsonout import json_safe
    from prep.tui.answertext import answer_text
    from prep.tui.grading import RATING_NAMES, SYMBOL

    if card_id is not None and (rubric_path or answers_path):
        raise UsageError("give a CARD_ID, or --rubric with --answers, not both")
    if card_id is None:
        if not (rubric_path and answers_path):
            raise UsageError(
                "give a CARD_ID (answer on stdin), or --rubric R.yaml --answers A.jsonl"
            )
        if rubric_path == answers_path == "-":
            raise UsageError("--rubric and --answers cannot both be - (standard input)")
        try:
            rubric = load_rubric(rubric_path)
            answers = batch.read_answers(answers_path)
        except RubricError as exc:
            raise UsageError(str(exc)) from None
        # an answer that shows nothing (empty, spaces, zero-width characters, NUL) is said to be
        # empty, in its place, and never graded "0 of N"; the model loads only for the others
        said = [(aid, answer) for aid, answer in answers if answer_text(answer)]
        if said:
            _need_grader(UsageError)
        grades = batch.grade_all(rubric, said) if said else iter(())
        noted = False
        for aid, answer in answers:
            if not answer_text(answer):
                line = batch.empty_line(aid) if as_json else f"{aid}: empty answer, not graded"
                click.echo(json_safe(line) if as_json else one_line_safe(line))
                continue
            _, result = next(grades)
            if result.note and not noted:  # (fitted.stale(): once, on stderr, not per answer)
                noted = True
                click.echo(one_line_safe(result.note), err=True)
            if as_json:
                click.echo(json_safe(batch.output_line(aid, result)))
            else:
                marks = ", ".join(
                    f"{p.id} {SYMBOL[p.covered]} {p.score:.2f}" for p in result.points
                )  # (ids from the user's files: shown, never obeyed by the terminal)
                click.echo(one_line_safe(f"{aid}: {marks}"))
        return

    with obj.cached_collection(strict=False) as coll:
        card = coll.get(card_id)
        if card is None:
            import difflib

            close = difflib.get_close_matches(card_id, [i for i, _, _ in coll.outline()], n=3)
            hint = f" (did you mean {', '.join(close)}?)" if close else ""
            raise UsageError(f"no card {quoted(card_id)}{hint}")
    found = card_rubric(card)
    if found.problem:
        raise UsageError(f"card {card.id} has no usable rubric: {found.problem}")
    rubric = Rubric.from_texts(card.prompt, found.points)
    answer = _stdin() if not sys.stdin.isatty() else _prompt(card.prompt)
    if not answer_text(answer):  # (only zero-width characters or NUL: no answer either)
        raise UsageError("no answer: type it on standard input (end with Ctrl-D)")
    if len(answer) > batch.MAX_ANSWER_CHARS:
        raise UsageError(f"the answer is longer than {batch.MAX_ANSWER_CHARS} characters")
    _need_grader(UsageError)
    ((_, result),) = batch.grade_all(rubric, [(card.id, answer)])
    rating = suggest_rating(len(result.points), len(result.points) - len(result.missed))
    if as_json:
        click.echo(
            json_safe(
                json.dumps(
                    {
                        "card_id": card.id,
                        **result.to_dict(),
                        "suggested_rating": RATING_NAMES[rating],
                    },
                    ensure_ascii=False,
                )
            )
        )
        return
    from prep.tui.grading import verdict_lines

    for line in verdict_lines(result, rating):
        click.echo(line)


def _prompt(prompt: str) -> str:
    click.echo(prompt, err=True)
    click.echo("(type your answer; end with Ctrl-D)", err=True)
    return _stdin()


def _stdin() -> str:
    """The answer on standard input: UTF-8 text, read no further than an answer can go
    (`< /dev/zero` is refused, not read until the memory runs out)."""
    from prep.demos.pretrained.grader.batch import MAX_ANSWER_CHARS
    from prep.demos.pretrained.grader.inputs import read_bounded
    from prep.demos.pretrained.grader.rubric import RubricError

    try:
        return read_bounded(sys.stdin.buffer, 4 * MAX_ANSWER_CHARS, "standard input")
    except RubricError as exc:
        raise UsageError(str(exc)) from None


def _need_grader(error: type[Exception]) -> None:
    from prep.demos.pretrained.grader.batch import missing

    hint = missing()
    if hint:
        raise error(hint)


def rubric_notes(cards, every: bool = False) -> list[str]:  # noqa: ANN001 - Iterable[Card]
    """`prep check`'s lines about rubrics: a count of the cards without a usable one (typed
    answers on them are shown beside the answer, ungraded), or with `every`, one line each."""
    from prep.engine.decks.rubric import card_rubric
    from prep.engine.study.present import count

    lacking = [(c, r.problem) for c in cards if (r := card_rubric(c)).problem]
    if not lacking:
        return []
    if every:
        return [f"{c.file}:{c.line}: card {c.id}: no usable rubric: {why}" for c, why in lacking]
    names = ", ".join(c.id for c, _ in lacking[:3]) + (", ..." if len(lacking) > 3 else "")
    return [
        f"note: {count(len(lacking), 'card')} without a usable rubric (no `points:`, and no "
        f"single-idea bullets), so a typed answer is not graded there: {names} "
        "(`prep check --rubrics` lists them)"
    ]
