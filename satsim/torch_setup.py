"""Importing torch for a command: passive OpenMP waiting and an explicit thread count."""

from __future__ import annotations

import os
import sys


def import_torch(threads: int | None = None):
    """Import torch with idle OpenMP threads sleeping, and set its CPU threads if given.

    With spinning threads, 2 torch threads on a busy 2-core machine ran small models 5-20x
    slower than 1 thread (shared/DESIGN.md §6, the project brief), so the wait policy is set
    before torch loads.
    """
    if "torch" not in sys.modules:
        os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    import torch

    if threads is not None:
        torch.set_num_threads(threads)
    return torch
