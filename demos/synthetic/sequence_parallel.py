"""sequence-parallel: the all-reduce after row-parallel W_O, split into its two halves.

Megatron-style tensor parallelism (demos/tensor_parallel.py) ends the attention block with an
all-reduce of the ranks' partial writes, after which every rank holds the whole (B, T, d_model)
output and runs the residual add, dropout and LayerNorm on all of it, redundantly, storing the
same activations on every rank. Sequence parallelism (Korthikanti et al. 2022) replaces that
all-reduce with a reduce-scatter along the sequence: rank r receives the summed write of its own
T / world_size tokens, adds the output bias and the residual and applies LayerNorm to those
tokens only, and an all-gather restores the whole sequence before the next column-parallel layer
(which needs every token). A ring all-reduce is exactly a reduce-scatter followed by an
all-gather, so the bytes moved are the same; what shrinks is the per-rank activation memory of
the norm/dropout region.

Here that runs for real with torch.distributed (gloo on CPU, NCCL with a GPU per rank), started
like the tensor-parallel demo (fresh interpreters, a free port of 127.0.0.1, a timeout). gloo
has no reduce-scatter, so on gloo it is built from one `reduce` per rank (each rank's chunk
summed onto that rank), which is what a reduce-scatter computes; NCCL uses its own.

Checks (all identities: the algebra of the collectives, true for any weights): each rank's
reduce-scattered chunk equals the same tokens of the single-process attention output; the
all-gathered LayerNorm(x + attention) equals the single-process one on every rank; each rank
holds T / world_size tokens of the norm region's activations. The counterexample adds b_O on
every rank before the reduce-scatter (the classic bias bug, now summed world_size times).
"""

from __future__ import annotations

import datetime
import os
import shutil
import sys
import tempfile
import traceback
from dataclasses import dataclass
from pathlib import Path

from prep.demos import harness
from prep.demos._torch import torch
from prep.demos.harness import IDENTITY, SANITY, Check, DeviceChoice, Report
from prep.demos.synthetic import attention as attn
from prep.demos.synthetic import ranks
from prep.demos.synthetic.tensor_parallel import (
    _free_port,
    _loopback_env,
    _to_bytes,
    partial_write,
    shard,
)

NAME = "sequence-parallel"
DTYPE = torch.float32
CONTRAST_LABEL = "one rank's own tokens taken from its partial write, without the reduction"
WORLD_SIZE = 2
# Per rank: its chunk and its gathered output (2 x WORLD_SIZE), and the activation count.
CHECK_KINDS = {
    IDENTITY: 5,
    SANITY: 1,
}  # 2 * WORLD_SIZE + 1 identities (a literal: read by AST)
SCALES = attn.standard_scales(large_seq_len=1024)
TIMEOUT_S = 120.0
EPS = 1e-5


@dataclass
class Setup:
    cfg: attn.Sizes
    x: torch.Tensor  # (B, T, d_model) the block's input, also the residual
    w: attn.Weights  # W_Q, W_K, W_V: (n_heads, d_model, d_head); W_O: (n_heads, d_head, d_model)
    b_O: torch.Tensor  # (d_model,)
    gamma: torch.Tensor  # (d_model,) LayerNorm gain
    beta: torch.Tensor  # (d_model,) LayerNorm bias
    world_size: int = WORLD_SIZE
    bias_on_every_rank: bool = False
    plain_tp: bool = False  # plain tensor parallelism: all-reduce, every rank norms every token
    backend: str = "gloo"


def build(cfg: attn.Sizes, device: torch.device, gen: torch.Generator) -> Setup:
    x = attn.random_inputs(cfg, gen, DTYPE)  # (B, T, d_model)
    w = attn.random_weights(cfg, gen, DTYPE)
    b_o = attn.randn((cfg.d_model,), gen, DTYPE)  # (d_model,)
    gamma = 1 + attn.randn((cfg.d_model,), gen, DTYPE) / 10  # (d_model,)
    beta = attn.randn((cfg.d_model,), gen, DTYPE) / 10  # (d_model,)
    nccl = (
        device.type == "cuda"
        and torch.distributed.is_nccl_available()
        and torch.cuda.device_count() >= WORLD_SIZE
    )
    return Setup(cfg, x, w, b_o, gamma, beta, backend="nccl" if nccl else "gloo")


def counterexample(cfg: attn.Sizes, device: torch.device, gen: torch.Generator) -> Setup:
    setup = build(cfg, device, gen)
    setup.bias_on_every_rank = True
    return setup


def layer_norm(y: torch.Tensor, gamma: torch.Tensor, beta: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.layer_norm(y, y.shape[-1:], gamma, beta, EPS)  # (..., d_model)


def single_process(setup: Setup) -> tuple[torch.Tensor, torch.Tensor]:
    """(attention output with b_O, LayerNorm(x + it)) with every head on one device."""
    attn_out = partial_write(setup.x, setup.w) + setup.b_O  # (B, T, d_model)
    return attn_out, layer_norm(setup.x + attn_out, setup.gamma, setup.beta)


def _reduce_scatter(partial: torch.Tensor, rank: int, world: int, backend: str) -> torch.Tensor:
    """Sum over ranks of chunk `rank` (along T) of every rank's partial write."""
    chunks = [c.contiguous() for c in partial.chunk(world, dim=1)]  # world x (B, T/w, d)
    if backend == "nccl":
        mine = torch.empty_like(chunks[rank])
        torch.distributed.reduce_scatter(mine, chunks)
        return mine
    for owner, chunk in enumerate(chunks):  # gloo: one reduce per rank is a reduce-scatter
        torch.distributed.reduce(chunk, dst=owner)
    return chunks[rank]


def _worker(rank: int, world: int, port: int, folder: str, backend: str, parent: int) -> None:
    out_file = Path(folder) / f"rank{rank}.pt"
    try:
        data = torch.load(Path(folder) / "inputs.pt", weights_only=False)
        device = torch.device(f"cuda:{rank}") if backend == "nccl" else torch.device("cpu")
        if backend == "nccl":
            torch.cuda.set_device(device)
        torch.distributed.init_process_group(
            backend,
            init_method=f"tcp://127.0.0.1:{port}",
            rank=rank,
            world_size=world,
            timeout=datetime.timedelta(seconds=TIMEOUT_S),
        )
        try:
            w = attn.Weights(*(t.to(device) for t in data["w"]))
            x = data["x"].to(device)  # (B, T, d_model)
            partial = partial_write(x, shard(w, rank, world))  # (B, T, d_model) this rank's heads
            if data["bias_on_every_rank"]:
                partial = partial + data["b_O"].to(device)  # the bug: summed world times
            gamma, beta = data["gamma"].to(device), data["beta"].to(device)
            if data["plain_tp"]:  # the all-reduce: every rank holds and norms every token
                torch.distributed.all_reduce(partial)
                whole = partial + data["b_O"].to(device)  # (B, T, d_model)
                normed = layer_norm(x + whole, gamma, beta)  # (B, T, d_model) on every rank
                mine, full = whole.chunk(world, dim=1)[rank], normed
            else:
                mine = _reduce_scatter(partial, rank, world, backend)  # (B, T/world, d_model)
                if not data["bias_on_every_rank"]:
                    mine = mine + data["b_O"].to(device)  # once per token, on its own rank
                x_mine = x.chunk(world, dim=1)[rank]  # (B, T/world, d_model) residual tokens
                normed = layer_norm(x_mine + mine, gamma, beta)  # (B, T/world, d_model)
                gathered = [torch.empty_like(normed) for _ in range(world)]
                torch.distributed.all_gather(gathered, normed.contiguous())
                full = torch.cat(gathered, dim=1)  # (B, T, d_model) for the next layer
            torch.save(
                {"chunk": mine.cpu(), "full": full.cpu(), "held": normed.numel(), "error": ""},
                out_file,
            )
        finally:
            torch.distributed.destroy_process_group()
    except Exception:
        torch.save({"chunk": None, "error": traceback.format_exc()}, out_file)
    finally:
        if parent and os.getppid() != parent:
            shutil.rmtree(folder, ignore_errors=True)


def run_distributed(setup: Setup) -> tuple[list[dict], str]:
    """Start world_size fresh interpreters (as the tensor-parallel demo does) and collect each
    rank's result; errors are returned as one line."""
    w = setup.w
    with tempfile.TemporaryDirectory(prefix="prep-sp-") as folder:
        inputs = {
            "x": setup.x.cpu(),
            "w": [t.cpu() for t in (w.W_Q, w.W_K, w.W_V, w.W_O)],
            "b_O": setup.b_O.cpu(),
            "gamma": setup.gamma.cpu(),
            "beta": setup.beta.cpu(),
            "bias_on_every_rank": setup.bias_on_every_rank,
            "plain_tp": setup.plain_tp,
        }
        (Path(folder) / "inputs.pt").write_bytes(_to_bytes(inputs))
        port = _free_port()
        rank_args = [
            [str(r), str(setup.world_size), str(port), folder, setup.backend, str(os.getpid())]
            for r in range(setup.world_size)
        ]
        errors = []
        try:
            codes = ranks.run(__name__, rank_args, Path(folder), _loopback_env(), TIMEOUT_S)
        except OSError as e:
            errors.append(f"could not start a rank: {e}")
            codes = []
        results = []
        for r, code in enumerate(codes):
            f = Path(folder) / f"rank{r}.pt"
            if not f.exists():
                tail = (Path(folder) / f"rank{r}.log").read_text(errors="replace").strip()
                last = tail.splitlines()[-1] if tail else "no output"
                errors.append(f"rank {r} wrote no result (exit code {code}): {last}")
                continue
            res = torch.load(f, weights_only=False)
            if res["error"]:
                errors.append(f"rank {r}: {res['error'].strip().splitlines()[-1]}")
                continue
            results.append(res)
    return results, "; ".join(errors)


def check(setup: Setup) -> list[Check]:
    cfg = setup.cfg
    world = setup.world_size
    assert cfg.n_heads % world == 0 and cfg.seq_len % world == 0
    rtol, atol = harness.tolerance(DTYPE, cfg.d_model)
    attn_out, normed = (t.cpu() for t in single_process(setup))  # (B, T, d_model) each
    harness.progress(f"starting {world} processes ({setup.backend})")
    results, error = run_distributed(setup)
    if error:  # a port taken before the rendezvous bound it: once more
        harness.progress(f"retrying once after: {error}")
        results, error = run_distributed(setup)
    if error or len(results) != world:
        return [
            Check(
                "torch.distributed run completed",
                0,
                "every rank returns its output",
                False,
                f"the distributed run failed: {error}",
            )
        ]
    hint = (
        "after the reduce-scatter each rank owns T/world_size tokens of the summed write; add "
        "b_O there, once per token (on every rank before the reduction it is summed world_size "
        "times)"
    )
    checks = []
    for r, res in enumerate(results):
        checks.append(
            harness.close(
                f"rank {r}: reduce-scattered tokens  vs  single-process attention output",
                res["chunk"],
                attn_out.chunk(world, dim=1)[r],
                rtol=rtol,
                atol=atol,
                detail=hint,
            )
        )
        checks.append(
            harness.close(
                f"rank {r}: all-gathered LayerNorm(x + attn)  vs  single process",
                res["full"],
                normed,
                rtol=rtol,
                atol=atol,
                detail=hint,
            )
        )
    checks.append(
        harness.equals(
            "norm-region activations held per rank (elements)  ==  B·T·d_model / world_size",
            max(res["held"] for res in results),
            cfg.batch * cfg.seq_len * cfg.d_model // world,
            detail="plain tensor parallelism holds all B·T·d_model on every rank",
        )
    )
    return checks


def contrast(setup: Setup, gen: torch.Generator) -> list[Check]:
    """Without the reduction, rank 0's tokens hold only its own heads' part of the write."""
    world = setup.world_size
    every = partial_write(setup.x, setup.w).chunk(world, dim=1)[0]  # (B, T/w, d_model)
    own = partial_write(setup.x, shard(setup.w, 0, world)).chunk(world, dim=1)[0]
    return [
        harness.at_least(
            "rank 0's tokens from its own heads only  vs  every head's write, rel. error",
            harness.relative_error(own, every),
            0.3,
            "the reduce-scatter is what adds the other ranks' heads to these tokens",
            kind=SANITY,
            bar="generic: on any weights the missing heads matter (independent random heads: "
            "leaving half out misses ~sqrt(1/2) of the write)",
        )
    ]


def notes(cfg: attn.Sizes) -> list[str]:
    n = cfg.batch * cfg.seq_len * cfg.d_model
    return [
        f"Communication per layer forward: a reduce-scatter and an all-gather of {n:,} floats "
        "in all, the same bytes as the one all-reduce of plain tensor parallelism (a ring "
        "all-reduce is those two steps).",
        "gloo has no reduce-scatter: it is built from one reduce per rank here; NCCL runs its "
        "own. Processes as in the tensor-parallel demo (fresh interpreters, loopback, timeout).",
    ]


def run(scale: str = "small", device: str | DeviceChoice = "cpu", seed: int = 0) -> Report:
    return harness.run_module(__name__, scale, device, seed)


def warm() -> None:
    """Start the kept ranks in the background (the demo worker's warm-up; no-op elsewhere)."""
    ranks.warm(WORLD_SIZE, _loopback_env())


def rank_main(argv: list[str]) -> None:
    """One rank, from its command line (demos/synthetic/ranks.py starts or reuses it)."""
    rank, world, port, folder, backend, parent = argv[:6]
    _worker(int(rank), int(world), int(port), folder, backend, int(parent))


if __name__ == "__main__":  # a worker rank, started by run_distributed
    rank_main(sys.argv[1:])
