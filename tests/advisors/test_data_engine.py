"""The data advisor: Athena with one sharding instance while SQL expresses the transform and the data fits that
instance's memory; Spark for code SQL does not express or data past it. Its reason says why, in words."""

import pytest

from mlscale.advisors.data_engine import DataNeeds, advise_engine
from mlscale.specs import SpecError

GIB = 1024**3


def test_small_sql_data_stays_on_athena():
    choice = advise_engine(DataNeeds(raw_bytes=20_000_000))
    assert choice.engine == "athena"
    assert "SQL expresses the transform" in choice.reason and "0.02 GB of Parquet" in choice.reason


def test_data_past_one_instances_memory_goes_to_spark():
    # 16 GiB instance: half of it for the records; Parquet decodes to ~3x its size
    fits = advise_engine(DataNeeds(raw_bytes=2 * GIB, instance_memory_bytes=16 * GIB))
    too_big = advise_engine(DataNeeds(raw_bytes=3 * GIB, instance_memory_bytes=16 * GIB))
    assert fits.engine == "athena" and too_big.engine == "spark"
    assert "more than one sharding instance holds in memory" in too_big.reason
    assert too_big.decoded_bytes > too_big.memory_limit_bytes >= fits.decoded_bytes


def test_a_transform_sql_cannot_express_goes_to_spark_whatever_the_size():
    choice = advise_engine(DataNeeds(raw_bytes=1_000, transform="python"))
    assert choice.engine == "spark" and "needs Python code" in choice.reason


@pytest.mark.parametrize(
    ("needs", "field"),
    [
        (DataNeeds(raw_bytes=-1), "raw_bytes"),
        (DataNeeds(raw_bytes=1, transform="scala"), "transform"),
        (DataNeeds(raw_bytes=1, instance_memory_bytes=0), "instance_memory_bytes"),
    ],
)
def test_bad_needs_name_the_field(needs, field):
    with pytest.raises(SpecError) as error:
        advise_engine(needs)
    assert error.value.field == field
