"""``satsim harden`` on models of the decompiling-transformers zoo (tests/data/zoo).

What the hybrid decides is recomputed independently of the search: by the NumPy reference
forward pass with each head's kind, against the soft model's answers by the transformers-checked
softmax run, on strings the search never saw (another seed).
"""

from __future__ import annotations

import json

import numpy as np
import pytest

import languages
from satsim import Simulator, load_spec
from satsim.analysis import strings as string_policy
from satsim.analysis.harden import (
    CLASS_TRIES,
    MAX_CLASSES,
    ONE_CLASS,
    WIDTHS,
    _class_widths,
    _Judge,
    first_changes,
    growth_first_changes,
    harden,
    with_kinds,
)
from satsim.errors import SatsimError
from satsim.interop.hf_gpt2 import from_hf_gpt2
from satsim.model.readout import next_symbol_sets
from satsim.model.respec import map_named
from satsim.model.settings import AttentionSettings
from satsim.reference.attention import class_count
from satsim.reference.forward import forward
from tests.support.helpers import random_spec, run_satsim
from tests.support.paths import DATA

ZOO = DATA / "zoo"
BINS = ((0, 20), (21, 60))


def _strings(lang: str, n: int, seed: int) -> list[list[str]]:
    language = languages.get(lang)
    return [string_policy.test_set(language, n, low, high, seed + 7 * i, negatives=False)[0]
            for i, (low, high) in enumerate(BINS)]


@pytest.mark.parametrize(("name", "lang"), [("bce_D2", "d2"), ("bce_aastar", "aa-star")])
def test_the_hybrid_keeps_the_soft_decisions_on_unseen_strings(name, lang):
    spec = from_hf_gpt2(ZOO / name, check=False)
    result = harden(spec, _strings(lang, 12, 0), BINS)
    assert result.hardened == len(result.heads)  # both models harden every head
    labels = np.array(spec.output.labels, dtype=object)
    for group in _strings(lang, 12, 100):
        soft = Simulator(spec, "softmax").next_symbols(group)
        agree = [next_symbol_sets(labels, forward(result.spec, s).logits, s) == expected
                 for s, expected in zip(group, soft)]
        assert np.mean(agree) >= 0.9
    for report in result.heads:
        if report.kind == "score-class":
            assert report.role == "counter" and max(report.classes) <= MAX_CLASSES
            assert report.classes[-1] <= report.classes[0]


def test_score_class_counts_of_the_dyck_head_are_bounded_as_reported():
    spec = from_hf_gpt2(ZOO / "bce_D2", check=False)
    result = harden(spec, _strings("d2", 12, 0), BINS)
    [report] = result.heads
    if report.kind != "score-class":
        pytest.skip(f"the D_2 head became {report.kind}")
    for group, most in zip(_strings("d2", 12, 0), report.classes):
        seen = 0
        for trace in Simulator(spec, "softmax").traces(group):
            head = trace.layers[0]
            seen = max(seen, int(class_count(head.queries[0], head.keys[0], width=report.delta,
                                             scale=head.scale, attn_mask="causal").max()))
        assert seen == most


@pytest.mark.slow  # a fresh process
def test_the_command_writes_a_hybrid_that_loads_runs_and_shows_its_kinds(tmp_path):
    out = tmp_path / "hard.safetensors"
    result = run_satsim("harden", str(ZOO / "bce_aastar"), "-o", str(out), "--lang", "aa-star",
                        "-n", "8", "--bins", "0-20,21-40", "--json")
    assert result.returncode == 0, result.stderr
    table = json.loads(result.stdout)
    assert len(table["heads"]) == 2 and min(table["agreement"]) >= 0.99
    hybrid = load_spec(out)
    logits = Simulator(hybrid).logits([np.array([0, 0, 0, 0])])[0]
    assert logits.shape == (5, len(hybrid.output.labels))
    shown = json.loads(run_satsim("show", "--model", str(out), "--json").stdout)
    assert [h["kind"] for h in shown["heads"]] == [h["kind"] for h in table["heads"]]
    assert all(h["kind"] in ("soft", "saturated", "tolerant-hard", "score-class")
               for h in shown["heads"])
    again = run_satsim("harden", str(out), "-o", str(tmp_path / "again.safetensors"))
    assert again.returncode == 2 and "already fixes attention kinds" in again.stderr


def test_only_the_scored_positions_count_toward_agreement():
    spec = from_hf_gpt2(ZOO / "bce_D2", check=False)
    strings = _strings("d2", 12, 0)
    saturated = {(0, 0): ("saturated", None)}
    every = _Judge(spec, strings).agreement(saturated)
    assert min(every) < 0.5  # saturated attention changes the D_2 model's answers
    last = _Judge(spec, strings, lambda s: len(s)).agreement(saturated)
    soft = Simulator(spec, "softmax").next_symbols
    hard = Simulator(with_kinds(spec, saturated)).next_symbols
    for group, share in zip(strings, last):  # the answer after the whole string alone
        assert share == np.mean([a[-1] == b[-1] for a, b in zip(soft(group), hard(group))])


def test_first_changes_finds_the_first_grid_value_that_changes_a_bin():
    spec = from_hf_gpt2(ZOO / "bce_D2", check=False)
    strings = _strings("d2", 12, 0)
    same = first_changes(spec, strings, (1.5, 2.0), lambda _: Simulator(spec, "softmax"))
    assert same == (None, None)
    tried = []

    def saturated_from_two(value):
        tried.append(value)
        return Simulator(spec, "saturated" if value >= 2 else "softmax")
    assert first_changes(spec, strings, (1.5, 2.0, 3.0), saturated_from_two) == (2.0, 2.0)
    assert tried == [1.5, 2.0]  # every bin changed at 2: the grid stops there


def test_the_command_hardens_a_zoo_algorithmic_checkpoint_on_its_own_task(tmp_path):
    # The D_2 weights under a bin_majority name, read as an ordinary LM head: the same vocabulary
    # size (two symbols and four specials), so the checkpoint imports as that task's model.
    folder = tmp_path / "bin_majority-@1l1h16d3lr01drop"
    folder.mkdir()
    config = json.loads((ZOO / "bce_D2" / "config.json").read_text())
    config["architectures"] = ["GPT2LMHeadModel"]
    (folder / "config.json").write_text(json.dumps(config))
    (folder / "model.safetensors").write_bytes((ZOO / "bce_D2" / "model.safetensors").read_bytes())
    result = run_satsim("harden", str(folder), "-o", str(tmp_path / "h.safetensors"), "-n", "6",
                        "--bins", "1-10,11-20", "--json")
    assert result.returncode == 0, result.stderr
    table = json.loads(result.stdout)
    assert table["strings"] == "zoo task bin_majority, scored from <sep>"
    assert min(table["agreement"]) >= 0.99
    refused = run_satsim("harden", str(folder), "-o", str(tmp_path / "g.safetensors"),
                         "--bins", "0-0")
    assert refused.returncode == 2 and refused.stderr.startswith("error: task bin_majority")


def test_held_out_bins_are_measured_on_the_hybrid_but_never_searched():
    spec = from_hf_gpt2(ZOO / "bce_aastar", check=False)
    strings = _strings("aa-star", 12, 0)
    result = harden(spec, strings, BINS, held_out=1)
    alone = harden(spec, strings[:1], BINS[:1])
    assert result.searched == 1 and [h.agreement for h in result.heads] == [
        h.agreement for h in alone.heads]  # per head: the searched bin only
    assert [(h.kind, h.delta) for h in result.heads] == [(h.kind, h.delta) for h in alone.heads]
    labels = np.array(spec.output.labels, dtype=object)
    soft = Simulator(spec, "softmax").next_symbols(strings[1])
    same = [next_symbol_sets(labels, forward(result.spec, s).logits, s) == expected
            for s, expected in zip(strings[1], soft)]
    assert result.agreement[1] == np.mean(same)
    with pytest.raises(SatsimError, match="at least one"):
        harden(spec, strings, BINS, held_out=2)


def test_one_sublayer_grown_alone_changes_the_decisions_where_reported():
    spec = from_hf_gpt2(ZOO / "bce_D2", check=False).astype(np.float64)
    strings = _strings("d2", 12, 0)[0]
    grid = (1.1, 1.5, 2.0, 5.0)
    first = growth_first_changes(spec, strings, grid)
    assert list(first) == ["embed", "pos_embed", "blocks.0.attn", "blocks.0.mlp", "blocks.0.ln1",
                           "blocks.0.ln2", "ln_final", "unembed"]
    # a bias-free readout scaled by c > 0 scales every logit: no next-symbol set changes
    assert first["unembed"] is None and first["ln_final"] is None
    labels = np.array(spec.output.labels, dtype=object)
    softmax = AttentionSettings(kind="softmax")

    def answers(grown: str, c: float) -> list:
        scaled = map_named(spec, lambda name, a: a * c if name.startswith(grown + ".") else a)
        return [next_symbol_sets(labels, forward(scaled, s, softmax).logits, s) for s in strings]
    trained = answers("", 1.0)
    changed = {group: c for group, c in first.items() if c is not None}
    assert changed  # the D_2 model's decisions flip at c ≈ 1.1 (docs/zoo.md)
    for group, c in changed.items():
        shares = {value: np.mean([a == b for a, b in zip(answers(group, value), trained)])
                  for value in grid[:grid.index(c) + 1]}
        assert shares.pop(c) < 0.99 and all(share >= 0.99 for share in shares.values())


def test_score_class_widths_are_the_narrowest_bounded_ones_even_between_unbounded_widths():
    class Classes:  # D_3's head: bounded only between 0.015 and 0.03 (docs/zoo.md)
        def classes(self, head, width, stop_above=None):
            if width < 0.015:
                return (8, 9, 11)  # too many, and more on the long bin
            return (4, 4, 4) if width <= 0.03 else (3, 3, 4)
    tried = _class_widths(Classes(), (0, 0), WIDTHS)
    assert len(tried) == CLASS_TRIES and tried == sorted(tried)
    assert all(0.015 <= w <= 0.03 for w in tried)
    assert _class_widths(Classes(), (0, 0), (0.001, 0.01)) == []


def test_preferring_counters_makes_heads_that_keep_the_decisions_both_ways_score_class():
    spec = from_hf_gpt2(ZOO / "bce_aastar", check=False)
    strings = _strings("aa-star", 12, 0)
    selectors = harden(spec, strings, BINS)
    counters = harden(spec, strings, BINS, prefer="counter")
    assert all(h.kind == "saturated" and h.class_widths for h in selectors.heads)
    assert [(h.kind, h.delta, h.role) for h in counters.heads] == [
        ("score-class", h.class_widths[0], "counter") for h in selectors.heads]
    labels = np.array(spec.output.labels, dtype=object)
    for group, share in zip(strings, counters.agreement):
        soft = Simulator(spec, "softmax").next_symbols(group)
        same = [next_symbol_sets(labels, forward(counters.spec, s).logits, s) == expected
                for s, expected in zip(group, soft)]
        assert share == np.mean(same) >= 0.99
    with pytest.raises(SatsimError, match="prefer"):
        harden(spec, strings, BINS, prefer="both")


class _StubJudge:
    """Two heads of one layer: (0, 0) keeps the decisions only as a selector (saturated),
    (0, 1) only as the one-class counter; together they do not."""

    searched = 2

    def __init__(self, *args, **kwargs) -> None:
        pass

    def classes(self, head, width, stop_above=None):
        return (1, 1) if width == ONE_CLASS else (9, 12)  # narrower: unbounded

    def keeps(self, options):
        wanted = {(0, 0): {("tolerant-hard", None), ("saturated", None)},  # tried, then kept
                  (0, 1): {("score-class", ONE_CLASS)}}
        fits = all(option in wanted[head] for head, option in options.items())
        return (1.0, 1.0) if fits and len(options) == 1 else None

    def agreement(self, options, stop_below=None, searched_only=True):
        return (1.0, 1.0) if self.keeps(options) or not options else (0.5, 0.5)


def test_a_head_that_only_the_plain_counter_keeps_is_score_class_with_one_class(monkeypatch):
    import satsim.analysis.harden as harden_module

    monkeypatch.setattr(harden_module, "_Judge", _StubJudge)
    spec = random_spec(0, n_layers=1, n_heads=2)
    selectors = harden(spec, [["ab"], ["abab"]], BINS)
    counters = harden(spec, [["ab"], ["abab"]], BINS, prefer="counter")
    # alone, each head keeps the decisions in one way; most faithful first (a tie: layer order)
    # keeps the selector, counters first keeps the counter, and the other head stays soft
    assert [(h.kind, h.delta, h.classes) for h in selectors.heads] == [
        ("saturated", None, ()), ("soft", None, ())]
    assert [(h.kind, h.delta, h.classes, h.role) for h in counters.heads] == [
        ("soft", None, (), "soft"), ("score-class", ONE_CLASS, (1, 1), "counter")]
