"""The storage advisor against AWS's published figures (S3 request rates, FSx for Lustre throughput tiers)."""

import pytest

from mlscale.advisors.storage import StorageNeeds, advise_storage, fsx_capacity_gib
from mlscale.specs import SpecError

GB, MB = 10**9, 10**6


def needs(**overrides):
    fields = dict(
        dataset_bytes=10 * GB,
        object_count=50,
        epochs=10,
        instances=1,
        gpus_per_instance=1,
        samples_per_second_per_gpu=1000,
        bytes_per_sample=100_000,
    )
    fields.update(overrides)
    return StorageNeeds(**fields)


CASES = [
    # (case, overrides, storage, mode, deployment, capacity GiB, tier)
    ("small data -> File", {}, "s3", "File", None, None, None),
    ("50 GB still File", {"dataset_bytes": 50 * GB}, "s3", "File", None, None, None),
    # 500 GB in 1 GB shards, 8 GPUs x 2000 x 100 KB = 1.6 GB/s; S3 5500 x 8 MiB x 0.5 = 23 GB/s -> stream it
    (
        "big shards, S3 keeps up -> FastFile",
        {"dataset_bytes": 500 * GB, "object_count": 500, "gpus_per_instance": 8, "samples_per_second_per_gpu": 2000},
        "s3",
        "FastFile",
        None,
        None,
        None,
    ),
    # 2 TB, 16 x 8 GPUs x 5000 x 500 KB = 320 GB/s > S3's 23 GB/s -> scratch FSx sized for throughput:
    # 320,000 / 200 MB/s/TiB = 1600 TiB = 1,638,400 GiB -> 1,639,200 (a multiple of 2400)
    (
        "throughput past S3 -> FSx SCRATCH_2",
        {
            "dataset_bytes": 2000 * GB,
            "object_count": 2000,
            "instances": 16,
            "gpus_per_instance": 8,
            "samples_per_second_per_gpu": 5000,
            "bytes_per_sample": 500_000,
        },
        "fsx_lustre",
        None,
        "SCRATCH_2",
        1639200,
        200,
    ),
    # many 1 MB files: S3 would serve 5500 x 1 MB x 0.5 = 2.75 GB/s < 4 GB/s needed -> FSx, and shard them
    (
        "small objects past S3's GET budget -> FSx",
        {
            "dataset_bytes": 200 * GB,
            "object_count": 200_000,
            "instances": 4,
            "gpus_per_instance": 8,
            "samples_per_second_per_gpu": 1250,
            "bytes_per_sample": 100_000,
        },
        "fsx_lustre",
        None,
        "SCRATCH_2",
        21600,
        200,
    ),
    # kept between jobs: PERSISTENT_2, the lowest tier that carries 25 GB/s at the data's own size:
    # 250 TB -> 235,200 GiB (229.7 TiB) x 125 MB/s/TiB = 28.7 GB/s
    (
        "reused, huge data -> PERSISTENT_2 125",
        {
            "dataset_bytes": 250_000 * GB,
            "object_count": 250_000,
            "instances": 8,
            "gpus_per_instance": 8,
            "samples_per_second_per_gpu": 2500,
            "bytes_per_sample": 156_250,
            "reuse_across_jobs": True,
        },
        "fsx_lustre",
        None,
        "PERSISTENT_2",
        235200,
        125,
    ),
    # 100 TB -> 93,600 GiB: 250 gives 22.9 GB/s < 30 GB/s needed, 500 gives 45.7 GB/s
    (
        "reused, large data -> PERSISTENT_2 500",
        {
            "dataset_bytes": 100_000 * GB,
            "object_count": 100_000,
            "instances": 8,
            "gpus_per_instance": 8,
            "samples_per_second_per_gpu": 3000,
            "bytes_per_sample": 156_250,
            "reuse_across_jobs": True,
        },
        "fsx_lustre",
        None,
        "PERSISTENT_2",
        93600,
        500,
    ),
    # 1 TB but 64 GB/s: no tier carries it on 1.2 TiB -> 1000 MB/s/TiB on 64 TiB (67,200 GiB)
    (
        "reused, fast -> PERSISTENT_2 1000 sized for throughput",
        {
            "dataset_bytes": 1000 * GB,
            "object_count": 1000,
            "instances": 8,
            "gpus_per_instance": 8,
            "samples_per_second_per_gpu": 4000,
            "bytes_per_sample": 250_000,
            "reuse_across_jobs": True,
        },
        "fsx_lustre",
        None,
        "PERSISTENT_2",
        67200,
        1000,
    ),
    # reuse alone does not move data S3 can serve
    (
        "reused but S3 keeps up -> FastFile",
        {
            "dataset_bytes": 10_000 * GB,
            "object_count": 100,
            "instances": 2,
            "gpus_per_instance": 8,
            "samples_per_second_per_gpu": 750,
            "bytes_per_sample": 100_000,
            "reuse_across_jobs": True,
        },
        "s3",
        "FastFile",
        None,
        None,
        None,
    ),
    ("already on EFS -> mount it", {"dataset_bytes": 500 * GB, "data_on_efs": True}, "efs", None, None, None, None),
]


@pytest.mark.parametrize("case, overrides, storage, mode, deployment, capacity, tier", CASES, ids=[c[0] for c in CASES])
def test_storage_choice(case, overrides, storage, mode, deployment, capacity, tier):
    choice = advise_storage(needs(**overrides))
    assert (choice.storage, choice.input_mode, choice.fsx_deployment_type) == (storage, mode, deployment), choice.reason
    assert choice.fsx_storage_capacity_gib == capacity
    assert choice.fsx_throughput_mb_per_s_per_tib == tier
    if storage == "fsx_lustre":  # sized to carry the throughput and hold the data
        assert capacity / 1024 * tier >= choice.required_mb_per_s
        assert capacity * 1024**3 >= needs(**overrides).dataset_bytes
    assert choice.reason


def test_reason_says_why_in_words():
    choice = advise_storage(
        needs(
            dataset_bytes=200 * GB,
            object_count=200_000,
            instances=4,
            gpus_per_instance=8,
            samples_per_second_per_gpu=1250,
            bytes_per_sample=100_000,
        )
    )
    assert "more than S3's" in choice.reason and "SCRATCH_2" in choice.reason and "shards" in choice.reason
    assert choice.pack_into_shards is True


@pytest.mark.parametrize(
    "gib, expected", [(1, 1200), (1200, 1200), (1201, 2400), (2400, 2400), (2401, 4800), (10_000, 12_000)]
)
def test_fsx_sizes_are_valid_lustre_sizes(gib, expected):
    assert fsx_capacity_gib(gib) == expected


@pytest.mark.parametrize(
    "overrides, message",
    [
        ({"dataset_bytes": 0}, "dataset_bytes: must be > 0"),
        ({"object_count": 0}, "object_count: must be >= 1"),
        ({"epochs": 0}, "epochs: must be from 1 to 10000"),
        ({"instances": 0}, "instances: must be from 1 to 1000"),
        ({"gpus_per_instance": 0}, "gpus_per_instance: must be from 1 to 64"),
        ({"samples_per_second_per_gpu": -1}, "samples_per_second_per_gpu: must be > 0"),
        ({"bytes_per_sample": 0}, "bytes_per_sample: must be > 0"),
        ({"s3_prefixes": 0}, "s3_prefixes: must be >= 1"),
    ],
)
def test_out_of_range_inputs_are_rejected(overrides, message):
    with pytest.raises(SpecError, match=message):
        advise_storage(needs(**overrides))
