"""The shard script and the shard loader, run as a job would run them (plain processes, no mlscale)."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from datetime import date
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
import torch

from mlscale_example.datasets.raw_digits import generate_day
from tests.conftest import REPO

SHARD = REPO / "include" / "processing" / "shard.py"
sys.path.insert(0, str(REPO / "include" / "training"))
from shard_loader import iterate_shard, shard_loader  # noqa: E402


@pytest.fixture(scope="module")
def raw_dir(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("raw")
    for day in (date(2026, 11, 1), date(2026, 11, 2)):
        (folder / f"dt={day}").mkdir()
        pq.write_table(generate_day(day, 1003), folder / f"dt={day}" / "part-00000.parquet")
    return folder


def shard(raw_dir: Path, out: Path, *args: str) -> subprocess.CompletedProcess:
    (out / "config").mkdir(parents=True, exist_ok=True)
    (out / "config" / "resourceconfig.json").write_text(json.dumps({"current_host": "algo-1", "hosts": ["algo-1"]}))
    return subprocess.run(
        [
            sys.executable,
            str(SHARD),
            "--input-dir",
            str(raw_dir),
            "--output-dir",
            str(out / "shards"),
            "--test-dir",
            str(out / "test"),
            *args,
        ],
        env={"SAGEMAKER_PROCESSING_ROOT": str(out)},
        capture_output=True,
        text=True,
    )


def test_days_differ_and_images_are_stored_at_twice_the_resolution():
    first, second = generate_day(date(2026, 11, 1), 50), generate_day(date(2026, 11, 2), 50)
    assert len(first.column("pixels")[0].as_py()) == 16 * 16
    assert first.column("pixels").to_pylist() != second.column("pixels").to_pylist()
    assert generate_day(date(2026, 11, 1), 50).equals(first)  # same day, same data


def test_equal_shards_with_manifest_and_held_out_test(raw_dir, tmp_path):
    result = shard(raw_dir, tmp_path, "--shards", "4", "--seed", "3", "--test-fraction", "0.1")
    assert result.returncode == 0, result.stderr
    manifest = json.loads((tmp_path / "shards" / "manifest-algo-1.json").read_text())
    counts = [s["records"] for s in manifest["shards"]]
    assert sum(counts) + manifest["test_records"] == 2006 and manifest["test_records"] == 200
    assert max(counts) - min(counts) <= 1
    for entry in manifest["shards"]:
        data = (tmp_path / "shards" / entry["file"]).read_bytes()
        assert hashlib.sha256(data).hexdigest() == entry["sha256"] and len(data) == entry["bytes"]
    records = np.concatenate([c for f in sorted((tmp_path / "shards").glob("*.rec")) for c in iterate_shard(str(f))])
    assert records["pixels"].shape[1:] == (8, 8)  # resized once, here, not every epoch
    assert not np.array_equal(records["label"][:50], np.sort(records["label"][:50]))  # shuffled


def test_same_seed_same_shards(raw_dir, tmp_path):
    shard(raw_dir, tmp_path / "a", "--shards", "3", "--seed", "5")
    shard(raw_dir, tmp_path / "b", "--shards", "3", "--seed", "5")
    shard(raw_dir, tmp_path / "c", "--shards", "3", "--seed", "6")
    digest = lambda d: json.loads((d / "shards" / "manifest-algo-1.json").read_text())["shards"][0]["sha256"]  # noqa: E731
    assert digest(tmp_path / "a") == digest(tmp_path / "b") != digest(tmp_path / "c")


@pytest.mark.parametrize(
    "args, message",
    [
        (["--shards", "0"], "--shards must be >= 1, got 0"),
        (["--shards", "5000"], "2006 records cannot fill 5000 shards"),
        (["--shards", "2", "--test-fraction", "1.5"], "--test-fraction must be in [0, 1), got 1.5"),
        (["--shards", "2", "--resolution", "5"], "cannot resize 16x16 images to 5x5"),
    ],
)
def test_bad_shard_arguments(raw_dir, tmp_path, args, message):
    result = shard(raw_dir, tmp_path, *args)
    assert result.returncode != 0 and message in result.stderr


def _record_keys(labels, pixels) -> list[bytes]:
    return [bytes([int(label)]) + np.asarray(image).tobytes() for label, image in zip(labels, pixels)]


def test_loader_reads_every_record_once_across_ranks_and_workers_shuffled(raw_dir, tmp_path):
    shard(raw_dir, tmp_path, "--shards", "4", "--seed", "1")
    on_disk, seen, sizes = [], [], []
    for path in sorted((tmp_path / "shards").glob("*.rec")):
        for chunk in iterate_shard(str(path)):
            on_disk += _record_keys(chunk["label"], chunk["pixels"].astype(np.float32) / 255.0)
    for rank in range(2):
        batches, stats = shard_loader(
            str(tmp_path / "shards"), batch_size=64, rank=rank, world_size=2, workers=2, shuffle_buffer=256
        )
        for images, labels in batches:
            assert images.shape[1:] == (1, 8, 8) and images.dtype == torch.float32 and float(images.max()) <= 1.0
            assert labels.dtype == torch.int64 and len(labels) <= 64
            sizes.append(len(labels))
            seen += _record_keys(labels.numpy(), images.squeeze(1).numpy())
        assert stats.batches > 0 and "data_wait_fraction=" in stats.line()
    assert len(seen) == 2006 and sorted(seen) == sorted(on_disk)  # each record once, across ranks and workers
    assert seen != on_disk  # shuffled, not in the shards' order
    assert sizes.count(64) >= len(sizes) - 4  # full batches, but for each worker's last
