"""Gradient clipping (clip_norm, FLaRe's --gradient-clipping-threshold): a step moves θ by the
gradient scaled to the norm asked for, alone and in a stack."""

import numpy as np
import pytest

from satsim.training.config import TrainConfig
from satsim.training.loop import Trainer, train
from satsim.training.objective import loss_and_correct
from tests.support.training import stacked_beside_alone, weights

pytestmark = pytest.mark.usefixtures("one_torch_thread")
BASE = {"lang": "majority", "task": "recognition", "split": "flare", "positional": "sinusoidal",
        "layers": 1, "d_model": 8, "heads": 2, "d_head": 4, "d_mlp": 8, "batch_size": 16,
        "train_size": 60, "eval_size": 10, "checkpoint_every": 20, "log_every": 20,
        "probe_size": 2, "dtype": "float64", "device": "cpu", "seed": 5}


@pytest.mark.parametrize("clip_norm", [0.0, 1e-3, 1e6])
def test_one_sgd_step_moves_theta_by_the_gradient_scaled_to_the_clip_norm(tmp_path, clip_norm):
    config = TrainConfig.from_dict({**BASE, "optimizer": "sgd", "lr": 0.1, "steps": 1,
                                    "clip_norm": clip_norm})
    train(config, tmp_path / "run")
    model = Trainer(config, tmp_path / "fresh")  # θ0 and batch 0, unclipped gradient
    batch = model.data.batch(config.seed, 0, config.batch_size)
    logits = model.model(batch.tokens, batch.lengths).logits
    loss_and_correct(logits, batch, config.task)[0].backward()
    named = dict(model.model.named_parameters())
    theta = np.concatenate([named[k].detach().numpy().ravel() for k in sorted(named)])
    grad = np.concatenate([named[k].grad.numpy().ravel() for k in sorted(named)])
    norm = float(np.sqrt(np.sum(grad**2)))
    scale = 1.0 if clip_norm == 0 else min(1.0, clip_norm / (norm + 1e-6))
    assert (scale < 1) == (clip_norm == 1e-3)  # the tiny limit clips, the others do not
    assert np.allclose(weights(tmp_path / "run" / "final.safetensors"),
                       theta - 0.1 * scale * grad, rtol=0, atol=1e-12)


def test_runs_with_their_own_clip_norms_in_one_stack_follow_their_runs_alone(tmp_path):
    group = [TrainConfig.from_dict({**BASE, "steps": 40, "lr": 1e-2, **member}) for member in (
        {"clip_norm": 0.0}, {"clip_norm": 0.05, "seed": 6}, {"clip_norm": 1e-3, "seed": 7})]
    for a, b in stacked_beside_alone(group, tmp_path):
        assert np.linalg.norm(a - b) <= 1e-10 * np.linalg.norm(a)
    clipped = weights(tmp_path / "alone2" / "final.safetensors")
    unclipped = tmp_path / "unclipped"
    train(TrainConfig.from_dict({**group[2].to_dict(), "clip_norm": 0.0}), unclipped)
    assert not np.allclose(clipped, weights(unclipped / "final.safetensors"))  # clipping acted
