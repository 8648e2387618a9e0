"""Helpers of the training tests: a model file's weights as one vector, and a stack beside its
runs trained one by one."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from satsim.model.io import load_spec


def weights(path) -> np.ndarray:
    """Every tensor of the model file at ``path``, flattened in the order of their names."""
    tensors = load_spec(str(path)).tensors()
    return np.concatenate([np.ravel(tensors[key]) for key in sorted(tensors)])


def stacked_beside_alone(configs, folder: Path) -> list[tuple[np.ndarray, np.ndarray]]:
    """Train ``configs`` as one stack (FOLDER/group<i>) and each alone (FOLDER/alone<i>).

    Per run, the final weights trained alone and in the stack.
    """
    from satsim.training.group import train_group
    from satsim.training.loop import train

    train_group(configs, [folder / f"group{i}" for i in range(len(configs))])
    pairs = []
    for index, config in enumerate(configs):
        train(config, folder / f"alone{index}")
        pairs.append((weights(folder / f"alone{index}" / "final.safetensors"),
                      weights(folder / f"group{index}" / "final.safetensors")))
    return pairs
