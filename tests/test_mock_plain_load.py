"""`prep mock --plain` loads the grader's model when the mock starts, as the app's mock does
(tui14's note: it asked only at the first typed answer, which then waited for the whole load),
says so when the first grade still has to wait for it, and says a failed load in one line.
The worker is faked (tests/test_mock_grader_load.py's LoadingGrading)."""

from __future__ import annotations

import io
import threading
import time
from concurrent.futures import Future

import pytest

from prep.demos.pretrained.grader.rubric import Grade, PointVerdict, Rubric
from prep.engine.study.mock import MockInterview
from prep.tui.plain import run_mock_plain
from prep.tui.worker import WorkerError
from tests.test_mock_grader_load import LoadingGrading, _collection

pytestmark = pytest.mark.usefixtures("utc_local_time")

# the choice a, Enter reveals, grade 3; then the follow-up typed, its grade taken (Enter)
ANSWERS = "a\n3\nW_O mixes the heads.\n\n"


class Graded(LoadingGrading):
    """Grades at once (the load is what the tests hold back)."""

    def grade(self, rubric: Rubric, answer: str) -> Future[Grade]:
        fut: Future[Grade] = Future()
        fut.set_result(Grade([PointVerdict("p1", "W_O mixes the heads.", True, 0.9, "")]))
        return fut


class Watching(io.StringIO):
    """stdin that notes, at each line read, whether the load had been asked for by then
    (waiting a little for the thread that asks), and runs ``on_read`` before the Nth read."""

    def __init__(self, text: str, grading: LoadingGrading, on_read: dict | None = None) -> None:
        super().__init__(text)
        self.grading, self.on_read, self.reads = grading, on_read or {}, 0
        self.warmed_at_first_read: bool | None = None

    def readline(self, *args) -> str:  # noqa: ANN002
        if self.reads == 0:
            deadline = time.monotonic() + 5
            while not self.grading.warmed and time.monotonic() < deadline:
                time.sleep(0.01)
            self.warmed_at_first_read = self.grading.warmed > 0
        action = self.on_read.get(self.reads)
        if action is not None:
            action()
        self.reads += 1
        return super().readline(*args)


def _mock(store) -> MockInterview:  # noqa: ANN001 - a Store
    mock = MockInterview(store, _collection(), main_id="pick", seed=0)
    assert [s.card.id for s in mock.steps] == ["pick", "why"]
    return mock


def test_the_load_starts_with_the_mock(fresh_store) -> None:
    grading = Graded()
    grading.load.set_result({"grader": True})
    stdin = Watching(ANSWERS, grading)
    out = io.StringIO()
    assert run_mock_plain(_mock(fresh_store), stdin, out, grading) == 0
    # asked for before the first question (a choice: nothing to grade) was answered
    assert stdin.warmed_at_first_read is True
    assert grading.warmed == 1
    assert "1 of 1 point covered" in out.getvalue()
    assert "still loading" not in out.getvalue()  # loaded while the questions were read


def test_the_first_grade_says_it_waits_for_the_load(fresh_store) -> None:
    grading = Graded()
    out = io.StringIO()

    def load_later() -> None:  # the model loads 0.3 s after the typed answer is read
        assert grading.load_started is not None
        grading.load_started -= 12  # it has been loading for 12 s already
        threading.Timer(0.3, grading.load.set_result, args=({"grader": True},)).start()

    stdin = Watching(ANSWERS, grading, on_read={2: load_later})
    assert run_mock_plain(_mock(fresh_store), stdin, out, grading) == 0
    text = out.getvalue()
    line = next(ln for ln in text.splitlines() if "still loading" in ln)
    assert line.startswith("The grader's model is still loading (once a mock, 1"), line
    assert text.index(line) < text.index("1 of 1 point covered")


def test_a_failed_load_is_one_line(fresh_store) -> None:
    grading = Graded()
    grading.load.set_exception(WorkerError("no model at /nowhere/grader.pt\n(more detail)"))
    out = io.StringIO()
    assert run_mock_plain(_mock(fresh_store), Watching(ANSWERS + "3\n", grading), out, grading) == 0
    text = out.getvalue()
    said = [ln for ln in text.splitlines() if "did not load" in ln]
    assert said == [
        "Not graded: the grader did not load (no model at /nowhere/grader.pt); grade it 1-4."
    ]
    assert "Traceback" not in text and " covered" not in text
    assert "Saved: Good" in text  # graded by hand all the same


def test_a_worker_that_cannot_start_is_one_line_too(fresh_store, capsys) -> None:
    """warm() raising at once (the worker process cannot start) is said as a failed load, in
    the thread that asked: no traceback on stderr."""

    class NoWorker(Graded):
        def warm(self) -> Future:
            self.warmed += 1
            raise WorkerError("cannot start the worker: no python here")

    grading = NoWorker()
    out = io.StringIO()
    assert run_mock_plain(_mock(fresh_store), Watching(ANSWERS + "3\n", grading), out, grading) == 0
    said = [ln for ln in out.getvalue().splitlines() if "did not load" in ln]
    assert said == [
        "Not graded: the grader did not load (cannot start the worker: no python here); "
        "grade it 1-4."
    ]
    assert "Traceback" not in capsys.readouterr().err
