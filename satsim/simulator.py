"""Run a model spec on strings with saturated, unique-hard or softmax attention, fast and exact."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numba
import numpy as np

from satsim.encoding import encode, encoder
from satsim.errors import SatsimError
from satsim.forward import BatchRun, forward_batch
from satsim.kernels import announce_compile
from satsim.kernels.layers import serial_kernels
from satsim.reference.attention import tie_sets
from satsim.reference.forward import AttentionSettings
from satsim.spec import ModelSpec


@dataclass(frozen=True)
class HeadTrace:
    """What one layer's heads did on one string: (H, n, ·) arrays."""

    queries: np.ndarray
    keys: np.ndarray
    outputs: np.ndarray
    tie_size: np.ndarray
    tie_gap: np.ndarray
    causal: bool


@dataclass(frozen=True)
class Trace:
    """Every residual and every head of one string's forward pass.

    ``layers`` has one entry per block (None for a block without attention); ``residuals`` has
    the input and the stream after every sublayer.
    """

    string: str
    tokens: tuple[str, ...]
    residuals: list[np.ndarray]
    layers: list[HeadTrace | None]
    logits: np.ndarray
    settings: AttentionSettings

    def tie_set(self, layer: int, head: int, query: int) -> np.ndarray:
        """Positions in the tie set of ``query`` at (``layer``, ``head``), recomputed exactly."""
        trace = self.layers[layer]
        if trace is None:
            raise SatsimError(f"block {layer} has no attention")
        q = trace.queries[head][query : query + 1]
        keys = trace.keys[head]
        if trace.causal:
            keys = keys[: query + 1]
        mask = tie_sets(q, keys, causal=False, atol=self.settings.atol, rtol=self.settings.rtol)
        return np.flatnonzero(mask[0])


class Simulator:
    """Run a :class:`ModelSpec` on batches of strings with compiled attention kernels.

    ``attention`` is one of ``saturated`` (mean over the tie set), ``unique-left`` /
    ``unique-right`` (one end of the tie set) or ``softmax`` (with inverse temperature
    ``beta``). ``atol``/``rtol`` set the tie tolerance (None: the dtype's default).
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
    ) -> None:
        if not isinstance(spec, ModelSpec):
            raise SatsimError(f"Simulator needs a ModelSpec, got {type(spec).__name__}")
        try:
            self.settings = AttentionSettings(attention, float(beta), atol, rtol)
        except ValueError as error:
            raise SatsimError(str(error)) from None
        self.spec = spec
        self.max_batch_tokens = max_batch_tokens

    def encode(self, strings: Sequence[str]) -> list[np.ndarray]:
        """Token ids of each string (BOS/EOS added); a symbol outside the vocab raises."""
        if isinstance(strings, str):
            raise SatsimError("pass a list of strings, not a single string")
        encode_one = encoder(self.spec)
        ids = [encode_one(s) for s in strings]
        if any(len(seq) == 0 for seq in ids):
            raise SatsimError(
                f"the empty string gives no tokens to model {self.spec.name!r} (it has no BOS/EOS)"
            )
        return ids

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

    def _run(self, strings: Sequence[str], trace: bool) -> list[tuple[BatchRun, int, int]]:
        """Run all strings; return for each string its batch run, row and length."""
        ids = self.encode(strings)
        if not ids:
            return []
        announce_compile()
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

    def logits(self, strings: Sequence[str]) -> list[np.ndarray]:
        """Logits per string: (n_outputs,) for a last-position readout, else (n, n_outputs)."""
        readout_last = self.spec.output.readout == "last"
        out = []
        for run, row, length in self._run(strings, trace=False):
            per_position = run.logits[row, :length]
            out.append(per_position[-1] if readout_last else per_position)
        return out

    def accepts(self, strings: Sequence[str]) -> np.ndarray:
        """Whether a recogniser accepts each string (its logit is > 0), as a bool array."""
        if self.spec.output.task != "recognition":
            raise SatsimError(f"model {self.spec.name!r} is not a recogniser")
        return np.array([logit[0] > 0 for logit in self.logits(strings)], dtype=bool)

    def next_symbols(self, strings: Sequence[str]) -> list[list[frozenset[str]]]:
        """For a next-symbol model: the predicted set after each prefix s[:0] … s[:len(s)]."""
        if self.spec.output.task != "next-symbol":
            raise SatsimError(f"model {self.spec.name!r} is not a next-symbol model")
        labels = np.array(self.spec.output.labels, dtype=object)
        predictions = []
        for string, logits in zip(strings, self.logits(strings)):
            rows = logits[: len(string) + 1]
            predictions.append([frozenset(labels[row > 0]) for row in rows])
        return predictions

    def trace(self, string: str) -> Trace:
        """Run one string and keep every residual, every head's queries, keys, outputs and ties."""
        return self.traces([string])[0]

    def traces(self, strings: Sequence[str]) -> list[Trace]:
        """Run strings and keep, for each, every residual and every head's work."""
        out = []
        for string, (run, row, length) in zip(strings, self._run(strings, trace=True)):
            tokens = tuple(self.spec.vocab[i] for i in encode(self.spec, string))
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
                    causal=block.attn.causal,
                ))
            residuals = [r[row, :length] for r in run.residuals]
            logits = run.logits[row, :length]
            out.append(Trace(string, tokens, residuals, layers, logits, self.settings))
        return out
