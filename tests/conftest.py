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


def pytest_collection_modifyitems(config, items):
    """Skip the tests marked cuda where torch sees no CUDA GPU (torch is imported only then)."""
    marked = [item for item in items if item.get_closest_marker("cuda") is not None]
    if not marked:
        return
    import torch

    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU")
    for item in marked:
        item.add_marker(skip)
