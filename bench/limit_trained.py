"""limit_signs on trained models: its cost beside the plain fused run of the leading-order
network, and its agreement with the float64 soft twin at c = 10³, 10⁴, 10⁵ (issue: "The exact
limit of a trained model at engine speed").

The models are fixtures in bench/models/limit-*.safetensors, each made by `satsim train`
(commands in bench/README.md): Dyck-1 next-symbol and recognition, positionless and learned
positions, pre-, post- and no LayerNorm, majority and shuffle-Dyck-2.

Part 1, cost. Per model and length bin (151–300, and 1000–2000 where the model reads such
lengths), test strings (half positives, half hard negatives) through
``Simulator(limit(spec)).logits`` (the fused default) and through ``limit_signs``, timed
interleaved in one process with one thread, CPU seconds, median of ``--repeats``. The script
also counts the strings that the check before this change sent to the exact expansion (a tie set
of keys whose input rows differ bit for bit) and the strings that need it now (keys whose values
differ), and times the same for the model with W_Q = 0, b_Q = 1 in its last block: every key
ties at top degree and the bias splits them, so every string needs the expansion.

Part 2, agreement. Wherever the soft twin's readout signs agree at c = 10³, 10⁴ and 10⁵ (the
logit has converged), limit_signs must agree; the script counts disagreements (must be 0) and
undetermined strings (at most 5 %).

    python bench/limit_trained.py [--strings 20] [--repeats 5] [--models NAME ...]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("NUMBA_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "support"))

import numpy as np  # noqa: E402
from _common import RESULTS, machine, write  # noqa: E402
from helpers import zero_query  # noqa: E402

import languages  # noqa: E402
from satsim.analysis.strings import test_set  # noqa: E402
from satsim.engine.batch import forward_batch  # noqa: E402
from satsim.engine.simulator import Simulator  # noqa: E402
from satsim.model.architecture import counting_heads, steps  # noqa: E402
from satsim.model.encoding import encoder  # noqa: E402
from satsim.model.io import load_spec  # noqa: E402
from satsim.model.settings import AttentionSettings  # noqa: E402
from satsim.reference.attention import tie_sets  # noqa: E402
from satsim.saturation import leading_order, limit_signs  # noqa: E402
from satsim.soft import SoftTransformer  # noqa: E402
from satsim.torch_setup import import_torch  # noqa: E402
from satsim.training.evaluate import max_string_length  # noqa: E402

MODELS = Path(__file__).parent / "models"
FIXTURES = {  # file stem: the language it was trained on
    "limit-dyck1-ns-pre-none": "dyck1",
    "limit-dyck1-ns-post-learned": "dyck1",
    "limit-dyck1-ns-none-none": "dyck1",
    "limit-dyck1-rec-pre-learned": "dyck1",
    "limit-dyck1-rec-post-none": "dyck1",
    "limit-majority-rec-pre-none": "majority",
    "limit-shuffle-dyck2-ns-pre-none": "shuffle-dyck2",
}
BINS = ((151, 300), (1000, 2000))
SCALES = (1e3, 1e4, 1e5)


def flagged_by_rows(spec, strings) -> int:
    """Strings with a tie set (size > 1, outside counting heads) whose keys' input rows differ
    bit for bit: what the check before this change sent to the exact expansion."""
    network = leading_order(spec)
    encode = encoder(network.spec)
    attention = [b.attn for b in network.source.blocks if b.attn is not None]
    inputs = [index for index, step in enumerate(steps(network.spec))
              for branch in step.branches if branch.kind == "attn"]
    count = 0
    for string in strings:
        run = forward_batch(network.spec, [encode(string)], AttentionSettings("saturated"),
                            trace=True)
        differ = False
        for layer, index, attn in zip(run.layers, inputs, attention):
            rows = run.residuals[index][0]
            for head in np.flatnonzero(~counting_heads(attn)):
                members = tie_sets(layer.queries[0, head], layer.keys[0, head],
                                   attn_mask=attn.head_masks[head], atol=2e-9, rtol=2e-9,
                                   scale=attn.score_scale)
                for query in np.flatnonzero(layer.tie_size[0, head] > 1):
                    tied = rows[members[query]]
                    differ = differ or bool((tied != tied[0]).any())
        count += differ
    return count


def interleaved(fns: dict, repeats: int) -> dict:
    """CPU seconds of each function, median of ``repeats`` rounds run in turn."""
    times = {name: [] for name in fns}
    for fn in fns.values():
        fn()
    for _ in range(repeats):
        for name, fn in fns.items():
            start = time.process_time()
            fn()
            times[name].append(time.process_time() - start)
    return {name: statistics.median(t) for name, t in times.items()}


def cost(spec, language, n: int, repeats: int) -> list[dict]:
    """Part 1 for one model: every bin it reads, as trained and with W_Q = 0 in its last block."""
    rows = []
    cap = max_string_length(spec)
    for low, high in BINS:
        if cap is not None:
            high = min(high, cap)
            if high < low:
                continue
        strings, _ = test_set(language, n, low, high, seed=1)
        for variant, model in (("trained", spec), ("W_Q=0 last block", zero_query(spec))):
            fused = Simulator(leading_order(model).spec)
            result = limit_signs(model, strings)
            seconds = interleaved({"fused": lambda: fused.logits(strings),  # noqa: B023
                                   "limit_signs": lambda: limit_signs(model, strings)},  # noqa: B023
                                  repeats)
            rows.append({
                "bin": [low, high], "variant": variant, "strings": len(strings),
                "tokens": int(sum(len(s) for s in strings)),
                "flagged_before": flagged_by_rows(model, strings) if variant == "trained"
                else None,
                "exact_now": int(result.exact.sum()),
                "undetermined": int(result.undetermined.sum()),
                "fused_s": seconds["fused"], "limit_signs_s": seconds["limit_signs"],
                "ratio": seconds["limit_signs"] / seconds["fused"]})
            row = rows[-1]
            print(f"  {low}-{high} {variant:<17} flagged before {row['flagged_before']}, exact "
                  f"now {row['exact_now']}/{len(strings)}: fused {row['fused_s']:.4f} s, "
                  f"limit_signs {row['limit_signs_s']:.4f} s ({row['ratio']:.1f}×)", flush=True)
    return rows


def soft_signs(twin, spec, strings) -> list[list[np.ndarray]]:
    """Readout signs of the float64 soft twin at each scale, per string."""
    out = []
    for c in SCALES:
        scaled = twin.scaled(c)
        signs = []
        for string in strings:  # one at a time: long strings need (T, T) score matrices
            logits = scaled.run([string]).logits_of(0)
            signs.append(np.sign(logits[-1] if spec.output.readout == "last" else logits))
        out.append(signs)
    return out


def agreement(spec, language, n: int) -> dict:
    """Part 2 for one model: limit_signs against the converged signs of the soft twin."""
    cap = max_string_length(spec)
    strings = test_set(language, n, 1, min(cap or 300, 300), seed=2)[0]
    long_strings = [] if cap is not None else test_set(
        language, 4, 1000, 2000, seed=3)[0]
    strings = [s for s in strings + long_strings if s]
    twin = SoftTransformer.from_spec(spec, device="cpu", dtype="float64")
    soft = soft_signs(twin, spec, strings)
    fast = limit_signs(spec, strings)
    converged = disagree = 0
    for i in range(len(strings)):
        settled = np.all([s[i] == soft[0][i] for s in soft[1:]], axis=0)
        decided = settled & ~np.isnan(fast.signs[i])
        converged += int(settled.sum())
        disagree += int((fast.signs[i][decided] != soft[0][i][decided]).sum())
    return {"strings": len(strings), "converged_logits": converged, "disagreements": disagree,
            "undetermined_strings": int(fast.undetermined.sum()),
            "exact_strings": int(fast.exact.sum())}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--strings", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--agreement-strings", type=int, default=60)
    parser.add_argument("--models", nargs="*", default=list(FIXTURES), choices=list(FIXTURES))
    parser.add_argument("--merge", action="store_true",
                        help="keep the other models' entries of the results file (re-measure some)")
    args = parser.parse_args()
    import_torch().set_num_threads(1)
    results = {"machine": machine(), "threads": 1, "models": {}}
    if args.merge and (RESULTS / "limit_trained.json").exists():
        earlier = json.loads((RESULTS / "limit_trained.json").read_text())
        results["models"] = earlier["models"]
        results["earlier_runs"] = earlier.get("earlier_runs", []) + [
            {key: earlier[key] for key in ("machine", "machine_after") if key in earlier}]
    for stem in args.models:
        lang = FIXTURES[stem]
        path = MODELS / f"{stem}.safetensors"
        spec = load_spec(str(path)).astype(np.float64)
        language = languages.get(lang)
        print(f"{stem} ({spec.output.task}, {spec.norm} norm, {spec.positional.kind} positions)",
              flush=True)
        rows = cost(spec, language, args.strings, args.repeats)
        agree = agreement(spec, language, args.agreement_strings)
        print(f"  agreement: {agree}", flush=True)
        results["models"][stem] = {"cost": rows, "agreement": agree,
                                   "measured": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
    results["machine_after"] = machine()
    print(f"wrote {write('limit_trained', results)}")


if __name__ == "__main__":
    main()
