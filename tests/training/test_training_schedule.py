"""FLaRe's schedule (lr_patience, lr_decay, stop_patience on the monitor split's cross-entropy):
the learning rate against torch's ReduceLROnPlateau, the stop against its definition, alone, in
a stack and resumed."""

import json

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from satsim.errors import SatsimError
from satsim.model.io import load_spec
from satsim.training.checkpoint import spec_path
from satsim.training.config import TrainConfig
from satsim.training.group import train_group
from satsim.training.loop import Trainer, mean_loss, train
from satsim.training.schedule import Plateau
from tests.support.training import weights

pytestmark = pytest.mark.usefixtures("one_torch_thread")
BASE = {"lang": "majority", "task": "recognition", "split": "flare", "positional": "sinusoidal",
        "layers": 1, "d_model": 8, "heads": 2, "d_head": 4, "d_mlp": 8, "batch_size": 16,
        "train_size": 60, "eval_size": 10, "checkpoint_every": 5, "log_every": 5,
        "probe_size": 2, "dtype": "float64", "device": "cpu", "seed": 5, "steps": 100,
        "lr": 3e-2, "lr_patience": 2, "stop_patience": 4, "monitor": "validation-long"}


def torch_lrs(losses, lr, patience, decay):
    """The lr after each loss, by torch's ReduceLROnPlateau with FLaRe's settings."""
    optimizer = torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=lr)
    scheduler = torch.optim.lr_scheduler.ReduceLROnPlateau(
        optimizer, mode="min", patience=patience - 1, factor=decay, threshold=0.0)
    out = []
    for loss in losses:
        scheduler.step(loss)
        out.append(optimizer.param_groups[0]["lr"])
    return out


def first_stop(losses, patience):
    """The first index k whose last ``patience`` losses none beat the best loss before them."""
    for k in range(patience, len(losses)):
        if min(losses[k - patience + 1: k + 1]) >= min(losses[: k - patience + 1]):
            return k
    return None


@settings(deadline=None)
@given(st.lists(st.sampled_from([0.1, 0.2, 0.3, 0.5, 0.7]), min_size=1, max_size=40),
       st.integers(1, 6), st.integers(1, 8), st.sampled_from([0.5, 0.1]))
def test_the_lr_and_the_stop_follow_torchs_plateau_scheduler_and_the_definition(
        losses, lr_patience, stop_patience, decay):
    plateau = Plateau(1e-3, lr_patience, decay, stop_patience)
    lrs, stops = [], []
    for loss in losses:
        stops.append(plateau.update(loss))
        lrs.append(plateau.lr)
    assert lrs == pytest.approx(torch_lrs(losses, 1e-3, lr_patience, decay), rel=1e-15)
    expected = first_stop(losses, stop_patience)
    assert (stops.index(True) if True in stops else None) == expected


def monitored(run):
    rows = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    return [(row["step"], row["monitor_loss"], row["lr"]) for row in rows if "monitor_loss" in row]


def test_a_run_decays_its_lr_and_stops_where_its_monitored_losses_say(tmp_path):
    config = TrainConfig.from_dict(BASE)
    result = train(config, tmp_path / "run")
    rows = monitored(tmp_path / "run")
    losses = [loss for step, loss, _ in rows if step > 0]
    assert rows[0][0] == 0 and [step for step, _, _ in rows] == list(range(0, result.steps, 5))
    assert [lr for step, _, lr in rows if step > 0] == pytest.approx(
        torch_lrs(losses, config.lr, 2, 0.5), rel=1e-15)
    assert min(lr for _, _, lr in rows) < config.lr  # the lr decayed at least once
    # the stop is decided at step result.steps, whose loss is recomputed from its checkpoint
    trainer = Trainer(config, tmp_path / "again")
    tensors = load_spec(str(spec_path(tmp_path / "run", result.steps))).tensors()
    with torch.no_grad():
        for name, param in trainer.model.named_parameters():
            param.copy_(torch.from_numpy(np.array(tensors[name])))
    last = mean_loss(trainer.model, trainer.data.held_out["validation-long"], config.task)
    assert 0 < result.steps < config.steps
    assert first_stop([*losses, last], 4) == len(losses)
    assert first_stop(losses, 4) is None
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["steps"] == result.steps
    assert np.array_equal(weights(tmp_path / "run" / "final.safetensors"),
                          weights(spec_path(tmp_path / "run", result.steps)))


def test_runs_with_the_schedule_in_a_stack_follow_their_runs_alone_and_leave_when_they_stop(
        tmp_path):
    group = [TrainConfig.from_dict({**BASE, **member}) for member in (
        {}, {"lr": 0.1, "seed": 6}, {"stop_patience": 0, "steps": 60})]
    results = train_group(group, [tmp_path / f"group{i}" for i in range(len(group))])
    steps = []
    for index, config in enumerate(group):
        alone = train(config, tmp_path / f"alone{index}")
        assert results[index].steps == alone.steps
        steps.append(alone.steps)
        a = weights(tmp_path / f"alone{index}" / "final.safetensors")
        b = weights(tmp_path / f"group{index}" / "final.safetensors")
        assert np.linalg.norm(a - b) <= 1e-10 * np.linalg.norm(a)
        for one, two in zip(monitored(tmp_path / f"alone{index}"),
                            monitored(tmp_path / f"group{index}"), strict=True):
            assert one[0] == two[0] and one[2] == two[2]
            assert one[1] == pytest.approx(two[1], rel=1e-10)
    assert steps[2] == 60 and steps[0] != steps[1]  # no stop without stop_patience


def test_a_resumed_run_rebuilds_its_schedule_and_ends_as_the_uninterrupted_run(tmp_path):
    config = TrainConfig.from_dict(BASE)
    whole = train(config, tmp_path / "whole")
    train(TrainConfig.from_dict({**BASE, "steps": 40}), tmp_path / "parts")
    parts = train(config, tmp_path / "parts", resume=True)
    assert parts.steps == whole.steps
    assert monitored(tmp_path / "parts") == monitored(tmp_path / "whole")
    assert np.array_equal(weights(tmp_path / "parts" / "final.safetensors"),
                          weights(tmp_path / "whole" / "final.safetensors"))


@pytest.mark.parametrize("change, message", [
    ({"lr_patience": -1}, "lr_patience must be a non-negative integer, got -1"),
    ({"stop_patience": 1.5}, "stop_patience must be a non-negative integer, got 1.5"),
    ({"lr_decay": 0}, "lr_decay must be a number in (0, 1], got 0"),
    ({"lr_decay": 1.5}, "lr_decay must be a number in (0, 1], got 1.5"),
    ({"monitor": ""}, "monitor must name a held-out split, got ''"),
])
def test_bad_schedule_settings_are_one_line_errors(change, message):
    with pytest.raises(SatsimError) as error:
        TrainConfig.from_dict({**BASE, **change})
    assert str(error.value) == message


def test_a_monitor_split_the_run_lacks_is_refused_before_training(tmp_path):
    config = TrainConfig.from_dict({**BASE, "monitor": "nowhere"})
    with pytest.raises(SatsimError, match="monitor 'nowhere' is not a held-out split of this "
                                          "run; it has validation-short, validation-long"):
        train(config, tmp_path / "run")
    assert not (tmp_path / "run" / "metrics.jsonl").exists()
