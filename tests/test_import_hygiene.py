"""engine/ never imports textual or torch (checked in a fresh interpreter)."""

from __future__ import annotations

import pkgutil
import subprocess
import sys


def test_engine_imports_neither_textual_nor_torch() -> None:
    import prep.engine

    modules = [f"prep.engine.{m.name}" for m in pkgutil.iter_modules(prep.engine.__path__)]
    assert "prep.engine.storage" in modules
    code = "import importlib, sys\n"
    code += "".join(f"importlib.import_module({m!r})\n" for m in modules)
    code += "print([m for m in ('textual', 'torch') if m in sys.modules])\n"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout + out.stderr
