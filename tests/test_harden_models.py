"""Hostile `--model` folders are one line and exit 2 (never exit 70), and the message never
repeats torch's advice to load a pickle with weights_only=False."""

from __future__ import annotations

import importlib
import json
import pickle
import shutil
import struct
from pathlib import Path

import pytest

pytest.importorskip("transformers")

from prep.demos import cli  # noqa: E402
from prep.demos._torch import torch  # noqa: E402
from prep.demos.pretrained import extra  # noqa: E402

TOKENIZER_FILES = (
    "vocab.txt",
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A random 2-layer GPT-2 with the shipped model's tokenizer (no MiniLM load)."""
    import transformers

    shipped = Path(importlib.import_module(extra.MODEL_PACKAGE).get_model_path())
    folder = tmp_path_factory.mktemp("tiny")
    torch.manual_seed(0)
    config = transformers.GPT2Config(
        vocab_size=30522, n_positions=64, n_embd=48, n_layer=2, n_head=4
    )
    transformers.GPT2Model(config).save_pretrained(folder)
    for name in TOKENIZER_FILES:
        if (shipped / name).exists():
            shutil.copy(shipped / name, folder / name)
    return folder


class NotATensor:
    """A pickled object that is not a tensor: a safe (weights_only) load refuses it."""


def hostile(tiny: Path, tmp_path: Path, kind: str) -> Path:
    folder = tmp_path / kind
    shutil.copytree(tiny, folder)
    weights = folder / "model.safetensors"
    if kind == "config-string":
        (folder / "config.json").write_text(json.dumps("a string"))
    elif kind == "pickle-bin":
        weights.unlink()
        (folder / "pytorch_model.bin").write_bytes(pickle.dumps({"w": NotATensor()}))
    elif kind == "truncated":
        data = weights.read_bytes()
        weights.write_bytes(data[: len(data) // 2])
    elif kind == "huge-header":
        weights.write_bytes(struct.pack("<Q", 2**62) + b"{}")
    elif kind == "mismatched":
        config = json.loads((folder / "config.json").read_text())
        config["n_embd"] = 64
        (folder / "config.json").write_text(json.dumps(config))
    elif kind == "nan":
        from safetensors.torch import load_file, save_file

        tensors = load_file(weights)
        key = next(k for k in tensors if k.endswith("c_proj.weight"))
        tensors[key][0, 0] = float("nan")
        save_file(tensors, weights, metadata={"format": "pt"})
    return folder


@pytest.mark.parametrize(
    "kind", ["config-string", "pickle-bin", "truncated", "huge-header", "mismatched", "nan"]
)
def test_a_hostile_model_folder_is_one_line_and_exit_2(
    tiny: Path, tmp_path: Path, kind: str, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = hostile(tiny, tmp_path, kind)
    code = cli.main(["real-ov-rank", "--device", "cpu", "--model", str(folder)])
    out, err = capsys.readouterr()
    lines = [line for line in err.splitlines() if "loading" not in line]
    assert code == 2, (out, err)
    assert len(lines) == 1 and "--model" in lines[0] and "Traceback" not in err, err
    assert "weights_only" not in out + err
    if kind == "nan":
        assert "NaN or infinity" in lines[0]
    if kind == "pickle-bin":
        assert "pickle" in lines[0] and "safetensors" in lines[0]


def test_the_tiny_folder_itself_loads(tiny: Path) -> None:
    from prep.demos.pretrained import pretrained as pt

    real = pt.load(str(tiny), torch.device("cpu"))
    assert real.family == "gpt2"
