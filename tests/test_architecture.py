"""The arrows of DESIGN.md, held by parsing every module (function bodies included).

engine/  imports nothing of prep.tui or prep.demos, nor click, textual or torch;
demos/   imports nothing of prep.engine or prep.tui;
tui/     never imports torch (demos run in a subprocess, or through prep.demos.cli).

The one exception: `prep optimize` reaches torch through fsrs's Optimizer, in
engine/study/optimize.py only (fsrs is a dependency of the engine; the import of fsrs.optimizer is
what pulls torch in, and it happens only when the user runs the optimizer).
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FOLDERS = {"engine": "prep.engine", "tui": "prep.tui", "demos": "prep.demos"}

FORBIDDEN = {
    "engine": ("prep.tui", "prep.demos", "click", "textual", "torch"),
    "demos": ("prep.engine", "prep.tui"),
    "tui": ("torch",),
}
# (module file, imported name): the documented exceptions
ALLOWED = {("engine/study/optimize.py", "fsrs.optimizer")}
# imports that reach a forbidden package indirectly (checked like the package itself)
REACHES = {"fsrs.optimizer": "torch", "fsrs.Optimizer": "torch", "textual_plotext": "textual"}


def modules(folder: str) -> list[Path]:
    return sorted((ROOT / folder).rglob("*.py"))


def imported_names(path: Path) -> list[tuple[int, str]]:
    """Every module an import statement anywhere in ``path`` names (relative imports
    resolved), with its line; plus `importlib.import_module("...")` with a literal name."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    folder = path.relative_to(ROOT).parts[0]
    package = ".".join((FOLDERS[folder], *path.parent.relative_to(ROOT / folder).parts))
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                module = ".".join([*base, node.module] if node.module else base)
            else:
                module = node.module or ""
            found.append((node.lineno, module))
            found += [(node.lineno, f"{module}.{alias.name}") for alias in node.names]
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute | ast.Name)
            and getattr(node.func, "attr", getattr(node.func, "id", ""))
            in ("import_module", "__import__")
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            found.append((node.lineno, node.args[0].value))
    return found


def _hits(name: str, forbidden: tuple[str, ...]) -> str | None:
    reached = REACHES.get(name)
    for target in (name, reached):
        if target is None:
            continue
        for bad in forbidden:
            if target == bad or target.startswith(bad + "."):
                return bad
    return None


def violations(folder: str) -> list[str]:
    out = []
    for path in modules(folder):
        rel = path.relative_to(ROOT).as_posix()
        for line, name in imported_names(path):
            bad = _hits(name, FORBIDDEN[folder])
            if bad and (rel, name) not in ALLOWED:
                out.append(f"{rel}:{line}: imports {name} ({folder}/ must not import {bad})")
    return out


@pytest.mark.parametrize("folder", sorted(FORBIDDEN))
def test_no_forbidden_import(folder: str) -> None:
    assert modules(folder), f"no modules found under {folder}/"
    assert violations(folder) == []


def test_the_check_sees_imports_inside_functions(tmp_path: Path, monkeypatch) -> None:
    """A counterexample: a lazy import in a function body of an engine module is caught, as
    are a relative import of the TUI and importlib with a literal name."""
    fake_root = tmp_path
    (fake_root / "engine").mkdir()
    (fake_root / "engine" / "bad.py").write_text(
        "import json\n"
        "def f():\n"
        "    from prep.tui.app import PrepApp\n"
        "    import torch.nn\n"
        "def g():\n"
        "    from ..tui import cli\n"
        "    import importlib\n"
        "    importlib.import_module('textual.app')\n",
        encoding="utf-8",
    )
    monkeypatch.setattr(f"{__name__}.ROOT", fake_root)
    found = violations("engine")
    assert [v.split(": imports ")[1].split(" (")[0] for v in found] == [
        "prep.tui.app",
        "prep.tui.app.PrepApp",
        "torch.nn",
        "prep.tui",
        "prep.tui.cli",
        "textual.app",
    ]


def test_the_exception_is_only_where_it_is_documented() -> None:
    """fsrs.optimizer (which imports torch) appears in engine/study/optimize.py and nowhere else."""
    users = [
        path.relative_to(ROOT).as_posix()
        for folder in FOLDERS
        for path in modules(folder)
        if any(name.startswith("fsrs.optimizer") for _line, name in imported_names(path))
    ]
    assert users == ["engine/study/optimize.py"]


# The floor plan: engine/ grouped by purpose, demos/ by the evidence a demo rests on.
ENGINE_ROOMS = {"store", "decks", "study", "transfer", "sync"}
# (what every room reads: times, paths, and the words of a message: textsafe)
ENGINE_TOP = {"__init__.py", "timeutil.py", "paths.py", "textsafe.py"}
DEMO_ROOMS = {"synthetic": "synthetic", "decoder": "trained-here", "pretrained": "pretrained"}
DEMO_TOP = {
    "__init__.py",
    "__main__.py",
    "_torch.py",
    "cli.py",
    "figures.py",  # torch-free drawings of a report, shared by the CLI and the TUI
    "harness.py",
    "hooks.py",  # the one "run with an edit of z" seam, for the decoder and pretrained models
    "registry.py",
    "report.py",
    "safetext.py",  # text from outside made terminal-safe (demos/ may not import engine's)
    "worker.py",  # the long-lived torch-side process the app talks to (JSON lines)
}


def rooms(folder: str) -> tuple[set[str], set[str]]:
    """(the .py files at the top of ``folder``, its sub-folders that are packages)."""
    top = {p.name for p in (ROOT / folder).glob("*.py")}
    subs = {p.parent.name for p in (ROOT / folder).glob("*/__init__.py")}
    return top, subs


def test_the_tree_reads_as_the_architecture() -> None:
    """engine/ holds its five rooms (sync: machine to machine) and timeutil; demos/ holds the harness, registry, report
    and CLI at the top and every demo in the room of its evidence: a pretrained demo in
    demos/pretrained/, a demo in demos/decoder/ measures trained weights."""
    from prep.demos.registry import DEMOS

    top, subs = rooms("engine")
    assert (top, subs) == (ENGINE_TOP, ENGINE_ROOMS)
    top, subs = rooms("demos")
    assert (top, subs) == (DEMO_TOP, set(DEMO_ROOMS))
    for name, info in DEMOS.items():
        parts = info.module.split(".")
        assert parts[:2] == ["prep", "demos"] and len(parts) == 4, (name, info.module)
        room = parts[2]
        assert (ROOT / "demos" / room / f"{parts[3]}.py").is_file(), (name, info.module)
        assert (info.weights == "pretrained") == (room == "pretrained"), (name, room)
        if room == "decoder":
            assert info.weights == DEMO_ROOMS[room], (name, info.weights)


# --- inside engine/: the rooms' own arrows --------------------------------------------------
#
# The store keeps rows (it knows the study loop's state types, not the decks); the decks parse
# and cache files (they reach the store for the cache's tables, not the study loop); the study
# loop reads decks and store; transfer moves everything in and out and nothing imports it.
ROOM_FORBIDDEN = {
    "store": ("prep.engine.decks", "prep.engine.transfer"),
    "decks": ("prep.engine.study", "prep.engine.transfer"),
    "study": ("prep.engine.transfer",),
}


@pytest.mark.parametrize("room", sorted(ROOM_FORBIDDEN))
def test_the_engine_rooms_arrows(room: str) -> None:
    out = []
    for path in sorted((ROOT / "engine" / room).rglob("*.py")):
        for line, name in imported_names(path):
            bad = _hits(name, ROOM_FORBIDDEN[room])
            if bad:
                out.append(f"{path.relative_to(ROOT)}:{line}: imports {name}")
    assert out == []


# --- size: a module over the limit says why in its docstring ---------------------------------

MAX_LINES = 600
REASON = "Size:"  # a paragraph of the module docstring starting so says why it is long


def long_modules() -> list[str]:
    out = []
    for folder in FOLDERS:
        for path in modules(folder):
            text = path.read_text(encoding="utf-8")
            n = text.count("\n")
            if n <= MAX_LINES:
                continue
            doc = ast.get_docstring(ast.parse(text)) or ""
            if not any(p.lstrip().startswith(REASON) for p in doc.split("\n\n")):
                out.append(f"{path.relative_to(ROOT)}: {n} lines and no {REASON!r} paragraph")
    return out


def test_no_module_grows_past_the_limit_without_a_reason() -> None:
    assert long_modules() == []


# --- the store is typed: no parameter named store without Store --------------------------------


def untyped_stores() -> list[str]:
    """Every parameter (or attribute annotation) named ``store``/``_store`` in engine/ and
    tui/ that is not annotated, or is annotated ``Any``/``object``: a reader and mypy must be
    able to follow it to the Store."""
    out = []
    for folder in ("engine", "tui"):
        for path in modules(folder):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            for node in ast.walk(tree):
                pairs: list[tuple[str, ast.expr | None, int]] = []
                if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                    a = node.args
                    for arg in [*a.posonlyargs, *a.args, *a.kwonlyargs]:
                        pairs.append((arg.arg, arg.annotation, arg.lineno))
                elif isinstance(node, ast.AnnAssign):
                    target = node.target
                    name = target.attr if isinstance(target, ast.Attribute) else ""
                    name = target.id if isinstance(target, ast.Name) else name
                    pairs.append((name, node.annotation, node.lineno))
                for name, annotation, line in pairs:
                    if name not in ("store", "_store"):
                        continue
                    text = "" if annotation is None else ast.unparse(annotation)
                    if not text or {"Any", "object"} & set(text.replace("|", " ").split()):
                        shown = text or "no annotation"
                        out.append(f"{path.relative_to(ROOT)}:{line}: {name}: {shown}")
    return out


def test_the_store_is_typed_everywhere() -> None:
    assert untyped_stores() == []


def test_one_implementation_of_the_collection_protocol() -> None:
    """The study loop's ``Cards`` (engine/study/collection.py) has one implementation, the
    deck cache's: a class anywhere that defines any of the protocol's questions about
    progress (unseen cards, the new-card groups, counts per deck, tag progress) is it. The
    parse (ParsedDecks) feeds the cache and answers none of them."""
    protocol = ast.parse((ROOT / "engine" / "study" / "collection.py").read_text("utf-8"))
    cards = next(n for n in protocol.body if isinstance(n, ast.ClassDef) and n.name == "Cards")
    questions = {"unseen", "new_card_groups", "unseen_by_deck", "tag_progress"}
    assert questions <= {n.name for n in cards.body if isinstance(n, ast.FunctionDef)}
    found = []
    for folder in FOLDERS:
        for path in modules(folder):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.ClassDef) and node.name != "Cards":
                    defined = {n.name for n in node.body if isinstance(n, ast.FunctionDef)}
                    if defined & questions:
                        found.append(f"{path.relative_to(ROOT)}:{node.name}")
    assert found == ["engine/decks/collection.py:CachedCollection"]


def test_the_queue_asks_no_collection_which_it_is() -> None:
    """No path (engine, tui) chooses by what the collection can answer: the counts per
    deck are always there (``unseen_by_deck`` returns a dict), so nothing compares them with
    None, and no one asks which class a collection is."""
    out = []
    for path in [*modules("engine"), *modules("tui")]:
        text = path.read_text(encoding="utf-8")
        for node in ast.walk(ast.parse(text)):
            if (
                isinstance(node, ast.Compare)
                and any(isinstance(c, ast.Constant) and c.value is None for c in node.comparators)
                and "unseen" in ast.unparse(node.left)
            ):
                out.append(f"{path.relative_to(ROOT)}:{node.lineno}: {ast.unparse(node)}")
            asks_class = isinstance(node, ast.Call) and ast.unparse(node.func) == "isinstance"
            if asks_class and "Collection" in ast.unparse(node):
                out.append(f"{path.relative_to(ROOT)}:{node.lineno}: {ast.unparse(node)}")
    assert out == []


def test_the_screens_do_not_import_the_line_mode() -> None:
    """Textual screens and the line mode share text through neutral modules (present.py,
    tui/mocktext.py), never one front end's module imported by the other."""
    out = [
        f"{path.relative_to(ROOT)}:{line}: imports {name}"
        for path in sorted((ROOT / "tui" / "screens").rglob("*.py"))
        for line, name in imported_names(path)
        if _hits(name, ("prep.tui.plain",))
    ]
    assert out == []


def screen_classes() -> dict[str, str]:
    """{class name: module} of every Textual screen class defined under tui/ (by AST: a class
    whose base is Screen, ModalScreen, or a screen class found so far), prep's own base class
    (tui/base.py's PrepScreen) aside."""
    classes: dict[str, tuple[str, list[str]]] = {}
    for path in modules("tui"):
        module = ".".join(("prep.tui", *path.relative_to(ROOT / "tui").with_suffix("").parts))
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.ClassDef):
                bases = [
                    b.id if isinstance(b, ast.Name) else getattr(b, "attr", "")
                    for b in (x.value if isinstance(x, ast.Subscript) else x for x in node.bases)
                ]
                classes[node.name] = (module, bases)
    screens = {"Screen", "ModalScreen"}
    grown = True
    while grown:
        found = {name for name, (_, bases) in classes.items() if screens & set(bases)}
        grown = not found <= screens
        screens |= found
    return {name: classes[name][0] for name in screens if name in classes and name != "PrepScreen"}


def test_every_screen_is_registered_once() -> None:
    """A new screen is named in tui/screens/registry.py (which the app, help and the command
    palette read), so that forgetting its help section cannot pass silently."""
    from prep.tui.screens.registry import SCREENS

    registered = {spec.cls: spec.module for spec in SCREENS}
    assert len(registered) == len(SCREENS), "a screen registered twice"
    assert len({spec.name for spec in SCREENS}) == len(SCREENS), "a name used twice"
    assert registered == screen_classes()
    for spec in SCREENS:
        assert spec.load().__name__ == spec.cls


def test_the_screen_finder_sees_a_new_screen(tmp_path: Path, monkeypatch) -> None:
    """The check above fails on a screen class that is not registered (through a subclass
    of a subclass, generic bases included)."""
    (tmp_path / "tui" / "screens").mkdir(parents=True)
    (tmp_path / "tui" / "screens" / "new.py").write_text(
        "from prep.tui.base import PrepScreen\nfrom textual.screen import ModalScreen\n"
        "class A(PrepScreen):\n    pass\nclass B(A):\n    pass\n"
        "class C(ModalScreen[bool]):\n    pass\nclass NotOne:\n    pass\n",
        encoding="utf-8",
    )
    (tmp_path / "tui" / "base.py").write_text(
        "from textual.screen import Screen\nclass PrepScreen(Screen):\n    pass\n",
        encoding="utf-8",
    )
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    assert screen_classes() == {n: "prep.tui.screens.new" for n in ("A", "B", "C")}


def test_every_screen_with_keys_has_a_help_section_or_says_why() -> None:
    from textual.binding import Binding

    from prep.tui.screens.help import HelpScreen
    from prep.tui.screens.registry import SCREENS, help_sections

    for spec in SCREENS:
        keys = [b for b in spec.load().BINDINGS if isinstance(b, Binding) and b.show]
        if spec.help is None:
            assert spec.why, f"{spec.cls} has keys {[b.key for b in keys]} and no help section"
        else:
            assert not spec.why, f"{spec.cls}: a help section and a reason for none"
    # help's sections are the registry's, in its order, after the app's own keys
    shown = [name for name, _ in HelpScreen().tables()]
    assert shown == ["PrepApp", *(spec.cls for spec in help_sections())]


def test_one_seam_edits_z() -> None:
    """Demos edit a model's head outputs through demos/hooks.py alone: the library hooks live
    in the pretrained model's ZModel (pretrained.py), the resumed runs in the decoder's
    (decoder.py), and no demo registers hooks or resumes a run of its own."""
    allowed = {
        "register_forward_pre_hook": {"demos/pretrained/pretrained.py"},
        "register_forward_hook": {"demos/pretrained/pretrained.py"},
        "resume": {"demos/decoder/decoder.py"},
    }
    found: dict[str, set[str]] = {name: set() for name in allowed}
    for path in modules("demos"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Attribute) and node.attr in found:
                found[node.attr].add(str(path.relative_to(ROOT)))
            if isinstance(node, ast.keyword) and node.arg in found:
                found[node.arg].add(str(path.relative_to(ROOT)))
    assert found == allowed
