"""The saturated limit of compiled programs against the float64 soft twin scaled toward it.

A compiled B-RASP or C-RASP model (examples/) breaks its ties with lower-order score terms, so
every string but `first`'s takes the exact expansion, through heads with a constant query (the
tie filter kept per query class). Wherever the twin's sign is the same at c = 10³, 10⁴ and 10⁵,
`limit_signs` must give it and must not leave it undetermined.
"""

import random

import numpy as np
import pytest

from satsim.rasp import compile_program, read_program
from satsim.saturation import limit_signs
from tests.saturation.test_limit_trained import converged_signs
from tests.support.paths import EXAMPLES

PROGRAMS = ("a_before_b.brasp", "tomita4.brasp", "a_then_b.brasp", "first.brasp",
            "majority.crasp", "dyck1.crasp", "anbn.crasp")


@pytest.mark.parametrize("program", PROGRAMS)
def test_the_limit_of_a_compiled_program_is_the_converged_soft_twin(program):
    spec = compile_program(read_program(EXAMPLES / program))
    alphabet = [token for token in spec.vocab if not token.startswith("<")]
    rng = random.Random(5)
    strings = ["".join(rng.choice(alphabet) for _ in range(rng.randint(1, 150)))
               for _ in range(16)]
    fast = limit_signs(spec, strings)
    assert fast.exact.all() if program != "first.brasp" else not fast.exact.any()
    settled_logits = 0
    for row, (soft, settled) in enumerate(converged_signs(spec, strings)):
        settled_logits += int(settled.sum())
        signs = np.asarray(fast.signs[row])
        signs = signs[-1] if signs.ndim > np.ndim(soft) else signs
        assert not np.isnan(signs[settled]).any()
        np.testing.assert_array_equal(signs[settled], soft[settled])
    assert settled_logits >= len(strings) // 2
