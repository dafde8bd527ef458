import pytest

from mlscale.advisors.sharding import plan_shards
from mlscale.specs import SpecError

MB, GB = 10**6, 10**9


@pytest.mark.parametrize(
    "size, records, instances, workers, shards",
    [
        (5 * MB, 70_000, 2, 2, 4),  # small data: one shard per reader
        (100 * GB, 10**8, 4, 4, 391),  # 100 GB / 256 MB
        (10 * GB, 10**6, 16, 8, 128),  # many readers win over size
        (1 * MB, 3, 4, 4, 3),  # never more shards than records
        (5 * MB, 70_000, 2, 0, 2),  # no loader workers: the training process is each instance's reader
    ],
)
def test_shard_count(size, records, instances, workers, shards):
    plan = plan_shards(size, records, instances, workers)
    assert plan.shards == shards
    assert plan.records_per_shard * plan.shards >= records


def test_shards_stay_within_100_mb_to_1_gb_at_scale():
    plan = plan_shards(500 * GB, 5 * 10**8, 2, 2)
    assert 100 * MB <= plan.bytes_per_shard <= 1000 * MB
    assert "256 MB" in plan.reason


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"records": 0}, "records: must be an integer >= 1"),
        ({"instances": 0}, "instances: must be an integer >= 1"),
        ({"dataset_bytes": 0}, "dataset_bytes: must be an integer >= 1"),
        ({"loader_workers": -1}, "loader_workers: must be an integer >= 0"),
    ],
)
def test_bad_plan_inputs(kwargs, message):
    args = {"dataset_bytes": 10, "records": 10, "instances": 1, **kwargs}
    with pytest.raises(SpecError, match=message):
        plan_shards(**args)
