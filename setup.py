"""Package discovery for the `prep` namespace (the rest of the metadata is in pyproject.toml).

setuptools' own `find` cannot put a prefix on what it finds, and our import names (prep.tui)
differ from the folders (tui/): every folder holding an __init__.py under one of the four
top-level folders becomes a package, named through pyproject's package-dir mapping.
"""

from pathlib import Path

from setuptools import setup

ROOTS = {
    "engine": "prep.engine",
    "tui": "prep.tui",
    "demos": "prep.demos",
    "questions": "prep.questions",
}


def packages() -> list[str]:
    here = Path(__file__).resolve().parent
    found = []
    for folder, name in ROOTS.items():
        for init in sorted((here / folder).rglob("__init__.py")):
            parts = init.parent.relative_to(here / folder).parts
            found.append(".".join((name, *parts)))
    return found


setup(packages=packages())
