"""The bundled decks are found both from an editable install and from a built wheel."""

from __future__ import annotations

import subprocess
import sys
import sysconfig
import venv
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FOLDERS = ("engine", "tui", "demos", "questions")


def shipped_files() -> list[str]:
    """What the wheel must hold: every module and package-data file of the four folders, as
    paths inside the wheel (prep/tui/app.py)."""
    data = {"questions": ("*.yaml",), "tui": ("*.tcss",), "demos": ("weights/*", "data/*")}
    out = []
    for folder in FOLDERS:
        base = ROOT / folder
        files = [p for p in base.rglob("*.py") if "__pycache__" not in p.parts]
        files += [p for pattern in data.get(folder, ()) for p in base.glob(pattern) if p.is_file()]
        out += [f"prep/{folder}/{p.relative_to(base).as_posix()}" for p in files]
    return sorted(out)


PROBE = (
    "from prep.engine.decks.checks import parse_decks\n"
    "from prep.engine.decks.files import bundled_deck_files\n"
    "import prep.engine, prep.questions\n"
    "files = bundled_deck_files()\n"
    "coll = parse_decks()\n"
    "print(prep.engine.__file__)\n"
    "print(len(files), len(coll.cards))\n"
)


def test_editable_install_reads_the_repo_decks() -> None:
    from prep.engine.decks.files import bundled_deck_files

    files = bundled_deck_files()
    assert files, "no bundled decks found in the prep.questions package"
    assert all(f.parent == ROOT / "questions" for f in files)


def test_every_folder_with_modules_is_a_package() -> None:
    """setup.py finds packages by their __init__.py: a folder of modules without one would be
    left out of the wheel while it still imports from the editable install."""
    for folder in FOLDERS:
        for module in (ROOT / folder).rglob("*.py"):
            if "__pycache__" in module.parts:
                continue
            assert (module.parent / "__init__.py").exists(), f"{module.parent} has no __init__.py"


@pytest.mark.slow
def test_wheel_install_ships_the_decks(tmp_path: Path) -> None:
    wheel_dir = tmp_path / "wheel"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "-q",
            "--no-deps",
            "--no-build-isolation",
            "-w",
            str(wheel_dir),
            str(ROOT),
        ],
        check=True,
        capture_output=True,
    )
    (wheel,) = wheel_dir.glob("prep-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    yamls = sorted(n for n in names if n.startswith("prep/questions/") and n.endswith(".yaml"))
    assert yamls == sorted(f"prep/questions/{p.name}" for p in (ROOT / "questions").glob("*.yaml"))
    missing = sorted(set(shipped_files()) - set(names))
    assert not missing, f"not in the wheel: {missing}"
    assert "prep/demos/decoder/weights/decoder.safetensors" in names  # the shipped decoder
    assert "prep/demos/decoder/weights/decoder.json" in names
    # A bare venv with the wheel unpacked (a pure-Python wheel needs nothing more) and this
    # venv's dependencies on its path, but not the editable finder: prep comes from the wheel.
    target = tmp_path / "venv"
    venv.EnvBuilder(with_pip=False).create(target)
    site = Path(
        subprocess.run(
            [
                str(target / "bin" / "python"),
                "-c",
                "import sysconfig; print(sysconfig.get_paths()['purelib'])",
            ],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.strip()
    )
    zipfile.ZipFile(wheel).extractall(site)
    (site / "deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    out = subprocess.run(
        [str(target / "bin" / "python"), "-c", PROBE],
        check=True,
        capture_output=True,
        text=True,
        cwd=tmp_path,
    ).stdout.split("\n")
    assert out[0].startswith(str(site)), out
    n_files, n_cards = map(int, out[1].split())
    assert n_files == len(yamls) and n_cards > 0
