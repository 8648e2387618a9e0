"""attention_beta: training toward saturation, the scores' inverse temperature annealed from 1
to β over the run. The saved specs carry each step's β in their score scales, so the soft twin
of a checkpoint is the function trained at that step; a stack follows its runs alone."""

import json
import math
from dataclasses import replace

import numpy as np
import pytest
import torch

from satsim.model.io import load_spec
from satsim.soft import SoftTransformer
from satsim.training.checkpoint import spec_path
from satsim.training.config import TrainConfig
from satsim.training.loop import Trainer, accuracy, train
from satsim.training.stacked import Layout, stacked_forward
from tests.support.training import stacked_beside_alone, weights

pytestmark = pytest.mark.usefixtures("one_torch_thread")
BASE = {"lang": "majority", "task": "recognition", "split": "flare", "positional": "sinusoidal",
        "layers": 1, "d_model": 8, "heads": 2, "d_head": 4, "d_mlp": 8, "batch_size": 16,
        "train_size": 60, "eval_size": 20, "steps": 40, "checkpoint_every": 20,
        "log_every": 20, "probe_size": 2, "dtype": "float64", "device": "cpu", "seed": 5,
        "lr": 1e-2}


def test_beta_grows_geometrically_from_one_to_attention_beta():
    config = TrainConfig.from_dict({**BASE, "attention_beta": 16.0})
    assert [config.beta_at(t) for t in (0, 10, 20, 40)] == pytest.approx(
        [1.0, 2.0, 4.0, 16.0], rel=1e-15)
    assert TrainConfig.from_dict(BASE).beta_at(17) == 1.0
    for bad in (0.0, -1.0, math.inf, math.nan):
        with pytest.raises(Exception, match="attention_beta must be a finite number > 0"):
            TrainConfig.from_dict({**BASE, "attention_beta": bad})


def test_each_saved_spec_is_the_function_trained_at_its_step(tmp_path):
    config = TrainConfig.from_dict({**BASE, "attention_beta": 16.0})
    run = tmp_path / "run"
    train(config, run)
    summary = json.loads((run / "summary.json").read_text())
    trainer = Trainer(config, tmp_path / "data")  # the run's held-out sets
    for step in (0, 20, 40):
        spec = load_spec(str(spec_path(run, step)))
        assert spec.blocks[0].attn.score_scale == pytest.approx(config.beta_at(step) / 2.0)
        twin = SoftTransformer.from_spec(spec, device="cpu", dtype="float64")
        scores = {name: accuracy(twin, data, config.task)  # β = 1: the spec carries it
                  for name, data in trainer.data.held_out.items()}
        if step == 40:
            assert scores == summary["eval"]
        unscaled = replace(spec, blocks=tuple(replace(b, attn=replace(b.attn, scale=None))
                                              for b in spec.blocks))
        trainer.model = SoftTransformer.from_spec(unscaled, device="cpu", dtype="float64")
        assert trainer.held_out(step) == scores  # θ with β_step, as training scores it
    final = load_spec(str(run / "final.safetensors"))
    assert final.blocks[0].attn.score_scale == pytest.approx(16.0 / 2.0)


def test_a_resumed_annealed_run_ends_where_the_whole_run_ends(tmp_path):
    config = TrainConfig.from_dict({**BASE, "attention_beta": 30.0})
    train(config, tmp_path / "whole")
    resumed = tmp_path / "resumed"
    (resumed / "checkpoints").mkdir(parents=True)
    for name in ("step-00000020.safetensors", "step-00000020.state.pt"):
        (resumed / "checkpoints" / name).write_bytes(
            (tmp_path / "whole" / "checkpoints" / name).read_bytes())
    train(config, resumed, resume=True, notice=lambda message: None)
    assert np.array_equal(weights(tmp_path / "whole" / "final.safetensors"),
                          weights(resumed / "final.safetensors"))


def test_the_stacked_forward_multiplies_each_models_scores_by_its_beta(tmp_path):
    config = TrainConfig.from_dict({**BASE, "attention_beta": 100.0})
    trainer = Trainer(config, tmp_path / "run")
    layout = Layout.of([trainer.spec0, trainer.spec0])
    flat_rows = torch.zeros((2, layout.size), dtype=torch.float64)
    for row in range(2):
        views = layout.model_views(flat_rows, row, trainer.spec0)
        for name, param in trainer.model.named_parameters():
            views[name].copy_(3 * param.detach())  # sharper scores
    with torch.no_grad():
        for param in trainer.model.parameters():
            param.mul_(3)
    batch = trainer.data.batch(config.seed, 0, 16)
    last = batch.lengths - 1
    betas = torch.tensor([100.0, 2.5], dtype=torch.float64)
    stacked = stacked_forward(layout.spec, layout.views(flat_rows), batch.tokens.expand(2, -1, -1),
                              last.expand(2, -1), None, betas)[..., 0]
    for row, beta in enumerate(betas.tolist()):
        alone = trainer.model(batch.tokens, batch.lengths, beta=beta).logits[
            torch.arange(16), last, 0]
        assert torch.allclose(stacked[row], alone, rtol=0, atol=1e-12)


def test_runs_with_their_own_betas_in_one_stack_follow_their_runs_alone(tmp_path):
    group = [TrainConfig.from_dict({**BASE, "optimizer": "sgd", "lr": 0.1, **member})
             for member in ({"attention_beta": 1.0}, {"attention_beta": 4.0, "seed": 6},
                            {"attention_beta": 100.0, "seed": 7, "steps": 30})]
    for a, b in stacked_beside_alone(group, tmp_path):
        assert np.linalg.norm(a - b) <= 1e-12 * np.linalg.norm(a)
    plain = TrainConfig.from_dict({**group[2].to_dict(), "attention_beta": 1.0})
    train(plain, tmp_path / "plain")
    assert not np.allclose(weights(tmp_path / "plain" / "final.safetensors"),
                           weights(tmp_path / "alone2" / "final.safetensors"))
