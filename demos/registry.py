"""The demos: name, module and the one-sentence claim each one checks.

Imported by `prep check`, `prep demo --list` and the TUI, so it must stay torch-free: it only names
modules, it never imports them (tests/test_demos_cli.py checks this in a subprocess).
"""

from __future__ import annotations

import ast
import importlib.util
from dataclasses import dataclass


@dataclass(frozen=True)
class DemoInfo:
    """One demo: its name, module, claim and where its weights come from."""

    name: str  # the CLI name, e.g. "block-diagonal"
    module: str  # dotted path of the module with run(scale, device, seed) -> Report
    claim: str  # one sentence; the demo's checks measure exactly this
    weights: str = "synthetic"  # one of WEIGHTS: where the weights it measures come from


# synthetic: random or hand-built weights; trained-here: trained by this project (the shipped
# decoder, or a model the demo trains as it runs); pretrained: a real published checkpoint.
WEIGHTS = ("synthetic", "trained-here", "pretrained")


# The demos are grouped by the evidence they rest on: demos/pretrained/ (a published checkpoint),
# demos/decoder/ (the shipped decoder, trained here), demos/synthetic/ (the rest: random or
# hand-built weights, or a small model the demo trains as it runs).
_DECODER_DEMOS = {"cross-head-mixing", "dla", "induction", "no-wo", "ov-copying", "ov-rank"}


def _folder(name: str, weights: str) -> str:
    if weights == "pretrained":
        return "pretrained"
    return "decoder" if name in _DECODER_DEMOS else "synthetic"


def _info(name: str, claim: str, weights: str = "synthetic") -> DemoInfo:
    assert weights in WEIGHTS, weights
    module = f"prep.demos.{_folder(name, weights)}." + name.replace("-", "_")
    return DemoInfo(name=name, module=module, claim=claim, weights=weights)


_ALL = [
    _info(
        "block-diagonal",
        "With a block-diagonal W_O each head writes only inside its own d_head-wide slice of the "
        "residual stream (exactly 0.0 everywhere else), W_O holds d_model^2/n_heads nonzero "
        "parameters, different heads' write subspaces are orthogonal, and each diagonal block can"
        " be absorbed into W_V^h; trained to imitate a layer whose W_O mixes heads, a block-"
        "diagonal student's error in every seed is above its error in every seed on the same "
        "teacher with a block-diagonal W_O (the same-run null), and a dense student gets close.",
        weights="trained-here",
    ),
    _info(
        "no-wo",
        "Without W_O the attention sub-layer's output is the concat itself, so its Jacobian with "
        "respect to head i's output is zero outside slice i; an identity W_O changes nothing and "
        "a permutation W_O only moves where each head's coordinates land, while a dense W_O puts "
        "at least half of every head's squared norm outside its own slice (the shipped decoder's "
        "trained W_O as much as its initialisation: a sanity check, not evidence of training).",
        weights="trained-here",
    ),
    _info(
        "per-head-sum",
        "concat(heads) @ W_O equals the sum over heads of head_h @ W_O[h] when W_O is stored as "
        "[n_heads, d_head, d_model] and flattened head-major to (n_heads*d_head, d_model).",
    ),
    _info(
        "cross-head-mixing",
        "A dense W_O can give two heads a shared write direction (largest principal cosine 1, "
        "which needs a singular W_O) along which their contributions add, while no W_O or a "
        "block-diagonal W_O gives exactly 0 for every pair; random dense and the shipped "
        "decoder's trained W_O overlap every pair of heads partially (cosines strictly between 0 "
        "and 1, as any dense W_O at initialisation does: sanity checks), and without W_O a reader direction still sums every head's contribution.",
        weights="trained-here",
    ),
    _info(
        "head-weighting",
        "Scaling head i's W_O block by a scales only head i's write by a, a = 0 matches the layer"
        " with head i removed, zeroing the block and adding mean(z_i) W_O^i to the output bias "
        "matches mean-ablation, and scaling W_V^i by a gives the same output, so per-head "
        "weighting does not need W_O; what it cannot give is mixing: the best block-diagonal map "
        "(least squares per head) misses a dense W_O layer's output by at least half its norm.",
    ),
    _info(
        "importance-reparam",
        "Scaling W_V^h by c and W_O^h by 1/c leaves the layer's output unchanged but divides head "
        "h's W_O column-norm 'importance' by c, while the OV-circuit norm ||W_V^h W_O^h||_F stays "
        "the same, so the norm of a head's W_O block alone does not measure how much it matters.",
    ),
    _info(
        "ov-rank",
        "Each head's OV circuit W_V^h W_O^h is a d_model x d_model matrix of rank at most d_head "
        "= d_model/n_heads, while a generic d_model x d_model matrix has full rank d_model; in "
        "the shipped decoder every trained head's OV has rank exactly d_head and each layer's "
        "summed OV has rank d_model (sanity checks: any weights of these shapes show it).",
        weights="trained-here",
    ),
    _info(
        "fold-wo",
        "W_O can be folded into per-head value projections W_V^h W_O^h with the same output up "
        "to float rounding, at the cost of n_heads*d_model^2 parameters instead of 2*d_model^2, "
        "but not into the next layer's projections, which read LayerNorm(residual + attention "
        "output) where only the attention output went through W_O.",
    ),
    _info(
        "learned-suppression",
        "Training W_V and W_O together (SGD with weight decay) on an attention layer whose heads "
        "have fixed attention patterns leaves every noise head's OV norm ||W_V^h W_O^h|| below "
        "its own starting value and every useful head's above it, in each of 5 seeds; without "
        "weight decay, or with AdamW, the useful heads still grow in every seed and the worst "
        "noise head's log growth has a 95% upper bound over seeds below 0 (not every seed; "
        "at 5 seeds this holds at --seed 0 but not on every draw: 8 and 6 of --seed 0..9).",
        weights="trained-here",
    ),
    _info(
        "dla",
        "In the shipped decoder (no LayerNorm) the logits are exactly the sum of the direct path, "
        "each head's z_h W_O^h W_U and the biases, and with a final LayerNorm too once each part "
        "is centred and divided by the frozen sigma; at each of three seeds the layer-0 head whose "
        "ablation costs most has a direct attribution of at most a quarter of its effect (it "
        "works through layer 1), "
        "and under a final LayerNorm (added to the decoder, which was trained without one) "
        "frozen-scale attribution overstates what removing a "
        "layer-1 head does (LayerNorm recomputed): over three seeds, the least overstated head's "
        "95% interval lies beyond every disagreement the same heads show without a LayerNorm.",
        weights="trained-here",
    ),
    _info(
        "induction",
        "The shipped 2-layer attention-only decoder, trained here at three seeds on repeated "
        "random chunks, copies in context mainly through Q-composition, in every seed: a layer-0 "
        "duplicate-token head (at least half its attention on the current token's earlier "
        "occurrence) feeds the queries of layer-1 induction heads (at least half their attention "
        "on the token after it) with a Q-composition above every shuffled-weight score; removing "
        "that head's write from layer 1's queries alone costs at least 0.2 of in-context "
        "accuracy, and removing all of layer 0's writes from them at least 0.2 too, "
        "more than removing them from its keys and its values together and more than half of "
        "removing them from all three paths, from its values alone less than 0.2; "
        "the induction heads are redundant (together they cost at least 0.2, and more than "
        "their single-head drops added up).",
        weights="trained-here",
    ),
    _info(
        "ov-copying",
        "In the shipped decoder, at each of its three training seeds, the layer-1 head with the "
        "most induction attention has a copying full OV circuit W_E W_V^h W_O^h W_U: at least 3/4 "
        "of its eigenvalues have positive real part, sum(lambda)/sum(|lambda|) is at least 0.5 "
        "and more tokens raise their own logit most than in any of 1000 copies of the same "
        "circuit with its output tokens relabelled, while random weights stay below each of "
        "these bars on average.",
        weights="trained-here",
    ),
    _info(
        "param-share",
        "Counted with numel() on real bias-free nn.Linear layers, W_O holds d_model^2 weights "
        "whether the layer uses MHA, MQA or GQA, which makes it 1/(2 + 2*n_kv_heads/n_heads) of "
        "the attention weights (1/4 for MHA, 16/33 for MQA and 2/5 for GQA with 8 KV heads, at "
        "32 heads) and 1/12 of an MHA layer with a 4*d_model FFN, while a block-diagonal W_O has "
        "d_model^2/n_heads nonzeros and folding into per-head W_V^h W_O^h takes n_heads*d_model^2 "
        "weights instead of 2*d_model^2.",
    ),
    _info(
        "tensor-parallel",
        "Sharding the heads across processes (W_Q, W_K, W_V split by columns, W_O split by input "
        "rows, the output bias added on one rank) and summing the ranks' partial writes with one "
        "torch.distributed all-reduce gives the single-process layer's output up to float "
        "rounding, while one rank's partial write alone does not.",
    ),
    _info(
        "mla-absorb",
        "In multi-head latent attention the value up-projection W_UV^h folds into W_O^h and the "
        "key up-projection W_UK^h into the query, so attention can run on the cached latent "
        "alone with the same output up to float rounding; the cache holds d_c numbers per token "
        "instead of 2*n_heads*d_head, and a decode step is faster than up-projecting the "
        "cached latents every step, while with RoPE on the keys the key absorption breaks.",
    ),
    _info(
        "fold-bias-ln",
        "Because every attention row sums to 1, a value bias b_V^h passes through attention "
        "unchanged and folds into the output bias as b_O + sum_h b_V^h W_O^h, and a LayerNorm's "
        "gain and bias fold into the next projection (diag(gamma) W_Q, beta W_Q + b_Q), both "
        "with the same output up to float rounding, while with attention weights that do not sum "
        "to 1 (sigmoid attention, or a gate after attention) the bias fold fails.",
    ),
    _info(
        "scale-migration",
        "Dividing value channels by per-channel scales s (W_V diag(s)^-1) and multiplying the "
        "matching rows of W_O by s leaves the layer's output unchanged up to float rounding, "
        "while the per-channel ranges of W_O's input change: with SmoothQuant's s the outlier "
        "channels shrink and an 8-bit quantised W_O matmul loses less accuracy; through a GELU "
        "the same migration changes the output.",
    ),
    _info(
        "lora-wo",
        "A LoRA update on the output projection, W_O + (alpha/r) B A, gives the same output merged "
        "into the weight as applied beside it, is exactly zero at initialisation (B = 0), has "
        "rank r, and confines every head's change of write to the same r-dimensional subspace, "
        "with r*(d_in + d_out) trainable parameters instead of d_model^2.",
    ),
    _info(
        "residual-growth",
        "In a pre-LN stack at GPT-2's 0.02 initialisation the variance the blocks add to the "
        "residual stream grows about linearly with depth, while scaling the residual-output "
        "projections (W_O and the MLP's output) by 1/sqrt(N) keeps the added variance roughly "
        "independent of depth, and zero-initialised output projections leave the residual stream "
        "exactly equal to the embedding.",
    ),
    _info(
        "mha-code",
        "The live-coding answer (multi-head attention by hand: split, transpose, attend, "
        "transpose back, .contiguous().view, o_proj) equals scaled_dot_product_attention plus "
        "out_proj and nn.MultiheadAttention with the same weights; FlopCounterMode counts "
        "2*B*T*d_model^2 FLOPs for o_proj and B*T*(8*d_model^2 + 4*T*d_model) for the forward; "
        "o_proj's weight gradient is delta^T concat; a head's attention logits have rank at most "
        "d_head; viewing before transposing back is wrong.",
    ),
    _info(
        "sequence-parallel",
        "Replacing the all-reduce after row-parallel W_O by a reduce-scatter along the sequence "
        "(then the residual add and LayerNorm on each rank's own tokens) and an all-gather gives "
        "the single-process output on every rank, with each rank holding only T/world_size "
        "tokens of the norm region's activations.",
    ),
]

_ALL += [
    _info(
        "real-block-structure",
        "In a real pretrained model (all-MiniLM-L6-v2 unless --model names another) trained W_O "
        "is dense, its diagonal d_head blocks holding a share of its squared norm inside a "
        "column-permutation null around 1/n_heads in every layer, and heads' write subspaces "
        "overlap more than redraws that keep each layer's W_O Gram exactly and split it among "
        "the heads at random (Fisher's combination over the layers): heads share write "
        "directions with each other beyond the layer's anisotropy. Weighted by how strongly "
        "each direction is written (the cosine between two heads' write Grams), the mean over "
        "head pairs is less than fresh redraws give (a lower-tail test of its own): heads avoid "
        "each other's most strongly written directions, while each layer's most-overlapping "
        "pair stands out beyond every redraw.",
        weights="pretrained",
    ),
    _info(
        "real-importance",
        "In a real pretrained model the activation-aware score (mean norm of z_h W_O^h) ranks a "
        "layer's heads by how much zero-ablating them changes the last hidden state (nearly "
        "built in: that change starts as the very vector it measures) far better than by what "
        "they do for the model's job, the drop of the paraphrase-retrieval margin, in every "
        "layer (the bootstrap interval of the difference above 0); a rescaling of W_V^h, b_V^h by "
        "c_h and W_O^h by 1/c_h leaves the outputs unchanged in float64 while reversing the "
        "W_O-norm ranking.",
        weights="pretrained",
    ),
    _info(
        "real-ov-rank",
        "In a real pretrained model every head's OV circuit W_V^h W_O^h has rank exactly d_head, "
        "and its effective rank (singular values holding 90% of the squared mass) is reported "
        "per head (sanity checks: any weights of this shape have full rank).",
        weights="pretrained",
    ),
    _info(
        "real-per-head-sum",
        "On every layer of a real pretrained model, the sum over heads of z_h W_O^h plus b_O, "
        "with z recomputed from the checkpoint's own W_Q, W_K, W_V, equals the library's "
        "attention output in float64 (max |diff| <= 1e-10).",
        weights="pretrained",
    ),
]

DEMOS: dict[str, DemoInfo] = {info.name: info for info in _ALL}


def names() -> list[str]:
    """Every demo name, in the stable order of `prep demo --list`."""
    return list(DEMOS)


def check_kinds(name: str) -> dict[str, int] | None:
    """The demo module's declared CHECK_KINDS ({"identity": n, "sanity": s, "measurement": m}),
    or None.

    Read from the module's source without importing it (an import would load torch):
    `prep demo --list` stays torch-free. tests/test_demos.py and tests/test_real_demos.py hold
    each declaration equal to what a small run produces (checks and contrast together). For the
    real-weight demos the counts are those of the shipped all-MiniLM-L6-v2 (they grow with
    --model's layers).
    """
    spec = importlib.util.find_spec(DEMOS[name].module)
    if spec is None or spec.origin is None:
        return None
    with open(spec.origin, encoding="utf-8") as f:
        tree = ast.parse(f.read(), spec.origin)
    for node in tree.body:
        if (
            isinstance(node, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id == "CHECK_KINDS" for t in node.targets)
            and isinstance(node.value, ast.Dict)
        ):
            out: dict[str, int] = {}
            for key, value in zip(node.value.keys, node.value.values, strict=True):
                assert key is not None  # (no ``**mapping`` in the counts)
                kind = key.id.lower() if isinstance(key, ast.Name) else ast.literal_eval(key)
                out[str(kind)] = int(ast.literal_eval(value))
            return {kind: out.get(kind, 0) for kind in ("identity", "sanity", "measurement")}
    return None
