"""Checkpoints of a run: the spec (safetensors) beside the optimiser state (torch, weights only).

``checkpoints/step-00000250.safetensors`` holds θ after 250 steps as a ModelSpec;
``step-00000250.state.pt`` holds the optimiser state and θ at the previous logged step (for the
direction cosine). Both are written to a temporary name and renamed, so a run killed while
saving leaves the previous checkpoint intact; loading never unpickles (``weights_only=True``).
"""

from __future__ import annotations

import io
import re
from dataclasses import dataclass
from pathlib import Path

from satsim.errors import SatsimError, first_line
from satsim.model.io import load_spec, save_spec
from satsim.model.spec import ModelSpec
from satsim.output import write_bytes_atomically

PATTERN = re.compile(r"step-(\d{8})\.safetensors$")


def spec_path(run: Path, step: int) -> Path:
    """Where the spec of the checkpoint at ``step`` lives."""
    return Path(run) / "checkpoints" / f"step-{step:08d}.safetensors"


def state_path(run: Path, step: int) -> Path:
    """Where the optimiser state of the checkpoint at ``step`` lives."""
    return spec_path(run, step).with_suffix(".state.pt")


def spec_steps(run: Path) -> list[int]:
    """Steps that have a checkpoint spec, ascending (the state beside it may be missing)."""
    folder = Path(run) / "checkpoints"
    if not folder.is_dir():
        return []
    return sorted(int(m.group(1)) for p in folder.iterdir() if (m := PATTERN.match(p.name)))


def checkpoint_steps(run: Path) -> list[int]:
    """Steps of the complete checkpoints (spec and state both there), ascending."""
    return [s for s in spec_steps(run) if state_path(run, s).exists()]


def holds_run(run: Path) -> bool:
    """Whether a run folder holds anything finished: a complete checkpoint or a summary.

    A start that failed before its first checkpoint leaves at most config.json and empty
    metrics behind: that is not a run, and a new ``satsim train`` may start there.
    """
    return bool(checkpoint_steps(run)) or (Path(run) / "summary.json").exists()


def save_checkpoint(run: Path, step: int, spec: ModelSpec, state: dict) -> None:
    """Write the checkpoint at ``step``: the spec, then the state (which marks it complete)."""
    import torch

    spec_path(run, step).parent.mkdir(parents=True, exist_ok=True)
    save_spec(spec, spec_path(run, step))
    # Serialised in memory, written by Python: torch's own file writer reports a full disk as
    # a RuntimeError, Python as an OSError that says what happened.
    buffer = io.BytesIO()
    torch.save(state, buffer)
    write_bytes_atomically(state_path(run, step), buffer.getvalue())


@dataclass
class Checkpoint:
    """A loaded checkpoint."""

    step: int
    spec: ModelSpec
    state: dict


def load_checkpoint(run: Path, step: int) -> Checkpoint:
    """Read the checkpoint at ``step`` (one-line SatsimError if it is damaged)."""
    import torch

    spec = load_spec(str(spec_path(run, step)))
    try:
        state = torch.load(state_path(run, step), map_location="cpu", weights_only=True)
    except Exception as error:  # torch raises many kinds for a damaged file
        raise SatsimError(f"cannot read checkpoint state {state_path(run, step)}: "
                          f"{first_line(error)}") from None
    return Checkpoint(step, spec, state)
