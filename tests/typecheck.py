"""Type-check engine/, tui/ and demos/ with mypy (`make lint`, `make test`, CI through make test).

The import names differ from the folders (``prep.engine`` is ``engine/``, see pyproject's
package-dir), and the editable install maps them with an import hook mypy cannot see. So this
makes the namespace mypy reads: ``.mypy_cache/src/prep/{engine,tui,demos,questions}`` as
links to the folders, and checks the three packages through it at mypy's default strictness
(pyproject's [tool.mypy] says what is not followed, and why). Extra arguments go to mypy.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FOLDERS = ("engine", "tui", "demos", "questions")
CHECKED = ("prep.engine", "prep.tui", "prep.demos")


def namespace() -> Path:
    """The folder holding ``prep/`` as links to the source folders (made once, kept in the
    mypy cache folder, which git ignores)."""
    src = ROOT / ".mypy_cache" / "src"
    prep = src / "prep"
    prep.mkdir(parents=True, exist_ok=True)
    for name in FOLDERS:
        link = prep / name
        if not link.is_symlink() or link.resolve() != ROOT / name:
            if link.is_symlink() or link.exists():
                link.unlink()
            link.symlink_to(ROOT / name, target_is_directory=True)
    return src


def main(argv: list[str]) -> int:
    from mypy import api

    os.chdir(ROOT)
    os.environ["MYPYPATH"] = str(namespace())
    args = ["--config-file", str(ROOT / "pyproject.toml")]
    for package in CHECKED:
        args += ["-p", package]
    out, err, status = api.run([*args, *argv])
    shown = out.replace(str(ROOT / ".mypy_cache" / "src" / "prep") + os.sep, "")
    sys.stdout.write(shown.replace(os.path.join(".mypy_cache", "src", "prep", ""), ""))
    sys.stderr.write(err)
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
