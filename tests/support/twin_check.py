"""The soft-twin test of a hand-built construction: same decisions at large c (or β).

A construction is written for saturated attention on its own weights θ, which is the limit of
attention-only inverse temperature β → ∞: its soft twin at large β must decide as the simulator
does. Uniform scaling cθ is another limit (see :mod:`satsim.saturation.limit`): it converges to
the leading-order network, which is the construction itself only when every sum adds terms of
equal degree. The constructions are built that way (:mod:`satsim.circuits.lifting`: no
residual stream, no biases), so at large c too the soft twin decides as the simulator; the Dyck-1
recogniser, kept with its residual stream as the benchmark model, does so through its exact limit
(:func:`satsim.saturation.exact_limit`). Every construction gets this test
(``check_construction(name, scale=..., beta=...)``); it lives with the tests, not the library.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from satsim import constructions
from satsim.analysis.measures import decide
from satsim.analysis.strings import short_strings, test_set
from satsim.engine.simulator import Simulator
from satsim.soft.model import SoftTransformer


@dataclass(frozen=True)
class ConstructionCheck:
    """Decisions of the soft twin against the saturated simulator on test strings."""

    name: str
    task: str
    scale: float
    beta: float
    n_strings: int
    disagreements: tuple[str, ...]

    @property
    def ok(self) -> bool:
        """Whether every decision agreed."""
        return not self.disagreements


def construction_strings(name: str, *, exhaustive: int = 2000, n: int = 100, max_len: int = 40,
                         seed: int = 0) -> list[str]:
    """Every short string (``exhaustive`` at most), plus a balanced test set of the language."""
    import languages

    strings = short_strings(constructions.build(name).alphabet, exhaustive)
    if name in languages.names():
        strings += test_set(languages.get(name), n, 0, max_len, seed)[0]
    return strings


def check_construction(name: str, *, task: str = "recognition", scale: float = 1000.0,
                       beta: float = 1.0, strings: Sequence[str] | None = None,
                       device: str = "auto", dtype: str = "float64") -> ConstructionCheck:
    """Compare the soft twin of construction ``name`` at cθ (and β) with the simulator."""
    spec = constructions.build(name, task=task)
    strings = list(construction_strings(name) if strings is None else strings)
    expected = [decide(spec, logits if logits.ndim > 1 else logits[None])
                for logits in Simulator(spec).logits(strings)]
    soft = SoftTransformer.from_spec(spec, device=device, dtype=dtype).scaled(scale)
    run = soft.run(strings, beta=beta)
    wrong = tuple(s for row, (s, want) in enumerate(zip(strings, expected))
                  if not np.array_equal(decide(spec, run.logits_of(row)), want))
    return ConstructionCheck(name, task, scale, beta, len(strings), wrong)
