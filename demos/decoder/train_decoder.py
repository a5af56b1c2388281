"""Train the shipped attention-only decoder on the repeated-chunk copying task.

    python -m prep.demos.decoder.train_decoder                 # the shipped model: demos/decoder/weights/decoder.*
    python -m prep.demos.decoder.train_decoder --scale large --device cuda    # weights/decoder-large.*
    python -m prep.demos.decoder.train_decoder --steps 50 --out /tmp/d.safetensors   # a quick run

Fixed seed, AdamW, batches drawn from a generator on the training device, so a seed and a device
fix the run. Writes the tensors (safetensors) and a JSON file beside them with the config, seed,
steps, final training loss, held-out loss and in-context accuracy, and the seconds it took.
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from prep.demos._torch import torch
from prep.demos.decoder import decoder
from prep.demos.decoder.decoder import DecoderConfig


@dataclass(frozen=True)
class TrainConfig:
    model: DecoderConfig
    steps: int
    batch: int
    lr: float
    weight_decay: float
    eval_batch: int


SCALES = {
    # About 2 minutes on one shared CPU core; see decoder.json for the numbers it reached.
    "small": TrainConfig(DecoderConfig(), steps=5000, batch=64, lr=3e-3, weight_decay=0.01,
                         eval_batch=1024),
    # The same recipe, wider and longer: for a GPU.
    "large": TrainConfig(
        DecoderConfig(vocab=512, d_model=256, n_heads=8, n_layers=2, n_ctx=128, min_chunk=8,
                      max_chunk=48),
        steps=20000, batch=256, lr=1e-3, weight_decay=0.01, eval_batch=1024,
    ),
}  # fmt: skip


LARGE_OUT = decoder.WEIGHTS_DIR / "decoder-large.safetensors"  # never the shipped small model


def evaluate(params: dict, cfg: DecoderConfig, batch: int, seed: int) -> dict[str, float]:
    """Held-out loss and in-context accuracy on `batch` fresh sequences from `seed`."""
    dev = params["W_E"].device
    gen = torch.Generator(device=dev).manual_seed(seed)
    data = decoder.copy_batch(cfg, batch, gen)
    with torch.no_grad():
        logits, _ = decoder.forward(params, data.tokens)  # (B, T, vocab)
    return {
        "heldout_loss": float(decoder.next_token_loss(logits, data.tokens)),
        "in_context_accuracy": float(
            decoder.in_context_accuracy(logits, data.tokens, data.predictable)
        ),
    }


def train(
    tc: TrainConfig, seed: int, device: torch.device, log_every: int = 0
) -> tuple[dict, dict]:
    """(params, metadata): AdamW on next-token cross-entropy over every position."""
    start = time.perf_counter()
    gen = torch.Generator(device=device).manual_seed(seed)
    params = {k: torch.nn.Parameter(v) for k, v in decoder.init_params(tc.model, gen).items()}
    opt = torch.optim.AdamW(params.values(), lr=tc.lr, weight_decay=tc.weight_decay)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, tc.lr, total_steps=tc.steps, pct_start=0.1)
    loss = torch.zeros(())
    for step in range(tc.steps):
        tokens = decoder.copy_batch(tc.model, tc.batch, gen).tokens  # (B, T)
        logits, _ = decoder.forward(params, tokens)  # (B, T, vocab)
        loss = decoder.next_token_loss(logits, tokens)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        sched.step()
        if log_every and (step + 1) % log_every == 0:
            print(
                f"progress: step {step + 1}/{tc.steps} loss {float(loss.detach()):.4f}",
                file=sys.stderr,
            )
    trained = {k: v.detach() for k, v in params.items()}
    meta = {
        "config": decoder.config_dict(tc.model),
        "seed": seed,
        "steps": tc.steps,
        "batch": tc.batch,
        "lr": tc.lr,
        "weight_decay": tc.weight_decay,
        "optimizer": "AdamW, one-cycle schedule (10% warm-up)",
        "final_train_loss": float(loss.detach()),
        "eval_seed": seed + 1_000_000,
        "eval_sequences": tc.eval_batch,
        **evaluate(trained, tc.model, tc.eval_batch, seed + 1_000_000),
        "device": device.type,
        "torch": torch.__version__,
        "seconds": round(time.perf_counter() - start, 1),
    }
    return trained, meta


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m prep.demos.decoder.train_decoder", description=__doc__
    )
    parser.add_argument("--scale", choices=sorted(SCALES), default="small")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--steps", type=int, help="override the scale's number of steps")
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda", "mps"])
    parser.add_argument(
        "--out",
        type=Path,
        help="safetensors path (default: the shipped weights/decoder.safetensors for --scale "
        "small, weights/decoder-large.safetensors for --scale large)",
    )
    args = parser.parse_args(argv)
    if args.device == "cuda" and not torch.cuda.is_available():
        print("error: --device cuda: torch.cuda.is_available() is False", file=sys.stderr)
        return 2
    if args.steps is not None and args.steps < 1:
        print(f"error: --steps {args.steps}: must be at least 1", file=sys.stderr)
        return 2
    tc = SCALES[args.scale]
    if args.steps is not None:
        tc = TrainConfig(tc.model, args.steps, tc.batch, tc.lr, tc.weight_decay, tc.eval_batch)
    if args.out is None:
        args.out = decoder.SHIPPED if args.scale == "small" else LARGE_OUT
    params, meta = train(tc, args.seed, torch.device(args.device), log_every=max(tc.steps // 10, 1))
    decoder.save(params, meta, args.out)
    print(
        f"{args.out}: {tc.steps} steps in {meta['seconds']} s, train loss "
        f"{meta['final_train_loss']:.4f}, held-out loss {meta['heldout_loss']:.4f}, "
        f"in-context accuracy {meta['in_context_accuracy']:.4f}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
