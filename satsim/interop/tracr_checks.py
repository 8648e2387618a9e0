"""An imported tracr model proves itself: the ties its dtype can hold, tracr's run beside satsim's.

**Rounding.** tracr's MLPs sum terms as large as ``mlp_exactness`` times their inputs to outputs
of order 1, and its query weights (the softmax coldness, 100) magnify whatever noise the streams
they read carry. :func:`rounding` measures that noise in a narrower dtype on the probe: every
sublayer runs in that dtype on its float64 input, beside its float64 run, and the differences add
up along the residual (through the values, and into the scores through |W_Q| and |W_K|).

**Ties.** Saturated attention averages the keys whose scores lie within the tie tolerance
(atol + rtol·|max|) of the largest. In float32, an import is kept only if on the probe every tie
of the float64 run stays within float32's tolerance, and every other key outside it, once the
scores move by twice their measured noise (:func:`check_ties`); otherwise it is refused, with the
numbers. float64 is the reference.

**tracr's own run.** :func:`check_against_tracr` runs the probe through ``assembled.apply``'s
steps (:func:`run_tracr`; BOS first, as tracr takes it) and through satsim's softmax at β = 1
(tracr's own attention on the same weights), and compares every residual stream (tracr computes
in float32: the tolerance is ``TRACR_FACTOR`` times float32's noise on it) and the decoded
outputs, which also shows a ``program`` that is not the one compiled.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from satsim.engine.batch import (
    BatchRun,
    LayerTrace,
    apply_attention,
    apply_feed_forward,
    forward_batch,
)
from satsim.errors import SatsimError
from satsim.interop.probe import probe_lengths, probe_tokens
from satsim.model.architecture import steps
from satsim.model.encoding import embed_batch, encode_batch
from satsim.model.masks import head_allowed
from satsim.model.readout import decode
from satsim.model.settings import AttentionSettings, default_tolerance
from satsim.model.spec import AttentionSpec, ModelSpec
from satsim.reference.attention import tie_threshold

TRACR_FACTOR = 64.0
"""Measured float32 noise (per stream and direction) allowed between tracr and satsim."""


def probe_inputs(spec: ModelSpec) -> list[list[str]]:
    """The probe's inputs (tokens without BOS): random symbols, lengths up to max_seq_len."""
    longest = spec.positional.W_pos.shape[0] - 1  # position 0 is BOS's
    causal = all(block.attn.mask == "causal" for block in spec.blocks)
    sequences = probe_tokens(len(spec.alphabet), probe_lengths(longest, causal))
    return [[spec.alphabet[i] for i in sequence] for sequence in sequences]


def _ids(spec: ModelSpec, inputs: list[list[str]]) -> list[np.ndarray]:
    return encode_batch(spec, inputs)


def run(spec: ModelSpec, inputs: list[list[str]], kind: str) -> BatchRun:
    """The spec's run of the inputs with ``kind`` attention (β = 1), residuals and traces kept."""
    return forward_batch(spec, _ids(spec, inputs), AttentionSettings(kind, beta=1.0), trace=True)


def _largest(values: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """The largest magnitude of each direction (last axis) over the real positions."""
    return np.abs(values[mask]).max(axis=0)


def _scores(trace: LayerTrace, attn: AttentionSpec, mask: np.ndarray) -> np.ndarray:
    """One attention layer's scores (B, H, T, T) in float64, −∞ where a key is not allowed."""
    q, k = trace.queries.astype(np.float64), trace.keys.astype(np.float64)
    scores = attn.score_scale * np.einsum("bhtc,bhsc->bhts", q, k)
    allowed = (mask[:, None, None, :] & mask[:, None, :, None]
               & head_allowed(attn.head_masks, scores.shape[-1])[None])
    return np.where(allowed, scores, -np.inf)


@dataclass(frozen=True)
class Rounding:
    """A float64 run of the probe, and how far rounding in a narrower dtype moves it.

    ``streams``: per stream (the embedding, then after every sublayer), per residual direction,
    the noise it carries; ``scores``: per attention layer, its float64 scores and, per head, how
    far they move; ``layers``: the block of each attention layer.
    """

    reference: BatchRun
    mask: np.ndarray
    streams: list[np.ndarray]
    scores: list[tuple[np.ndarray, np.ndarray]]
    layers: list[int]


def rounding(spec: ModelSpec, inputs: list[list[str]], kind: str, dtype: Any) -> Rounding:
    """The rounding noise of ``dtype`` on the probe, measured sublayer by sublayer.

    ``spec`` is float64. Each sublayer runs in ``dtype`` on its float64 input (rounded), beside
    its float64 run; the difference is the noise it adds. The noise adds up along the residual,
    and the noise a stream brings into an attention layer moves its queries and keys (through
    |W_Q|, |W_K|), hence its scores, and reaches its output through the values (and, under
    softmax, through the moved scores). A ReLU MLP is not differentiated through: tracr's MLPs
    are flat where they are exact, and the rounding of their input is in their own measurement.
    """
    settings = AttentionSettings(kind, beta=1.0)
    ids = _ids(spec, inputs)
    reference = forward_batch(spec, ids, settings, trace=True)
    narrow = spec.astype(dtype)
    x, mask = embed_batch(narrow, ids)
    noise = _largest(x - reference.residuals[0], mask)
    streams, scores, layers = [noise], [], []
    traces = iter(reference.layers)
    for index, step in enumerate(steps(narrow)):
        before, after = reference.residuals[index], reference.residuals[index + 1]
        x = before.astype(dtype)
        (branch,) = step.branches
        module = branch.module
        carried = np.zeros_like(noise)
        if branch.kind == "attn":
            out, trace = apply_attention(x, mask, module, settings)
            exact = next(traces)
            s = _scores(exact, module, mask)
            with np.errstate(invalid="ignore"):  # −∞ − (−∞) where a key is not allowed
                local = np.where(np.isfinite(s), np.abs(_scores(trace, module, mask) - s), 0)
            moved = local.max(axis=(0, 2, 3))
            for h in range(module.n_heads):
                dq, dk = noise @ np.abs(module.W_Q[h]), noise @ np.abs(module.W_K[h])
                q = _largest(exact.queries[:, h], mask)
                k = _largest(exact.keys[:, h], mask)
                shift = abs(module.score_scale) * (dq @ k + q @ dk)
                moved[h] += shift
                values = noise @ np.abs(module.W_V[h])
                if kind == "softmax":
                    values = values + 2 * shift * _largest(exact.head_outputs[:, h], mask)
                carried += values @ np.abs(module.W_O[h])
            scores.append((s, moved))
            layers.append(branch.layer)
        else:
            out = apply_feed_forward(x, module)
        noise = noise + carried + _largest(x + out - after, mask)
        streams.append(noise)
    return Rounding(reference, mask, streams, scores, layers)


def check_ties(spec: ModelSpec, dtype: Any, inputs: list[list[str]], name: str) -> None:
    """Raise a one-line SatsimError unless ``dtype`` keeps the float64 run's tie sets.

    ``spec`` is float64. On the probe's saturated run, every tie (within float64's tolerance)
    must stay within ``dtype``'s tie tolerance, and every other key outside it, when the scores
    move by twice their rounding noise in ``dtype``.
    """
    dtype = np.dtype(dtype)
    if dtype == np.float64:
        return  # the reference: its own rounding is what the float64 run is
    atol, rtol = default_tolerance(dtype)
    exact_atol, exact_rtol = default_tolerance(np.float64)
    found = rounding(spec, inputs, "saturated", dtype)
    for layer, (scores, moved) in zip(found.layers, found.scores):
        top = scores.max(axis=-1, keepdims=True)  # (B, H, T, 1); −∞ at padded queries
        with np.errstate(invalid="ignore"):
            tied = scores >= tie_threshold(top, exact_atol, exact_rtol)  # the reference's set
            spread = np.where(tied, top - scores, 0).max(axis=-1)  # (B, H, T)
            gap = top[..., 0] - np.where(tied, -np.inf, scores).max(axis=-1)
        allowed = atol + rtol * np.abs(top[..., 0])
        margin = 2 * moved[None, :, None]
        bad = ((spread + margin > allowed) | (gap - margin <= allowed)) & found.mask[:, None, :]
        if bad.any():
            row, head, query = (int(i) for i in np.argwhere(bad)[0])
            raise SatsimError(
                f"{dtype} cannot hold the ties of tracr model {name!r}: rounding in {dtype} "
                f"moves layer {layer} head {head}'s scores by up to {moved[head]:.2g}, against "
                f"a tie tolerance of {allowed[row, head, query]:.2g} and a gap of "
                f"{gap[row, head, query]:.3g} to the next key; import in float64 (the default)")


def _reads_as(logits: np.ndarray, expected: object, labels: tuple[str, ...], numerical: bool,
              limit: float) -> bool:
    """Whether one position's logits read as tracr's output, up to ``limit`` of rounding."""
    if numerical:
        return expected is not None and abs(float(logits[0]) - float(expected)) <= limit
    return str(expected) in labels and (
        logits[labels.index(str(expected))] >= logits.max() - limit)


@dataclass(frozen=True)
class TracrRun:
    """What ``assembled.apply`` returns that the check reads, for one input."""

    decoded: list
    streams: list[np.ndarray]  # (1, n, d) float32: the embedding, then every residual


def run_tracr(assembled: Any, tokens: list) -> TracrRun:
    """``assembled.apply`` as tracr writes it, with its forward compiled by ``jax.jit``.

    tracr's ``apply`` runs its forward op by op, and each op compiles on first use (about 1 s an
    input length); compiled whole it is about 0.3 s once per length and model, then
    microseconds. The steps around it are ``apply``'s own: tracr's input encoder, its forward
    on the encoded batch of one, its output decoder, BOS's row left as BOS.
    """
    import jax
    import jax.numpy as jnp

    ids = jnp.array([assembled.input_encoder.encode(tokens)])
    output = jax.jit(assembled.forward)(assembled.params, ids)
    decoded = output.unembedded_output[0].tolist()
    if assembled.output_encoder:
        decoded = assembled.output_encoder.decode(decoded)
    decoded = [assembled.input_encoder.bos_token, *decoded[1:]]
    inner = output.transformer_output
    return TracrRun(decoded, [np.asarray(stream) for stream in
                              (inner.input_embeddings, *inner.residuals)])


def check_against_tracr(assembled: Any, spec: ModelSpec, inputs: list[list[str]],
                        program: str) -> None:
    """Raise a one-line SatsimError unless satsim's softmax run of ``spec`` (float64) is tracr's.

    Every residual stream must agree within TRACR_FACTOR times float32's noise on it (with one
    rounding of its own values), and tracr's decoded outputs must be what the spec's logits (read
    off ``program``'s directions) say, up to that noise: tracr's argmax takes the first of tied
    labels, and its float32 rounding decides near-ties.
    """
    found = rounding(spec.astype(np.float64), inputs, "softmax", np.float32)
    ours = found.reference
    limits = [TRACR_FACTOR * (noise + np.finfo(np.float32).eps * _largest(stream, found.mask))
              for noise, stream in zip(found.streams, ours.residuals)]
    atol, rtol = default_tolerance(spec.dtype)
    names = ["the embedding"] + [step.out_name for step in steps(spec)]
    labels, numerical = spec.output.labels, spec.output.task == "numerical"
    read_limit = float(limits[-1][np.argmax(spec.output.W_U, axis=0)].max())
    original = {str(token): token for token in assembled.input_encoder.encoding_map}
    for row, tokens in enumerate(inputs):
        output = run_tracr(assembled, [original[token] for token in (spec.bos, *tokens)])
        length = len(tokens) + 1
        theirs = output.streams
        for stream, (name, limit) in enumerate(zip(names, limits)):
            difference = np.abs(ours.residuals[stream][row, :length]
                                - np.asarray(theirs[stream], dtype=np.float64)[0])
            excess = difference - limit
            if (excess > 0).any():
                where = np.unravel_index(int(np.argmax(excess)), excess.shape)
                raise SatsimError(
                    f"the imported spec does not compute what tracr's model computes: on a "
                    f"probe of {len(tokens)} tokens the residual stream differs by "
                    f"{difference[where]:.3g} (tracr's float32 rounding allows "
                    f"{limit[where[1]]:.2g}), first at {name}, position {where[0]}, direction "
                    f"{spec.dim_name(int(where[1]))}")
        logits = ours.logits[row, 1:length]  # the input tokens' rows: tracr overwrites BOS's
        wrong = [i for i, expected in enumerate(output.decoded[1:])
                 if not _reads_as(logits[i], expected, labels, numerical, read_limit)]
        if wrong:
            i = wrong[0]
            ours_read = decode(spec, ours.logits[row, :length], atol, rtol)[i]
            raise SatsimError(
                f"program {program!r} is not the output tracr compiled: on a probe of "
                f"{len(tokens)} tokens its directions read {ours_read} at token {i} where "
                f"tracr's model outputs {output.decoded[1 + i]!r}; pass the program that was "
                "compiled")
