"""engine/ never imports textual or torch (checked in a fresh interpreter)."""

from __future__ import annotations

import pkgutil
import subprocess
import sys


def test_engine_imports_neither_textual_nor_torch() -> None:
    import prep.engine

    modules = [f"prep.engine.{m.name}" for m in pkgutil.iter_modules(prep.engine.__path__)]
    assert "prep.engine.store" in modules
    code = "import importlib, sys\n"
    code += "".join(f"importlib.import_module({m!r})\n" for m in modules)
    code += "print([m for m in ('textual', 'torch') if m in sys.modules])\n"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout + out.stderr


def test_decks_served_by_the_cache_are_loaded_without_yaml(tmp_path) -> None:
    """The app's start (Store.open, then deckcache.load) imports PyYAML only to parse a deck
    file the cache does not hold: the first start parses (and must import it), a second start
    with unchanged files is served by the database alone."""
    code = (
        "import sys\n"
        "from prep.engine.decks import deckcache\n"
        "from prep.engine.store import Store\n"
        f"store = Store.open({str(tmp_path / 'p.db')!r})\n"
        "coll = deckcache.load(store)\n"
        "print(len(coll), 'yaml' in sys.modules)\n"
    )

    def start() -> str:
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
        assert out.returncode == 0, out.stderr
        return out.stdout.strip()

    first, second = start(), start()
    cards = first.split()[0]
    assert int(cards) > 0
    assert first == f"{cards} True"  # parsing the bundled decks needs yaml
    assert second == f"{cards} False"  # the cache serves them without it
