"""Deterministic apps for tests, snapshots and the benchmark (not used by `prep` itself).

``make_app`` builds a PrepApp on a small fixed deck (no bundled decks, so it does not change
when they do), a fixed UTC clock, fuzzing off, a fixed demo list and the dark theme.
``big_collection`` makes N cards for timing the rating -> next card path.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

from prep.engine.decks.collection import CachedCollection
from prep.engine.decks.deck import Card, DeckInfo, ParsedDecks, parse_deck_text
from prep.engine.decks.deckcache import from_parsed
from prep.engine.store import Store
from prep.engine.study.scheduler import Rating, Scheduler
from prep.engine.study.session import ReviewSession
from prep.tui.app import PrepApp

NOW = datetime(2025, 3, 10, 12, 0, tzinfo=UTC)


def _fixed(at: datetime) -> Callable[[], datetime]:
    return lambda: at


DEMOS = {
    "block-diagonal": "With a block-diagonal W_O each head writes only inside its own slice of "
    "the residual stream (exactly 0.0 everywhere else).",
    "per-head-sum": "concat(heads) @ W_O equals the sum over heads of head_h @ W_O[h].",
}

DECK_YAML = """\
deck: wo-core
title: W_O, the output projection
cards:
  - id: two-roles
    kind: recall
    prompt: What are the **two roles** of `W_O` in multi-head attention?
    answer: It mixes the heads' outputs and maps the concatenation back to `d_model`.
    explain: Concatenation alone keeps every head in its own slice of the residual stream.
    analogy: A mixing desk after separate microphones.
    demo: block-diagonal
    tags: [roles]
  - id: wo-shape
    kind: choice
    prompt: What is the shape of `W_O` as an `nn.Linear` weight?
    choices: ["(d_model, n_heads * d_head)", "(n_heads, d_head)", "(d_head, d_model)"]
    correct: a
    answer: "(out, in) = (d_model, n_heads * d_head), which is (d_model, d_model) usually."
    tags: [shapes]
  - id: identity-wo
    kind: follow-up
    parent: two-roles
    prompt: What changes if `W_O` is the identity?
    answer: Nothing mixes; each head writes only into its own slice.
    demo: block-diagonal
    tags: [roles]
  - id: reshape-flag
    kind: red-flag
    prompt: Which statement signals junior thinking about `W_O`?
    choices: ["W_O mixes information across heads", "W_O is just a reshape", "W_O is learned"]
    correct: b
    answer: A reshape has no parameters; W_O is a learned dense map.
    tags: [roles]
"""

SECOND_DECK_YAML = """\
deck: wo-sums
title: Per-head sums
cards:
  - id: per-head-sum
    kind: recall
    prompt: Write concat-then-W_O as a sum over heads.
    answer: "sum_h head_h @ W_O[h], with W_O stored as [n_heads, d_head, d_model]."
    demo: per-head-sum
    tags: [math]
"""

FAKE_DEMO = """\
import json, sys, time
name = sys.argv[1]
mode = sys.argv[2] if len(sys.argv) > 2 else "pass"
print(f"{name}: building d_model=64 n_heads=4 on cpu", file=sys.stderr, flush=True)
print("checking the claim ...", flush=True)
if mode == "crash":
    raise RuntimeError("CUDA out of memory (simulated)")
ok = mode == "pass"
report = {
    "name": name, "claim": "a claim", "device": "cpu", "device_name": "test cpu",
    "device_reason": "cpu (requested)", "dtype": "float32", "scale": "small", "seed": 0,
    "sizes": {"d_model": 64, "n_heads": 4}, "seconds": 0.0123, "passed": ok,
    "checks": [
        {"name": "max |write outside slice|", "measured": 0.0, "expected": "== 0.0",
         "passed": True, "detail": ""},
        {"name": "nonzero parameters", "measured": 1024, "expected": "== 1024",
         "passed": ok, "detail": "is W_O dense?"},
    ],
    "contrast_label": "a dense W_O",
    "contrast": [
        {"name": "max |write outside slice|", "measured": 0.8123, "expected": ">= 0.01",
         "passed": True, "detail": "", "kind": "measurement",
         "bar": "a dense W_O writes everywhere"},
    ],
    "notes": [], "cards": ["two-roles"],
    "figures": {"blocks": {"kind": "heatmap", "title": "W_O block norms (figure)",
                           "rows": ["0", "1"], "cols": ["0", "1"],
                           "values": [[1.0, 0.0], [0.0, 1.0]]}},
}
print(json.dumps(report), flush=True)
sys.exit(0 if ok else 1)
"""


def write_decks(folder: Path) -> Path:
    """The two test decks as files, for --questions. The first is named ``my-core`` there:
    beside the bundled decks a second ``wo-core`` would be an error (one name, one deck)."""
    folder.mkdir(parents=True, exist_ok=True)
    mine = DECK_YAML.replace("deck: wo-core\n", "deck: my-core\n", 1)
    (folder / "my-core.yaml").write_text(mine, encoding="utf-8")
    (folder / "wo-sums.yaml").write_text(SECOND_DECK_YAML, encoding="utf-8")
    return folder


def fixed_collection() -> CachedCollection:
    """The two test decks, parsed from text (no files, no bundled decks), in a cache of
    their own until a database is asked about (deckcache.from_parsed)."""
    coll = ParsedDecks()
    for text, name in ((DECK_YAML, "wo-core"), (SECOND_DECK_YAML, "wo-sums")):
        info, cards, errors = parse_deck_text(text, f"{name}.yaml", name)
        assert info is not None and not errors, errors
        coll.decks[info.name] = info
        for card in cards:
            coll.add(card)
    return from_parsed(coll)


def fake_demo_command(folder: Path, mode: str = "pass") -> Callable[[str], list[str]]:
    """A demo command running a tiny script: mode pass, fail (exit 1) or crash (no report)."""
    script = folder / "fake_demo.py"
    script.write_text(FAKE_DEMO, encoding="utf-8")
    return lambda name: [sys.executable, str(script), name, mode]


def make_app(
    *,
    store: Store | None = None,
    collection: CachedCollection | None = None,
    clock: Callable[[], datetime] = lambda: NOW,
    demo_command: Callable[[str], list[str]] | None = None,
    **kwargs,
) -> PrepApp:
    store = store or Store.memory()
    return PrepApp(
        store=store,
        collection=collection or fixed_collection(),
        clock=clock,
        scheduler=Scheduler(store.settings(), enable_fuzzing=False),
        demo_command=demo_command or (lambda name: [sys.executable, "-c", "raise SystemExit(3)"]),
        demos=dict(DEMOS),
        theme="textual-dark",
        **kwargs,
    )


def add_history(store: Store, collection: CachedCollection, days: int = 6) -> None:
    """Review every card once a day for ``days`` days before NOW (for the stats screen)."""
    scheduler = Scheduler(store.settings(), enable_fuzzing=False)
    for back in range(days, 0, -1):
        at = NOW - timedelta(days=back)
        ids = [c.id for c in collection.cards]
        session = ReviewSession(store, collection, scheduler=scheduler, clock=_fixed(at), queue=ids)
        for i in range(len(ids)):
            session.rate(Rating.Again if (i + back) % 4 == 0 else Rating.Good, duration_ms=4000)
    store.record_demo_run(
        name="block-diagonal",
        device="cpu",
        passed=True,
        seconds=0.4,
        device_name="test cpu",
        scale="small",
        seed=0,
        ran_at=NOW,
    )


def big_collection(n: int = 10_000) -> CachedCollection:
    """``n`` recall cards in one deck (for timing rating -> next card)."""
    info = DeckInfo(name="big", title="Big deck", description="", file="big.yaml")
    coll = ParsedDecks(decks={"big": info})
    for i in range(n):
        card = Card(
            id=f"card-{i}",
            kind="recall",
            prompt=f"Question {i}: what does `W_O` do to head {i % 32}?",
            answer="It mixes the heads and maps back to `d_model`.",
            deck="big",
            explain="Because concat alone keeps heads apart.",
        )
        coll.add(card)
        info.card_ids.append(card.id)
    return from_parsed(coll)


def seed_due(store: Store, collection: CachedCollection, now: datetime = NOW) -> None:
    """Give every card a stored Review state that is due at ``now`` (one transaction), so a
    session over a big collection serves review cards, as a long-time user's would."""
    from prep.engine.study.scheduler import CardState, State

    store.reconcile(collection.cards)
    with store.transaction():
        for i, card in enumerate(collection.cards):
            state = CardState(
                id=card.id,
                deck=card.deck,
                state=int(State.Review),
                step=None,
                stability=10.0 + i % 50,
                difficulty=5.0,
                due=now - timedelta(hours=1 + i % 48),
                last_review=now - timedelta(days=10),
                reps=3,
                content_hash=card.content_hash,
            )
            store.put_card(state)
