"""`satsim benchmark flare --engine ray` on a real local Ray cluster: the local run's tables.

Ray comes with the test extra, so a missing Ray is an error here, not a skip; without it, run
``pytest -m "not ray"``.
"""

import pytest

from tests.benchmarks.test_benchmark_flare import benchmark, reference, tables  # noqa: F401 (a fixture)

pytestmark = [pytest.mark.slow, pytest.mark.ray,  # slow: a local Ray cluster
              pytest.mark.usefixtures("one_torch_thread")]


def test_the_ray_engine_gives_the_local_tables_byte_for_byte(reference, ray_cluster,  # noqa: F811
                                                             tmp_path):
    whole, rows = reference
    on_ray = benchmark(tmp_path / "ray", "--engine", "ray")
    assert tables(tmp_path / "ray") == tables(whole)
    def by_name(models):  # rows stream in the order the runs finish
        return {row["name"]: {k: v for k, v in row.items() if k != "seconds"} for row in models}

    assert by_name(on_ray["model"]) == by_name(rows["model"])
    assert on_ray["language"] == rows["language"]
