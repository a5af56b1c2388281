"""learned-suppression: training W_V and W_O together shrinks the noise heads' OV circuits.

Task: predict the previous token (target at position t is token t-1). Every head has a fixed,
hard attention pattern: "useful" heads attend to position t-1, "noise" heads to a fixed random
position other than t-1, whose token is independent of the target. The embedding and unembedding
are frozen random matrices; W_V ([n_heads, d_model, d_head]) and W_O ([n_heads, d_head, d_model])
train together, so the quantity that matters is each head's OV circuit W_V^h W_O^h (d_model x
d_model): a head's write is (attended token's embedding) @ W_V^h W_O^h. The claim is stated about
its Frobenius norm, measured against that head's own norm at initialisation.

Why the noise heads' OV should shrink: a noise head's write adds a target-independent term to the
logits, which only raises the expected cross-entropy, so the expected gradient on its OV points
towards 0; the useful heads' gradient grows theirs. Whether the expectation wins over gradient
noise is a measurement: it is run with SGD (steps proportional to the gradient) and with AdamW
(steps normalised per weight, so a weight whose gradient is mostly noise still moves about lr per
step). I expected AdamW to let the noise heads grow; at these sizes they shrink under AdamW too.
The earlier version of this demo trained W_O alone with W_V frozen and a smaller initial W_O;
there the noise heads' W_O blocks grew (0.354 -> 0.26-1.33) and only the ratio to the useful
heads held, which is why the claim is now about the OV product against each head's own start.

Weight decay: the main run uses SGD with weight decay; the control run is identical with weight
decay 0. Both are reported per seed, and the claim names weight decay only if the control fails.

What the runs showed, and how the claim changed (the bar, 1.0, did not): the claim was "every
noise head of every seed ends below its start" for all three rows. Over 30 seeds (1000..1029,
small scale) that held for SGD with weight decay 1e-3 in 30 of 30 (worst 0.24, median 0.20), for
SGD without weight decay in 29 of 30 (worst 1.01, median 0.82) and for AdamW in 26 of 30 (worst
1.16, median 0.81). Last round the control and AdamW rows were then switched to "median over
seeds", a rule chosen after the data. This round (demos/BARS.md, pre-registered in commit a120629
before any run with it) they use a rule argued from what the claim means: the one-sided 95%
Student-t upper bound over seeds of log(largest noise-head growth per seed) must be below 0. The
weight-decay row keeps "every seed". At 5 seeds that rule passed the control 8 and AdamW 6 of 10
draws; the seed count for those rows, 20, was argued from an 80-seed pilot before the run that
validated it (demos/BARS.md, audit12: 10 and 10 of 10 fresh draws).
Every seed s in seed..seed+n_seeds-1 builds its own task and weights from a generator on the run's
device, so a seed fixes the run.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from prep.demos import harness
from prep.demos._torch import torch, warm_optimizers
from prep.demos.harness import IDENTITY, MEASUREMENT, SANITY, Check, DeviceChoice, Report
from prep.demos.synthetic import attention as attn

NAME = "learned-suppression"
DTYPE = torch.float32
CONTRAST_LABEL = "every head attends to the predictive token (heads n_useful.. keep the label)"
# Per optimiser (SGD+wd, SGD, AdamW) two measurements on trained weights against their own
# initialisation (noise heads shrink, useful heads grow) and one sanity check (the held-out loss
# fell: training worked, a precondition no claim rests on, as block-diagonal's dense student),
# and the all-heads-useful contrast, at every scale.
CHECK_KINDS = {IDENTITY: 0, SANITY: 3, MEASUREMENT: 7}
# Pass bars, argued before any run of this version: the claim is directional against each head's
# own starting norm, so the bar is the claim itself. Every noise head in every seed must end with
# ||OV|| / ||OV at init|| < 1 and every useful head > 1: a single exception means the effect is
# not reliable at this size. The loss must fall to <= 0.9 of its start, or nothing was learned.
# The control (no weight decay) and AdamW rows claim less: "the noise heads shrink, seed to seed".
# Pre-registered in demos/BARS.md (commit a120629) before a run with it: per seed s_i = log of
# the largest noise-head growth (log: a ratio's null "no change" is 0, and x2 / x0.5 weigh the
# same); the seeds are independent draws, so the bar is the one-sided 95% Student-t upper bound
# mean(s) + t(0.95, n-1) sd(s) / sqrt(n) < 0. Fewer than 2 seeds: no interval, the check fails.
# (A sign test at p < 0.05 needs 5 of 5 seeds at n = 5, i.e. "every seed" again.)
NOISE_BAR = 1.0
USEFUL_BAR = 1.0
NOISE_LOG_BAR = 0.0
# One-sided 95% Student-t quantiles t(0.95, df); past df 30 the df-30 value (conservative).
T95 = {
    1: 6.314, 2: 2.920, 3: 2.353, 4: 2.132, 5: 2.015, 6: 1.943, 7: 1.895, 8: 1.860, 9: 1.833,
    10: 1.812, 11: 1.796, 12: 1.782, 13: 1.771, 14: 1.761, 15: 1.753, 16: 1.746, 17: 1.740,
    18: 1.734, 19: 1.729, 20: 1.725, 21: 1.721, 22: 1.717, 23: 1.714, 24: 1.711, 25: 1.708,
    26: 1.706, 27: 1.703, 28: 1.701, 29: 1.699, 30: 1.697,
}  # fmt: skip
LOSS_BAR = 0.9


@dataclass(frozen=True)
class Config:
    vocab: int
    d_model: int
    n_heads: int
    n_useful: int  # heads 0..n_useful-1 attend to the predictive token, the rest to noise
    seq_len: int
    batch: int
    steps: int
    lr: float  # SGD learning rate (momentum 0.9)
    weight_decay: float  # the main run's; the control run uses 0
    adam_lr: float  # the contrast's AdamW learning rate
    n_seeds: int  # the weight-decay row and the all-heads-useful contrast
    # The control (no weight decay) and AdamW rows: the seed count their t bound passes >= 95%
    # of the time at, from an 80-seed pilot (demos/BARS.md, audit12); their first n_seeds seeds
    # are the weight-decay row's.
    n_seeds_t: int = 20

    @property
    def d_head(self) -> int:
        return self.d_model // self.n_heads


SCALES = {
    "small": Config(
        vocab=32, d_model=32, n_heads=8, n_useful=4, seq_len=16, batch=32, steps=150,
        lr=0.5, weight_decay=1e-3, adam_lr=0.02, n_seeds=5,
    ),
    "large": Config(
        vocab=1024, d_model=1024, n_heads=16, n_useful=8, seq_len=64, batch=16, steps=300,
        lr=0.5, weight_decay=1e-3, adam_lr=1e-3, n_seeds=5,
    ),
}  # fmt: skip


@dataclass
class Run:
    """One seed's training: OV norms per head before and after, and the held-out loss."""

    useful: torch.Tensor  # (n_heads,) bool
    ov_init: torch.Tensor  # (n_heads,) ||W_V^h W_O^h||_F at initialisation
    ov_final: torch.Tensor  # (n_heads,) and after training
    loss_init: float
    loss_final: float

    @property
    def growth(self) -> torch.Tensor:
        return self.ov_final / self.ov_init  # (n_heads,)


@dataclass
class Setup:
    cfg: Config
    runs: list[Run]  # the main runs (SGD with weight decay), one per seed
    control: list[Run]  # the same with weight decay 0
    adam: list[Run]  # the same tasks and seeds with AdamW (and the main run's weight decay)
    seeds: list[int]
    all_useful: list[Run]  # the contrast: the main run when every head reads the target


@dataclass
class Task:
    E: torch.Tensor  # (vocab, d_model) frozen embedding
    W_V: torch.Tensor  # (n_heads, d_model, d_head) initial value projections
    W_O: torch.Tensor  # (n_heads, d_head, d_model) initial output projection
    W_U: torch.Tensor  # (d_model, vocab) frozen unembedding
    source: torch.Tensor  # (n_heads, T) position each head attends to from each query position
    useful: torch.Tensor  # (n_heads,) bool


def make_task(cfg: Config, gen: torch.Generator, noise_heads_useful: bool = False) -> Task:
    """Frozen embedding/unembedding, initial W_V and W_O, and the heads' attention patterns."""
    d, t = cfg.d_model, cfg.seq_len
    e = attn.randn((cfg.vocab, d), gen, DTYPE)  # (vocab, d_model)
    w_v = attn.randn((cfg.n_heads, d, cfg.d_head), gen, DTYPE) / d**0.5  # (n_heads, d, d_head)
    w_u = attn.randn((d, cfg.vocab), gen, DTYPE) / d**0.5  # (d_model, vocab)
    w_o = attn.randn((cfg.n_heads, cfg.d_head, d), gen, DTYPE) / d**0.5  # (n_heads, d_head, d)
    prev = (torch.arange(t, device=gen.device) - 1).clamp(min=0)  # (T,) position t-1
    # A random position other than t-1: t-1 + an offset in [1, T-1], wrapped around.
    offset = torch.randint(1, t, (cfg.n_heads, t), generator=gen, device=gen.device)  # (h, T)
    noise = (prev[None, :] + offset) % t  # (n_heads, T) never equal to t-1
    useful = torch.arange(cfg.n_heads, device=gen.device) < cfg.n_useful  # (n_heads,)
    if noise_heads_useful:
        useful = torch.ones_like(useful)
    source = torch.where(useful[:, None], prev[None, :], noise)  # (n_heads, T)
    return Task(e, w_v, w_o, w_u, source, useful)


def head_outputs(task: Task, w_v: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
    """Hard attention: head h at position t reads the token at source[h, t], through W_V^h."""
    v = torch.einsum("btm,hmd->bhtd", task.E[tokens], w_v)  # (B, n_heads, T, d_head)
    idx = task.source[None, :, :, None].expand(tokens.shape[0], -1, -1, v.shape[-1])  # (B,h,T,dh)
    return torch.gather(v, 2, idx).transpose(1, 2)  # (B, T, n_heads, d_head)


def loss_fn(task: Task, w_v: torch.Tensor, w_o: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
    z = head_outputs(task, w_v, tokens)  # (B, T, n_heads, d_head)
    logits = attn.project(z, w_o) @ task.W_U  # (B, T, vocab)
    target = tokens[:, :-1]  # (B, T-1) the token at t-1, for positions t = 1..T-1
    return torch.nn.functional.cross_entropy(logits[:, 1:].flatten(0, 1), target.flatten())


def ov_norms(w_v: torch.Tensor, w_o: torch.Tensor) -> torch.Tensor:
    """||W_V^h W_O^h||_F per head: (n_heads,)."""
    return torch.einsum("hmk,hkn->hmn", w_v, w_o).norm(dim=(1, 2))  # (n_heads,)


def train(
    cfg: Config,
    gen: torch.Generator,
    *,
    optimizer: str = "sgd",
    weight_decay: float | None = None,
    noise_heads_useful: bool = False,
) -> Run:
    """Train W_V and W_O together on one task drawn from `gen`."""
    task = make_task(cfg, gen, noise_heads_useful)
    w_v = torch.nn.Parameter(task.W_V.clone())  # (n_heads, d_model, d_head)
    w_o = torch.nn.Parameter(task.W_O.clone())  # (n_heads, d_head, d_model)
    wd = cfg.weight_decay if weight_decay is None else weight_decay
    if optimizer == "sgd":
        opt = torch.optim.SGD([w_v, w_o], lr=cfg.lr, momentum=0.9, weight_decay=wd)
    else:
        opt = torch.optim.AdamW([w_v, w_o], lr=cfg.adam_lr, weight_decay=wd)
    shape = (cfg.batch, cfg.seq_len)
    held_out = torch.randint(
        cfg.vocab, (4 * cfg.batch, cfg.seq_len), generator=gen, device=gen.device
    )
    with torch.no_grad():
        loss_init = float(loss_fn(task, w_v, w_o, held_out))
    for _ in range(cfg.steps):
        tokens = torch.randint(cfg.vocab, shape, generator=gen, device=gen.device)  # (B, T)
        opt.zero_grad(set_to_none=True)
        loss_fn(task, w_v, w_o, tokens).backward()
        opt.step()
    with torch.no_grad():
        loss_final = float(loss_fn(task, w_v, w_o, held_out))
        final = ov_norms(w_v, w_o)  # (n_heads,)
    return Run(task.useful, ov_norms(task.W_V, task.W_O), final, loss_init, loss_final)


def _seeds(gen: torch.Generator, n: int) -> list[int]:
    """n seeds drawn from the run's generator, so `--seed` picks them all."""
    return [int(s) for s in torch.randint(2**31 - 1, (n,), generator=gen, device=gen.device)]


@dataclass(frozen=True)
class Variant:
    """How one row's students train: `train`'s keyword arguments."""

    optimizer: str = "sgd"
    weight_decay: float | None = None  # None: the config's
    noise_heads_useful: bool = False


MAIN, CONTROL, ADAM, ALL_USEFUL = (
    Variant(),
    Variant(weight_decay=0.0),
    Variant(optimizer="adamw"),
    Variant(noise_heads_useful=True),
)


def train_batch(
    cfg: Config, device: torch.device, seeds: list[int], variants: list[Variant]
) -> list[list[Run]]:
    """`train` for every variant and seed, as one batched training: [variant][seed] runs.

    The same trainings, the same floats: the runs share no parameters, so the batched loss is
    the sum of the separate ones and each run's gradient is its own loss's (the sum passes 1.0
    to each term). A seed's generator draws what `train` draws, in the same order (the task,
    the held-out and every step's tokens, which its variants shared there too); the value
    einsum, the W_O and W_U matmuls run as batched matmuls of each run's own shapes, attention
    is a gather, each run's cross-entropy is its own call on its own slice, and the optimisers
    (one per variant, over its seeds stacked) are elementwise. On the CPU every number equals
    `train`'s bit for bit (a test holds it); a BLAS that blocked a batched matmul differently
    could move the last bits (~1e-7 relative), far below the 3 digits printed.
    """
    n_seeds, n_var = len(seeds), len(variants)

    def generator(seed: int) -> torch.Generator:
        return torch.Generator(device=device).manual_seed(seed)

    # A variant changes no draw (only which heads read t-1): its tasks from fresh generators.
    tasks = [[make_task(cfg, generator(s), v.noise_heads_useful) for s in seeds] for v in variants]
    gens = [generator(s) for s in seeds]  # then the draws after the task, as `train` makes them
    base = [make_task(cfg, g) for g in gens]
    params, opts = [], []
    for v in variants:
        w_v = torch.nn.Parameter(torch.stack([t.W_V for t in base]))  # (S, h, d, dh)
        w_o = torch.nn.Parameter(torch.stack([t.W_O for t in base]))  # (S, h, dh, d)
        wd = cfg.weight_decay if v.weight_decay is None else v.weight_decay
        if v.optimizer == "sgd":
            opts.append(torch.optim.SGD([w_v, w_o], lr=cfg.lr, momentum=0.9, weight_decay=wd))
        else:
            opts.append(torch.optim.AdamW([w_v, w_o], lr=cfg.adam_lr, weight_decay=wd))
        params.append((w_v, w_o))
    emb = torch.stack([t.E for t in base])  # (S, vocab, d)
    w_u = torch.stack([t.W_U for t in base]).repeat(n_var, 1, 1)  # (N, d, vocab), N = var*seeds
    source = torch.stack([t.source for row in tasks for t in row])  # (N, h, T)

    def losses(tokens: torch.Tensor) -> list[torch.Tensor]:
        """Every run's loss on its seed's tokens (S, B, T)."""
        w_v = torch.cat([p[0] for p in params])  # (N, h, d, dh)
        w_o = torch.cat([p[1] for p in params])  # (N, h, dh, d)
        x = torch.stack([e[t] for e, t in zip(emb, tokens, strict=True)])  # (S, B, T, d)
        v = torch.einsum("nbtm,nhmd->nbhtd", x.repeat(n_var, 1, 1, 1), w_v)  # (N, B, h, T, dh)
        idx = source[:, None, :, :, None].expand(-1, tokens.shape[1], -1, -1, v.shape[-1])
        z = torch.gather(v, 3, idx).transpose(2, 3).flatten(-2)  # (N, B, T, h*dh)
        logits = (z.flatten(1, 2) @ w_o.flatten(1, 2)) @ w_u  # (N, B*T, vocab)
        logits = logits.unflatten(1, tokens.shape[1:])  # (N, B, T, vocab)
        target = tokens[:, :, :-1].repeat(n_var, 1, 1)  # (N, B, T-1)
        return [
            torch.nn.functional.cross_entropy(lg[:, 1:].flatten(0, 1), tg.flatten())
            for lg, tg in zip(logits, target, strict=True)
        ]

    def randint(shape: tuple[int, ...]) -> torch.Tensor:
        return torch.stack(
            [torch.randint(cfg.vocab, shape, generator=g, device=device) for g in gens]
        )  # (S, *shape)

    held_out = randint((4 * cfg.batch, cfg.seq_len))  # (S, 4B, T)
    with torch.no_grad():
        loss_init = [float(x) for x in losses(held_out)]
    for step in range(cfg.steps):
        if step and step % 50 == 0:  # a point where a cancelled run stops
            harness.progress(f"step {step}/{cfg.steps}")
        tokens = randint((cfg.batch, cfg.seq_len))  # (S, B, T)
        for opt in opts:
            opt.zero_grad(set_to_none=True)
        torch.stack(losses(tokens)).sum().backward()
        for opt in opts:
            opt.step()
    with torch.no_grad():
        loss_final = [float(x) for x in losses(held_out)]
    out = []
    for i, (w_v, w_o) in enumerate(params):
        row = []
        for j, task in enumerate(tasks[i]):
            n = i * n_seeds + j
            with torch.no_grad():
                final = ov_norms(w_v[j], w_o[j])  # (n_heads,)
            init = ov_norms(task.W_V, task.W_O)  # (n_heads,)
            row.append(Run(task.useful, init, final, loss_init[n], loss_final[n]))
        out.append(row)
    return out


def build(cfg: Config, device: torch.device, gen: torch.Generator) -> Setup:
    """Every row's trainings (the contrast's too) as two batched trainings: the weight-decay
    row and the contrast on the first n_seeds seeds, the control and AdamW on n_seeds_t."""
    seeds = _seeds(gen, max(cfg.n_seeds, cfg.n_seeds_t))  # the first n are a draw of n alone
    harness.progress(
        f"training {cfg.n_seeds} seeds x 2 rows and {cfg.n_seeds_t} seeds x 2 rows at once"
    )
    main, useful = train_batch(cfg, device, seeds[: cfg.n_seeds], [MAIN, ALL_USEFUL])
    control, adam = train_batch(cfg, device, seeds[: cfg.n_seeds_t], [CONTROL, ADAM])
    return Setup(cfg, main, control, adam, seeds, useful)


def counterexample(cfg: Config, device: torch.device, gen: torch.Generator) -> Setup:
    """No training at all (0 steps): no head's OV moves and the loss stays where it started."""
    return build(replace(cfg, steps=0), device, gen)


def _worst_noise(runs: list[Run]) -> tuple[float, list[float]]:
    per_seed = [float(r.growth[~r.useful].max()) for r in runs]
    return max(per_seed), per_seed


def _worst_useful(runs: list[Run]) -> tuple[float, list[float]]:
    per_seed = [float(r.growth[r.useful].min()) for r in runs]
    return min(per_seed), per_seed


def _spread(values: list[float]) -> str:
    return "per seed: " + ", ".join(f"{v:.3g}" for v in values)


def log_upper_bound(values: list[float]) -> float:
    """One-sided 95% Student-t upper bound of mean(log values) over seeds; +inf below 2 seeds."""
    n = len(values)
    if n < 2:
        return math.inf
    logs = [math.log(v) for v in values]
    mean = sum(logs) / n
    sd = math.sqrt(sum((x - mean) ** 2 for x in logs) / (n - 1))
    return mean + T95[min(n - 1, 30)] * sd / math.sqrt(n)


def _noise_check(runs: list[Run], label: str, every_seed: bool) -> Check:
    worst, noise_seeds = _worst_noise(runs)
    spread = _spread(noise_seeds)
    if every_seed:
        return Check(
            f"{label}: largest noise-head ||OV|| / its initial value, over {len(runs)} seeds "
            f"({spread})",
            worst,
            f"< {NOISE_BAR:g}",
            worst < NOISE_BAR,
            "a noise head's write is independent of the target, so the loss gradient pulls its "
            "OV circuit towards 0; if it grew, something other than the loss drove it",
            MEASUREMENT,
        )
    bound = log_upper_bound(noise_seeds)
    return Check(
        f"{label}: 95% one-sided t upper bound over {len(runs)} seeds of log(largest noise-head "
        f"||OV|| / initial) ({spread}; bound as a ratio {math.exp(min(bound, 50.0)):.3g}x)",
        bound,
        f"< {NOISE_LOG_BAR:g}",
        bound < NOISE_LOG_BAR,
        "the noise heads shrink seed to seed only if the interval over seeds of the worst "
        "noise head's log growth excludes 0 (no change); if not, the shrinkage is not "
        "distinguishable from seed-to-seed noise (Adam's normalised steps random-walk weights "
        "whose gradient is mostly noise)",
        MEASUREMENT,
    )


def _claim_checks(runs: list[Run], label: str, every_seed: bool = True) -> list[Check]:
    """The noise, useful and loss checks over seeds. every_seed: the largest noise-head growth
    of every seed must be below NOISE_BAR; otherwise the t bound over seeds of its log (BARS.md)."""
    useful, useful_seeds = _worst_useful(runs)
    loss = max(r.loss_final / r.loss_init for r in runs)
    return [
        _noise_check(runs, label, every_seed),
        Check(
            f"{label}: smallest useful-head ||OV|| / its initial value, over {len(runs)} seeds "
            f"({_spread(useful_seeds)})",
            useful,
            f"> {USEFUL_BAR:g}",
            useful > USEFUL_BAR,
            "the heads that read the predictive token should grow their OV circuit to raise the "
            "right logit",
            MEASUREMENT,
        ),
        harness.at_most(
            f"{label}: largest held-out loss after / before, over {len(runs)} seeds",
            loss,
            LOSS_BAR,
            "if the loss did not fall, W_V and W_O did not learn the task and the norms mean "
            "nothing",
            kind=SANITY,
            bar="training worked: a precondition for the two checks above, not a claim (any "
            "trainable layer's loss falls on a learnable task)",
        ),
    ]


def check(setup: Setup) -> list[Check]:
    cfg = setup.cfg
    return (
        _claim_checks(setup.runs, f"SGD, weight decay {cfg.weight_decay:g}")
        + _claim_checks(setup.control, "SGD, weight decay 0 (control)", every_seed=False)
        + _claim_checks(
            setup.adam, f"AdamW lr {cfg.adam_lr:g}, weight decay {cfg.weight_decay:g}", False
        )
    )


def contrast(setup: Setup, gen: torch.Generator) -> list[Check]:
    """The same training (SGD with weight decay) when heads n_useful.. read the predictive token."""
    cfg = setup.cfg
    runs = setup.all_useful  # trained in `build`, in the same batch as the claim's runs
    smallest = min(float(r.growth[cfg.n_useful :].min()) for r in runs)
    return [
        harness.at_least(
            f"all heads useful: smallest ||OV|| / initial of heads {cfg.n_useful}.."
            f"{cfg.n_heads - 1}, over {len(runs)} seeds",
            smallest,
            1.0,
            "heads that read the predictive token should grow like the useful ones",
            kind=MEASUREMENT,
        )
    ]


def notes(cfg: Config) -> list[str]:
    return [
        f"Task: predict token t-1. Heads 0..{cfg.n_useful - 1} attend to t-1, the other "
        f"{cfg.n_heads - cfg.n_useful} to fixed random other positions. W_V and W_O train "
        f"together (SGD, momentum 0.9, lr {cfg.lr:g}, {cfg.steps} steps of batch {cfg.batch}); "
        "embedding and unembedding are frozen.",
        f"{cfg.n_seeds} seeds, each its own task and initialisation; every noise head of every "
        "seed must end below its own starting OV norm and every useful head above.",
        f"What weight decay adds: with it ({cfg.weight_decay:g}) every noise head of every seed "
        "shrank (30 of 30 seeds in a 30-seed sweep, worst 0.24x); without it 1 of 30 seeds had a "
        "noise head end at 1.01x, and AdamW 4 of 30 (worst 1.16x). Those two rows claim less "
        "(pre-registered in demos/BARS.md): the 95% one-sided t upper bound over seeds of "
        "log(largest noise-head growth) must be below 0. At 5 seeds that passed by luck: "
        "--seed 0..9 gave the control 8 of 10, AdamW 6 of 10. The seed count was then argued "
        "before a run (demos/BARS.md, audit12): an 80-seed pilot's bootstrap pass rate >= 0.95 "
        f"needs {cfg.n_seeds_t} seeds (AdamW 0.984; 0.946 at 15), so those two rows run at "
        f"{cfg.n_seeds_t}. Validation fixed before it ran, --seed 10..19 at 20 seeds: the "
        "control passed 10 of 10 (bound at most 0.889x), AdamW 10 of 10 (at most 0.923x).",
        "Scope: the toy fixes attention patterns and trains only W_V and W_O; in a real model "
        "attention also trains, and a large lr with a small initial OV can let Adam's "
        "per-weight steps outrun the loss's pull on a useless head.",
    ]


def warm() -> None:
    """The worker's warm-up: what the first training step imports (torch.optim's torch._dynamo)."""
    warm_optimizers()


def run(scale: str = "small", device: str | DeviceChoice = "cpu", seed: int = 0) -> Report:
    return harness.run_module(__name__, scale, device, seed)
