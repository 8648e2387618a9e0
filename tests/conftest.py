"""Shared fixtures."""

import pytest


@pytest.fixture(scope="module")
def one_torch_thread():
    """Small tensors: one torch thread avoids OpenMP contention on a busy 2-core machine."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
