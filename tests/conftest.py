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


@pytest.fixture(scope="module")
def ray_cluster(request):
    """One local Ray cluster for the module, of the module's ``RAY_CPUS`` CPUs (default 2).

    Ray comes with the test extra, so a missing Ray fails here rather than skips.
    """
    try:
        import ray
    except ModuleNotFoundError:
        pytest.fail("Ray is not installed: pip install -e '.[test]' (or deselect: -m 'not ray')")
    ray.init(num_cpus=getattr(request.module, "RAY_CPUS", 2), include_dashboard=False,
             logging_level="WARNING", log_to_driver=False, object_store_memory=100 * 2**20)
    yield
    ray.shutdown()


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
