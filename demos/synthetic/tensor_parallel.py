"""tensor-parallel: the per-head-sum identity is how production shards W_O across devices.

Megatron-LM (Shoeybi et al. 2019) splits self-attention by heads: W_Q, W_K, W_V are split by
columns (each rank owns whole heads) and W_O by rows (each rank owns the rows that read its
heads' slice of the concat). Each rank runs attention for its heads with no communication, writes
the partial sum sum_{h on rank} z_h @ W_O[h], and one all-reduce adds the partial writes; the
output bias is added once, not once per rank.

Here that runs for real: `world_size` processes started with torch.distributed (gloo on CPU; NCCL
when there is one GPU per rank), rendezvous on a free port of 127.0.0.1, a timeout on every step,
and the processes joined or killed before the check returns. The single-process layer is the
reference. The counterexample adds b_O on every rank, the classic tensor-parallel bias bug.
"""

from __future__ import annotations

import datetime
import io
import os
import shutil
import socket
import sys
import tempfile
import traceback
from dataclasses import dataclass
from pathlib import Path

from prep.demos import harness
from prep.demos._torch import torch
from prep.demos.harness import IDENTITY, MEASUREMENT, SANITY, Check, DeviceChoice, Report
from prep.demos.synthetic import attention as attn
from prep.demos.synthetic import ranks

NAME = "tensor-parallel"
DTYPE = torch.float32
CONTRAST_LABEL = "one rank's partial write before the all-reduce"
# Algebra: the all-reduce equality, one rank-agreement check per rank after rank 0
# (WORLD_SIZE = 2 at every scale) and the partial-write contrast. A failed distributed run
# returns one failing check instead.
CHECK_KINDS = {IDENTITY: 2, SANITY: 1, MEASUREMENT: 0}
SCALES = attn.standard_scales(large_seq_len=1024)
WORLD_SIZE = 2
TIMEOUT_S = 120.0  # rendezvous, all-reduce and join each get this long before the run is failed


@dataclass
class Setup:
    cfg: attn.Sizes
    x: torch.Tensor  # (B, T, d_model) the layer input
    w: attn.Weights  # W_Q, W_K, W_V: (n_heads, d_model, d_head); W_O: (n_heads, d_head, d_model)
    b_O: torch.Tensor  # (d_model,) the output bias
    world_size: int = WORLD_SIZE
    bias_on_every_rank: bool = False  # the bug: each rank adds b_O before the all-reduce
    backend: str = "gloo"  # "nccl" when there is one CUDA device per rank


def build(cfg: attn.Sizes, device: torch.device, gen: torch.Generator) -> Setup:
    x = attn.random_inputs(cfg, gen, DTYPE)  # (B, T, d_model)
    w = attn.random_weights(cfg, gen, DTYPE)
    b_o = attn.randn((cfg.d_model,), gen, DTYPE)  # (d_model,) large enough to see twice
    nccl = (
        device.type == "cuda"
        and torch.distributed.is_nccl_available()
        and torch.cuda.device_count() >= WORLD_SIZE
    )
    return Setup(cfg, x, w, b_o, backend="nccl" if nccl else "gloo")


def counterexample(cfg: attn.Sizes, device: torch.device, gen: torch.Generator) -> Setup:
    setup = build(cfg, device, gen)
    setup.bias_on_every_rank = True
    return setup


def single_process(x: torch.Tensor, w: attn.Weights, b_o: torch.Tensor) -> torch.Tensor:
    """The reference: every head on one device, concat, then the whole W_O and b_O."""
    z = attn.head_outputs(x, w.W_Q, w.W_K, w.W_V)  # (B, T, n_heads, d_head)
    return attn.project(z, w.W_O) + b_o  # (B, T, d_model)


def shard(w: attn.Weights, rank: int, world_size: int) -> attn.Weights:
    """Rank `rank`'s heads: column blocks of W_Q, W_K, W_V and the matching row block of W_O."""
    per = w.W_O.shape[0] // world_size
    heads = slice(rank * per, (rank + 1) * per)
    return attn.Weights(w.W_Q[heads], w.W_K[heads], w.W_V[heads], w.W_O[heads])


def partial_write(x: torch.Tensor, w: attn.Weights) -> torch.Tensor:
    """One rank's share: its heads' attention and their rows of W_O, no communication."""
    z = attn.head_outputs(x, w.W_Q, w.W_K, w.W_V)  # (B, T, heads_on_rank, d_head)
    return attn.project(z, w.W_O)  # (B, T, d_model) a partial sum over this rank's heads


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _to_bytes(obj: object) -> bytes:
    buf = io.BytesIO()
    torch.save(obj, buf)
    return buf.getvalue()


def _worker(
    rank: int, world_size: int, port: int, folder: str, backend: str, parent: int = 0
) -> None:
    """One rank: load the inputs, shard, compute the partial write, all-reduce, save the result.

    If the parent is gone when the rank finishes (a front end killed the demo), the rank removes
    the exchange folder itself, since the parent can no longer.
    """
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
            world_size=world_size,
            timeout=datetime.timedelta(seconds=TIMEOUT_S),
        )
        try:
            w = attn.Weights(*(t.to(device) for t in data["w"]))
            local = shard(w, rank, world_size)
            x = data["x"].to(device)  # (B, T, d_model) every rank reads the whole input
            out = partial_write(x, local)  # (B, T, d_model)
            if data["bias_on_every_rank"] or rank == 0:
                out = out + data["b_O"].to(device)  # (B, T, d_model) the bias, once in all
            torch.distributed.all_reduce(out, op=torch.distributed.ReduceOp.SUM)
            torch.save({"out": out.cpu(), "error": ""}, out_file)
        finally:
            torch.distributed.destroy_process_group()
    except Exception:  # reported by the parent as a failed check, with the traceback's last line
        torch.save({"out": None, "error": traceback.format_exc()}, out_file)
    finally:
        if parent and os.getppid() != parent:
            shutil.rmtree(folder, ignore_errors=True)


def _loopback_env() -> dict[str, str]:
    """The workers' environment: gloo on the loopback interface unless the user chose one."""
    env = dict(os.environ)
    loopback = [name for _, name in socket.if_nameindex() if name.startswith("lo")]
    if loopback and "GLOO_SOCKET_IFNAME" not in env:
        env["GLOO_SOCKET_IFNAME"] = loopback[0]
    return env


def run_distributed(setup: Setup) -> tuple[list[torch.Tensor | None], str]:
    """Start world_size worker processes, wait (with a timeout), and return each rank's output.

    Workers are fresh interpreters (`python -m prep.demos.synthetic.tensor_parallel RANK ...`), like
    torchrun's, so they do not depend on how the parent was started (a file, -m, stdin, a REPL).
    """
    w = setup.w
    with tempfile.TemporaryDirectory(prefix="prep-tp-") as folder:
        inputs = {
            "x": setup.x.cpu(),
            "w": [t.cpu() for t in (w.W_Q, w.W_K, w.W_V, w.W_O)],
            "b_O": setup.b_O.cpu(),
            "bias_on_every_rank": setup.bias_on_every_rank,
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
        outs: list[torch.Tensor | None] = []
        for r, code in enumerate(codes):
            f = Path(folder) / f"rank{r}.pt"
            if not f.exists():
                tail = (Path(folder) / f"rank{r}.log").read_text(errors="replace").strip()
                last = tail.splitlines()[-1] if tail else "no output"
                errors.append(f"rank {r} wrote no result (exit code {code}): {last}")
                outs.append(None)
                continue
            res = torch.load(f, weights_only=False)
            outs.append(res["out"])
            if res["error"]:
                errors.append(f"rank {r}: {res['error'].strip().splitlines()[-1]}")
    return outs, "; ".join(errors)


def check(setup: Setup) -> list[Check]:
    cfg = setup.cfg
    rtol, atol = harness.tolerance(DTYPE, cfg.d_model)
    reference = single_process(setup.x, setup.w, setup.b_O).cpu()  # (B, T, d_model)
    assert cfg.n_heads % setup.world_size == 0, "world_size must divide n_heads"
    harness.progress(f"starting {setup.world_size} processes ({setup.backend})")
    outs, error = run_distributed(setup)
    if error:  # e.g. the free port was taken before the rendezvous bound it: try once more
        harness.progress(f"retrying once after: {error}")
        outs, error = run_distributed(setup)
    if error or any(o is None for o in outs):
        return [
            Check(
                "torch.distributed run completed",
                0,
                "every rank returns its output",
                False,
                f"the distributed run failed: {error}",
            )
        ]
    got = [o for o in outs if o is not None]
    hint = (
        "the output bias must be added once (on one rank, or after the all-reduce): added on "
        "every rank it is summed world_size times; each rank's W_O rows must be the rows that "
        "read ITS heads' slice of the concat"
    )
    checks = [
        harness.close(
            f"all-reduce of {setup.world_size} ranks' partial writes  vs  single-process layer",
            got[0],
            reference,
            rtol=rtol,
            atol=atol,
            detail=hint,
        )
    ]
    checks += [
        harness.close(
            f"rank {r}'s all-reduced output  vs  rank 0's",
            o,
            got[0],
            rtol=rtol,
            atol=atol,
            detail="after an all-reduce every rank must hold the same tensor",
        )
        for r, o in enumerate(got[1:], start=1)
    ]
    return checks


def contrast(setup: Setup, gen: torch.Generator) -> list[Check]:
    """Without the all-reduce, one rank holds only its heads' part of the write."""
    # Bar: the heads' writes are independent random vectors, so leaving out half of them leaves
    # an error of about sqrt(1/2) ~ 0.7 of the heads' total write (bias excluded on both sides).
    every_head = partial_write(setup.x, setup.w)  # (B, T, d_model) all heads, no bias
    part = partial_write(setup.x, shard(setup.w, 0, setup.world_size))  # (B, T, d_model)
    return [
        harness.at_least(
            "rank 0's partial write (no all-reduce) vs every head's write, rel. error",
            harness.relative_error(part, every_head),
            0.3,
            "one rank alone writes only its heads' share; the other ranks' heads are missing",
            kind=SANITY,
            bar="independent random heads: leaving half out misses ~sqrt(1/2) of the write, as "
            "sequence-parallel's twin check (sanity) says",
        )
    ]


def notes(cfg: attn.Sizes) -> list[str]:
    n = cfg.batch * cfg.seq_len * cfg.d_model
    return [
        f"Communication: one all-reduce of B*T*d_model = {n:,} floats per layer forward; "
        "nothing is exchanged between the heads before W_O.",
        "Processes: one fresh interpreter per rank (python -m prep.demos.synthetic.tensor_parallel), "
        f"rendezvous on a free port of 127.0.0.1, {TIMEOUT_S:g} s timeout, killed if still "
        "running; gloo on CPU (loopback), NCCL when there is one GPU per rank.",
        "Tolerance: float32 defaults widened by sqrt(d_model/64): the all-reduce sums the "
        "heads' writes in a different order from the single-process matmul.",
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
