"""Random model specs for tests (every architecture option, seeded), and the helpers tests share."""

from __future__ import annotations

import itertools
from dataclasses import replace

import numpy as np

from satsim.model.spec import (
    AttentionSpec,
    BlockSpec,
    FeedForwardSpec,
    LayerNormSpec,
    ModelSpec,
    OutputSpec,
    PositionalSpec,
)


def random_layer_norm(rng, d, dtype, affine, kind="layer"):
    if not affine:
        return LayerNormSpec(eps=1e-5, kind=kind)
    w = (1 + 0.1 * rng.standard_normal(d)).astype(dtype)
    b = (0.1 * rng.standard_normal(d)).astype(dtype)
    return LayerNormSpec(w=w, b=b if kind == "layer" else None, kind=kind)


def random_spec(
    seed: int = 0,
    *,
    d_model: int = 8,
    n_layers: int = 2,
    n_heads: int = 2,
    d_head: int = 4,
    d_mlp: int = 6,
    norm: str = "post",
    residual: bool = True,
    biases: bool = True,
    affine: bool = True,
    causal: bool = True,
    mask: str | None = None,
    positional: str = "learned",
    task: str = "recognition",
    dtype=np.float64,
    n_ctx: int = 64,
    activation: str = "relu",
    norm_kind: str = "layer",
    scale: float | None = None,
    parallel: bool = False,
) -> ModelSpec:
    """A random model over the alphabet 'ab' with BOS, with the chosen architecture.

    ``mask`` names every head's attention mask, or "per-head" for a random mask per head
    (default: from ``causal``).
    """
    from satsim.model.masks import MASKS, mask_of

    rng = np.random.default_rng(seed)

    def w(*shape, scale=1.0):
        return (scale * rng.standard_normal(shape) / np.sqrt(shape[-2] if len(shape) > 1 else 1)
                ).astype(dtype)

    def b(*shape):
        return (0.3 * rng.standard_normal(shape)).astype(dtype) if biases else None

    blocks = []
    for _ in range(n_layers):
        attn = AttentionSpec(
            W_Q=w(n_heads, d_model, d_head, scale=2.0), W_K=w(n_heads, d_model, d_head, scale=2.0),
            W_V=w(n_heads, d_model, d_head), W_O=w(n_heads, d_head, d_model),
            b_Q=b(n_heads, d_head), b_K=b(n_heads, d_head), b_V=b(n_heads, d_head), b_O=b(d_model),
            mask=(tuple(str(m) for m in rng.choice(MASKS, n_heads)) if mask == "per-head"
                  else mask or mask_of(causal)), scale=scale,
        )
        mlp = FeedForwardSpec(W_in=w(d_model, d_mlp), W_out=w(d_mlp, d_model), b_in=b(d_mlp),
                              b_out=b(d_model), activation=activation)
        ln1 = (random_layer_norm(rng, d_model, dtype, affine, norm_kind) if norm != "none"
               else None)
        ln2 = (random_layer_norm(rng, d_model, dtype, affine, norm_kind) if norm != "none"
               else None)
        blocks.append(BlockSpec(attn=attn, mlp=mlp, ln1=ln1, ln2=ln2))
    pos = {
        "none": PositionalSpec(),
        "learned": PositionalSpec("learned", W_pos=w(n_ctx, d_model)),
        "sinusoidal": PositionalSpec("sinusoidal"),
        "features": PositionalSpec("features", features=("1/i", "i/n", "(-1)^i"),
                                   W_feat=w(3, d_model)),
    }[positional]
    labels = ("accept",) if task == "recognition" else ("a", "b", "<eos>")
    readout = "last" if task == "recognition" else "per-position"
    return ModelSpec(
        vocab=("<bos>", "a", "b"),
        W_E=w(3, d_model, scale=3.0),
        blocks=tuple(blocks),
        output=OutputSpec(W_U=w(d_model, len(labels)), b_U=b(len(labels)), labels=labels,
                          task=task, readout=readout),
        positional=pos,
        norm=norm,
        residual=residual,
        ln_final=(random_layer_norm(rng, d_model, dtype, affine, norm_kind) if norm == "pre"
                  else None),
        parallel=parallel,
        bos="<bos>",
        name=f"random-{seed}",
    )


def run_satsim(*args: str, stdin: str | None = None):
    """Run the satsim entry point in a fresh process, as a user would (a CompletedProcess)."""
    import subprocess
    import sys

    code = ("import sys; from satsim.cli.main import main; "
            "sys.argv = ['satsim', *sys.argv[1:]]; main()")
    return subprocess.run([sys.executable, "-c", code, *args], input=stdin, capture_output=True,
                          text=True, timeout=600)


def invoke_satsim(*args: str, stdin: str | None = None):
    """Run the satsim entry point in this process, its streams captured (a CompletedProcess).

    The path of ``run_satsim`` (``satsim.cli.main.main``: one-line errors, exit codes) without
    a new interpreter: for what a command says and does, not for the process itself (a closed
    stream, a signal, a resource limit, a cold kernel cache), which stays with ``run_satsim``.
    """
    import subprocess
    import sys

    from click.testing import CliRunner

    from satsim.cli.main import main

    with CliRunner().isolation(input=stdin) as (out, err, _):
        try:
            main(list(args))
            code = 0
        except SystemExit as exit_:
            code = exit_.code if isinstance(exit_.code, int) else int(exit_.code is not None)
        sys.stdout.flush()  # what print() left in the buffers
        sys.stderr.flush()
        stdout, stderr = (stream.getvalue().decode("utf-8", "replace") for stream in (out, err))
    return subprocess.CompletedProcess(["satsim", *args], code, stdout, stderr)


def file_size_limit(limit: int):
    """A ``preexec_fn``: the process may not write a file past ``limit`` bytes (a full disk).

    Python ignores SIGXFSZ, so the write that crosses the limit fails with EFBIG, as a write
    to a full disk fails with ENOSPC: a fault any user can inject, without mounting anything.
    """
    import resource

    return lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))


def architectures(**extra):
    """A hypothesis strategy of random_spec keyword arguments: every architecture option."""
    import numpy as np
    from hypothesis import strategies as st

    return st.fixed_dictionaries({
        "norm": st.sampled_from(["none", "pre", "post"]),
        "residual": st.booleans(),
        "biases": st.booleans(),
        "affine": st.booleans(),
        "mask": st.sampled_from(["causal", "bidirectional", "strict-past", "future",
                                 "strict-future", "per-head"]),
        "positional": st.sampled_from(["none", "learned", "sinusoidal", "features"]),
        "dtype": st.sampled_from([np.float32, np.float64]),
        **extra,
    })


def zero_query(spec, layer: int = -1):
    """The spec with W_Q = 0 and b_Q = 1 in block ``layer``: its keys tie at the top degree, and
    the bias (a lower degree under scaling) splits them."""
    blocks = list(spec.blocks)
    attn = blocks[layer].attn
    b_q = np.ones((attn.n_heads, attn.d_head), attn.W_Q.dtype)  # the spec's dtype, one for all
    blocks[layer] = replace(blocks[layer], attn=replace(attn, W_Q=np.zeros_like(attn.W_Q), b_Q=b_q))
    return replace(spec, blocks=tuple(blocks))


def set_options(settings: dict, leave_out: tuple[str, ...] = ()) -> list[str]:
    """``--set KEY=VALUE`` for each setting, less ``leave_out`` and the empty ones (an empty
    setting is its default, and satsim refuses an empty value given on the command line)."""
    return [f"--set={k}={v}" for k, v in settings.items() if k not in leave_out and v != ""]


def stack_sizes(monkeypatch) -> list[int]:
    """The sizes of the stacks that satsim.training.group.train_group trains, as they start."""
    from satsim.training import group as group_module

    stacks: list[int] = []
    real = group_module.train_group

    def spy(configs, runs, **options):
        stacks.append(len(configs))
        return real(configs, runs, **options)

    monkeypatch.setattr(group_module, "train_group", spy)
    return stacks


def leaf_commands(group=None, prefix: tuple[str, ...] = ()):
    """(words that name it, command) for every satsim command, inside groups too (benchmark
    flare)."""
    import click

    from satsim.cli.main import cli

    for name, command in sorted((group or cli).commands.items()):
        if isinstance(command, click.Group):
            yield from leaf_commands(command, (*prefix, name))
        else:
            yield (*prefix, name), command


def every_string(alphabet, max_len: int) -> list[str]:
    """Every string of length 0..max_len over ``alphabet``, shortest first (a brute-force set)."""
    return ["".join(t) for n in range(max_len + 1) for t in itertools.product(alphabet, repeat=n)]
