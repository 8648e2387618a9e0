"""Shared fixtures, and the hypothesis profile of the inner loop."""

import pytest
from hypothesis import settings

FAST_EXAMPLES = 10
"""The most examples a hypothesis test runs under ``--hypothesis-profile=fast``."""

settings.register_profile("fast", max_examples=FAST_EXAMPLES, deadline=None)


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
    """Cap hypothesis tests' examples under the fast profile; skip cuda tests without a GPU."""
    if config.getoption("hypothesis_profile", None) == "fast":
        _cap_examples(items)
    marked = [item for item in items if item.get_closest_marker("cuda") is not None]
    if not marked:
        return
    import torch

    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU")
    for item in marked:
        item.add_marker(skip)


def _cap_examples(items) -> None:
    """Run at most FAST_EXAMPLES examples per hypothesis test, whatever its own @settings say.

    A profile sets only the default, and the tests name their own counts, so the cap is put on
    each test's settings (where @given reads them when the test runs); explicit @example cases
    still all run.
    """
    for item in items:
        test = getattr(item, "obj", None)
        own = getattr(test, "_hypothesis_internal_use_settings", None)
        if own is not None and own.max_examples > FAST_EXAMPLES:
            test._hypothesis_internal_use_settings = settings(own, max_examples=FAST_EXAMPLES)
