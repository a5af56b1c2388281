"""The cross-encoder trial's training script (prep.demos.pretrained.grader.crossenc): its LoRA
delta starts as the frozen model and trains only the delta, and its generated pairs never read
a held-out card. No model is loaded here."""

from __future__ import annotations

import random

import yaml

from prep.demos._torch import torch
from prep.demos.pretrained.grader import crossenc
from prep.demos.pretrained.grader import train as head_train


def test_lora_starts_as_the_frozen_layer_and_trains_only_its_delta() -> None:
    torch.manual_seed(0)
    base = torch.nn.Linear(6, 4)
    base.weight.requires_grad_(False)
    base.bias.requires_grad_(False)
    lora = crossenc.LoRALinear(base, rank=2, alpha=4.0)
    x = torch.randn(3, 6)
    assert torch.equal(lora(x), base(x))
    lora(x).sum().backward()
    assert lora.b.grad is not None and lora.b.grad.abs().sum() > 0
    assert base.weight.grad is None


def test_card_pairs_have_both_labels_and_no_held_out_card() -> None:
    items = crossenc.card_items(random.Random(0))
    labels = {lab for *_, lab in items}
    assert labels == {0.0, 1.0}
    held_texts = set()
    for path in sorted((head_train.ROOT / "questions").glob("*.yaml")):
        for card in yaml.safe_load(path.read_text("utf-8")).get("cards", []):
            if card.get("id") in head_train.HELDOUT_CARDS:
                held_texts.update(str(p) for p in card.get("points") or [])
    assert held_texts, "the held-out cards carry points"
    assert not {p for p, *_ in items} & held_texts
