"""Run a model spec on strings with saturated, unique-hard or softmax attention, fast and exact."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numba
import numpy as np

from satsim.engine.batch import BatchRun, forward_batch
from satsim.engine.kernels import announce_compile
from satsim.engine.kernels import fused as fused_kernels
from satsim.engine.kernels.layers import serial_kernels
from satsim.engine.program import FusedModel, forward_fused, fuse
from satsim.engine.resources import SYMBOL_BYTES, check_memory
from satsim.errors import SatsimError
from satsim.model.encoding import (
    Input,
    check_input_list,
    check_length,
    encode_batch,
    input_text,
    symbol_table,
)
from satsim.model.masks import key_range
from satsim.model.readout import decode
from satsim.model.settings import (
    AttentionSettings,
    head_settings,
    overflow_remedy,
    tie_tolerance,
)
from satsim.model.spec import ModelSpec
from satsim.reference.attention import tie_sets


@dataclass(frozen=True)
class HeadTrace:
    """What one layer's heads did on one string: (H, n, ·) arrays."""

    queries: np.ndarray
    keys: np.ndarray
    outputs: np.ndarray
    tie_size: np.ndarray
    tie_gap: np.ndarray
    masks: tuple[str, ...]
    """Each head's attention mask (:mod:`satsim.model.masks`)."""
    scale: float
    """The layer's score scale: scores are scale · q · k."""
    ways: tuple[AttentionSettings, ...] = ()
    """How each head ran (:func:`satsim.model.settings.head_settings`); empty: as the run."""


@dataclass(frozen=True)
class Trace:
    """Every residual and every head of one input's forward pass.

    ``string`` is the input's text form (:func:`satsim.model.encoding.input_text`), ``tokens``
    every token with BOS/EOS; ``layers`` has one entry per block (None for a block without
    attention); ``residuals`` has the input and the stream after every sublayer.
    """

    string: str
    tokens: tuple[str, ...]
    residuals: list[np.ndarray]
    layers: list[HeadTrace | None]
    logits: np.ndarray
    settings: AttentionSettings

    def tie_set(self, layer: int, head: int, query: int) -> np.ndarray:
        """Positions in the tie set of ``query`` at (``layer``, ``head``), recomputed exactly."""
        if not 0 <= layer < len(self.layers):
            raise SatsimError(f"layer {layer} is out of range: the model has "
                              f"{len(self.layers)} blocks (0–{len(self.layers) - 1})")
        trace = self.layers[layer]
        if trace is None:
            raise SatsimError(f"block {layer} has no attention")
        heads, length = len(trace.queries), trace.queries[0].shape[0]
        if not 0 <= head < heads:
            raise SatsimError(f"head {head} is out of range: block {layer} has {heads} heads "
                              f"(0–{heads - 1})")
        if not 0 <= query < length:
            raise SatsimError(f"query {query} is out of range: the input has {length} positions "
                              f"(0–{length - 1})")
        q = trace.queries[head][query : query + 1]
        low, high = key_range(trace.masks[head], query, len(trace.keys[head]))
        way = trace.ways[head] if trace.ways else self.settings
        mask = tie_sets(q, trace.keys[head][low:high], atol=way.atol, rtol=way.rtol,
                        scale=trace.scale)
        return low + np.flatnonzero(mask[0])


def _back_to_back(ids: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Encoded inputs as one int32 array, with each input's start and length."""
    lengths = np.fromiter(map(len, ids), dtype=np.int64, count=len(ids))
    starts = np.zeros(len(lengths), dtype=np.int64)
    np.cumsum(lengths[:-1], out=starts[1:])
    joined = np.concatenate(ids) if ids else np.zeros(0, dtype=np.int64)
    return joined.astype(np.int32), starts, lengths


class Simulator:
    """Run a :class:`ModelSpec` on batches of inputs with compiled attention kernels.

    Every method takes a list of inputs, each text, a sequence of tokens or a sequence of token
    ids (see :func:`satsim.model.encoding.encoder`).

    ``attention`` is one of ``saturated`` (mean over the tie set), ``unique-left`` /
    ``unique-right`` (one end of the tie set) or ``softmax`` (with inverse temperature
    ``beta``). ``atol``/``rtol`` set the tie tolerance (None: the dtype's default).
    ``fused`` runs logits through one kernel per chunk of strings (whole model per string,
    see :mod:`satsim.engine.kernels.fused`) with the same results; False keeps the layer-by-layer
    batches, which traces always use.
    """

    def __init__(
        self,
        spec: ModelSpec,
        attention: str = "saturated",
        *,
        beta: float = 1.0,
        atol: float | None = None,
        rtol: float | None = None,
        max_batch_tokens: int = 1 << 17,
        fused: bool = True,
    ) -> None:
        if not isinstance(spec, ModelSpec):
            raise SatsimError(f"Simulator needs a ModelSpec, got {type(spec).__name__}")
        try:
            self.settings = AttentionSettings(attention, float(beta), atol, rtol)
        except ValueError as error:
            raise SatsimError(str(error)) from None
        self.spec = spec
        self.max_batch_tokens = max_batch_tokens
        self.fused = fused
        self._fused_model: FusedModel | None | bool = False  # False: not built yet

    def encode(self, strings: Sequence[Input]) -> list[np.ndarray]:
        """Token ids of each input (BOS/EOS added); a symbol outside the vocab raises."""
        return encode_batch(self.spec, strings)

    def encode_all(self, strings: Sequence[Input]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Token ids (int32) of all inputs back to back, with each input's start and length.

        The same ids as :meth:`encode`; text of one-character symbols goes in one pass over the
        joined strings, errors are the same.
        """
        check_input_list(strings)
        spec = self.spec
        if not (spec.character_symbols and all(isinstance(s, str) for s in strings)):
            return _back_to_back(self.encode(strings))
        table = symbol_table(spec)
        # BOS and EOS become two code points just past the symbols' table, joined in place.
        marks = {}
        if spec.bos is not None:
            marks["bos"] = (chr(table.size), spec.vocab.index(spec.bos))
        if spec.eos is not None:
            marks["eos"] = (chr(table.size + 1), spec.vocab.index(spec.eos))
        bos, eos = marks.get("bos", ("", -1)), marks.get("eos", ("", -1))
        try:
            joined = bos[0] + (eos[0] + bos[0]).join(strings) + eos[0] if len(strings) else ""
        except TypeError:
            self.encode(strings)  # raises what encoding one by one raises
            raise
        lookup = np.full(max(table.size + 3, 256), -1, dtype=np.int32)
        lookup[: table.size] = table
        lookup[table.size], lookup[table.size + 1] = bos[1], eos[1]
        try:  # one byte per symbol where every code point is below 256
            codes = np.frombuffer(joined.encode("latin-1"), dtype=np.uint8)
        except UnicodeEncodeError:
            codes = np.frombuffer(joined.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
            codes = np.minimum(codes, table.size + 2)
        ids = np.take(lookup, codes)
        lengths = np.fromiter(map(len, strings), dtype=np.int64, count=len(strings)) + len(marks)
        bad = (ids.size and ids.min() < 0) or (lengths.size and lengths.min() == 0)
        for mark, _ in marks.values():  # a mark's code point inside a string is no symbol
            bad = bad or np.count_nonzero(codes == ord(mark)) != len(strings)
        if bad:  # tokens separated by spaces, or the error naming the string and the symbol
            return _back_to_back(self.encode(strings))
        check_length(spec, int(lengths.max(initial=0)))
        starts = np.zeros(len(lengths), dtype=np.int64)
        np.cumsum(lengths[:-1], out=starts[1:])
        return ids, starts, lengths

    def token_bytes(self) -> int:
        """Rough bytes of activations one token in flight holds (residual, heads, MLP, logits)."""
        spec = self.spec
        per_layer = sum((3 * b.attn.n_heads * max(b.attn.d_head, b.attn.d_v) if b.attn else 0)
                        + (b.mlp.W_in.shape[1] if b.mlp else 0) for b in spec.blocks)
        return 8 * (4 * spec.d_model + per_layer + len(spec.output.labels)) + 16

    def check_memory(self, lengths: np.ndarray) -> None:
        """Raise a one-line SatsimError when the strings' activations would not fit in memory."""
        in_flight = np.sort(lengths)[-numba.get_num_threads():].sum() if len(lengths) else 0
        check_memory(float(in_flight) * self.token_bytes() + SYMBOL_BYTES * lengths.sum(),
                     f"running strings of up to {lengths.max(initial=0):,} symbols",
                     "give shorter or fewer strings")

    def _fused(self) -> FusedModel | None:
        """The spec flattened for the fused kernel (built once), or None where it cannot run."""
        if self._fused_model is False:
            self._fused_model = fuse(self.spec) if self.fused else None
        return self._fused_model

    def _run_fused(self, strings: Sequence[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Logits of all strings through the fused kernel, with their starts and lengths.

        A string that fails attention's input checks goes through the checked layer-by-layer
        path, which raises the error.
        """
        ids, starts, lengths = self.encode_all(strings)
        self.check_memory(lengths)
        if len(lengths) == 0:
            return np.zeros((0, len(self.spec.output.labels)), self.spec.dtype), starts, lengths
        logits, status = forward_fused(self._fused(), ids, starts, lengths, self.settings,
                                       workers=numba.get_num_threads())
        def ids_of(indices: np.ndarray) -> list[np.ndarray]:
            return [ids[starts[i] : starts[i] + lengths[i]] for i in indices.tolist()]

        failed = np.flatnonzero(status == fused_kernels.OVERFLOWED)
        if failed.size:
            self._run_ids(ids_of(failed), trace=False)
            raise SatsimError("attention inputs are not finite or scores could overflow float64")
        long_general = np.flatnonzero(status == fused_kernels.LONG_GENERAL)
        if long_general.size:  # long strings with O(T²) heads: attention in parallel
            readout_last = self.spec.output.readout == "last"
            runs = self._run_ids(ids_of(long_general), trace=False)
            for s, (run, row, length) in zip(long_general.tolist(), runs):
                if readout_last:
                    logits[s] = run.logits[row, length - 1]
                else:
                    logits[starts[s] : starts[s] + length] = run.logits[row, :length]
        self._check_finite(logits)
        return logits, starts, lengths

    def _check_finite(self, logits: np.ndarray) -> None:
        """Refuse logits that overflowed: a NaN or infinite logit decides nothing."""
        if not np.isfinite(logits).all():
            raise SatsimError(f"model {self.spec.name!r} gives logits that are not finite on "
                              f"these inputs (an activation overflowed {self.spec.dtype}); "
                              f"use {overflow_remedy(self.spec.dtype)}")

    def _batches(self, ids: list[np.ndarray]) -> Iterator[list[int]]:
        """Group string indices of similar length so that padding stays small."""
        order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
        batch: list[int] = []
        for index in order:
            longest = len(ids[index])
            if batch and longest * (len(batch) + 1) > self.max_batch_tokens:
                yield batch
                batch = []
            batch.append(index)
        if batch:
            yield batch

    def _run(self, strings: Sequence[Input], trace: bool) -> list[tuple[BatchRun, int, int]]:
        """Run all strings; return for each string its batch run, row and length."""
        return self._run_ids(self.encode(strings), trace)

    def _run_ids(self, ids: list[np.ndarray], trace: bool) -> list[tuple[BatchRun, int, int]]:
        """Run encoded strings; return for each its batch run, row and length."""
        if not ids:
            return []
        self.check_memory(np.array([len(i) for i in ids]))
        announce_compile(path="layers", dtype=self.spec.dtype)
        placed: list[tuple[BatchRun, int, int]] = [None] * len(ids)  # type: ignore[list-item]
        batches = list(self._batches(ids))

        def run_batch(batch: list[int]) -> BatchRun:
            return forward_batch(self.spec, [ids[i] for i in batch], self.settings, trace)

        def run_serial(batch: list[int]) -> BatchRun:
            with serial_kernels():
                return run_batch(batch)

        workers = min(numba.get_num_threads(), len(batches))
        if workers > 1:
            # Several batches side by side, each with serial kernels that release the GIL: one
            # parallel region per kernel call costs milliseconds when the machine is shared.
            with ThreadPoolExecutor(workers) as pool:
                runs = list(pool.map(run_serial, batches))
        else:
            runs = [run_batch(batch) for batch in batches]
        for batch, run in zip(batches, runs):
            for row, index in enumerate(batch):
                placed[index] = (run, row, len(ids[index]))
        return placed

    def logits(self, strings: Sequence[Input]) -> list[np.ndarray]:
        """Logits per string: (n_outputs,) for a last-position readout, else (n, n_outputs)."""
        readout_last = self.spec.output.readout == "last"
        if self._fused() is not None:
            logits, starts, lengths = self._run_fused(strings)
            if readout_last:
                return list(logits)
            return [logits[a : a + n] for a, n in zip(starts.tolist(), lengths.tolist())]
        out = []
        for run, row, length in self._run(strings, trace=False):
            per_position = run.logits[row, :length]
            self._check_finite(per_position)
            out.append(per_position[-1] if readout_last else per_position)
        return out

    def accepts(self, strings: Sequence[Input]) -> np.ndarray:
        """Whether a recogniser accepts each string (its logit is > 0), as a bool array."""
        if self.spec.output.task != "recognition":
            raise SatsimError(f"model {self.spec.name!r} is not a recogniser")
        if self._fused() is not None:
            return self._run_fused(strings)[0][:, 0] > 0
        return np.array([logit[0] > 0 for logit in self.logits(strings)], dtype=bool)

    def next_symbols(self, strings: Sequence[Input]) -> list[list[frozenset[str]]]:
        """For a next-symbol model: the predicted set after each prefix s[:0] … s[:len(s)]."""
        if self.spec.output.task != "next-symbol":
            raise SatsimError(f"model {self.spec.name!r} is not a next-symbol model")
        return self.outputs(strings)

    def outputs(self, inputs: Sequence[Input]) -> list:
        """The decoded answer per input (:func:`satsim.model.readout.decode`).

        recognition: accept (bool); next-symbol: the set after each prefix; categorical: per
        input token (BOS/EOS excluded) the label of the largest logit, or a
        :class:`~satsim.model.readout.Tie` of the tied labels; numerical: per input token a float.
        """
        atol, rtol = tie_tolerance(self.spec.dtype, self.settings.atol, self.settings.rtol)
        return [decode(self.spec, logits, atol, rtol) for logits in self.logits(inputs)]

    def trace(self, string: Input) -> Trace:
        """Run one input and keep every residual, every head's queries, keys, outputs and ties."""
        return self.traces([string])[0]

    def traces(self, strings: Sequence[Input]) -> list[Trace]:
        """Run inputs and keep, for each, every residual and every head's work."""
        out = []
        ids = self.encode(strings)
        for index, (run, row, length) in enumerate(self._run_ids(ids, trace=True)):
            tokens = tuple(self.spec.vocab[i] for i in ids[index])
            string = input_text(self.spec, ids[index])
            computed = iter(run.layers)
            layers: list[HeadTrace | None] = []
            for block in self.spec.blocks:
                if block.attn is None:
                    layers.append(None)
                    continue
                layer = next(computed)
                layers.append(HeadTrace(
                    queries=layer.queries[row, :, :length],
                    keys=layer.keys[row, :, :length],
                    outputs=layer.head_outputs[row, :, :length],
                    tie_size=layer.tie_size[row, :, :length],
                    tie_gap=layer.tie_gap[row, :, :length],
                    masks=block.attn.head_masks,
                    scale=block.attn.score_scale,
                    ways=tuple(head_settings(self.settings, kind, delta) for kind, delta
                               in zip(block.attn.head_kinds, block.attn.head_deltas)),
                ))
            residuals = [r[row, :length] for r in run.residuals]
            logits = run.logits[row, :length]
            out.append(Trace(string, tokens, residuals, layers, logits, self.settings))
        return out
