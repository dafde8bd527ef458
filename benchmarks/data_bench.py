"""Data-stage benchmarks, each against a baseline measured in the same run.

- Shard writing: include/processing/shard.py's writer against pyarrow's
  write_dataset on the same records, and against a raw copy of the same
  number of bytes (what the disk allows).
- Loader: samples/s from .rec shards through include/training/shard_loader.py
  against one file per record through a plain torch DataLoader (same batch,
  same workers), at the default data size and at four times it.
"""

from __future__ import annotations

import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "include" / "processing"))
sys.path.insert(0, str(REPO / "include" / "training"))

WRITE_RECORDS = int(os.environ.get("MLSCALE_BENCH_WRITE_RECORDS", 2_000_000))
LOADER_RECORDS = int(os.environ.get("MLSCALE_BENCH_LOADER_RECORDS", 20_000))
SHARDS = 8
REPEATS = 3


def _records(count: int) -> np.ndarray:
    from shard import record_dtype

    rng = np.random.default_rng(0)
    records = np.empty(count, dtype=record_dtype(8))
    records["label"] = rng.integers(0, 10, count)
    records["pixels"] = rng.integers(0, 256, (count, 8, 8), dtype=np.uint8)
    return records


def bench_shard_writing(work: Path) -> dict:
    import pyarrow as pa
    import pyarrow.dataset as ds
    from shard import write_shards

    records = _records(WRITE_RECORDS)
    size = records.nbytes
    table = pa.table(
        {
            "label": records["label"],
            "pixels": pa.FixedSizeBinaryArray.from_buffers(
                pa.binary(64), len(records), [None, pa.py_buffer(records["pixels"].tobytes())]
            ),
        }
    )
    source = work / "raw.bin"
    source.write_bytes(records.tobytes())

    def shards():
        out = work / "shards"
        shutil.rmtree(out, ignore_errors=True)
        out.mkdir()
        write_shards(str(out), "algo-1", records, SHARDS)
        os.sync()

    def arrow_dataset():
        out = work / "dataset"
        shutil.rmtree(out, ignore_errors=True)
        ds.write_dataset(
            table,
            out,
            format="parquet",
            max_rows_per_file=len(records) // SHARDS + 1,
            max_rows_per_group=len(records) // SHARDS + 1,
        )
        os.sync()

    def raw_copy():
        shutil.copyfile(source, work / "copy.bin")
        os.sync()

    actions = {"shards": shards, "pyarrow write_dataset": arrow_dataset, "raw copy": raw_copy}
    times: dict[str, list[float]] = {name: [] for name in actions}
    for _ in range(REPEATS):  # interleaved rounds: drift hits every side
        for name, action in actions.items():
            os.sync()  # each side is charged for flushing its own writes only (not the source's, or the last side's)
            started = time.perf_counter()
            action()
            times[name].append(time.perf_counter() - started)
    return {name: size / min(seconds) / 1e6 for name, seconds in times.items()}


def bench_loader(work: Path, count: int | None = None) -> dict:
    import torch
    from shard import write_shard
    from shard_loader import shard_loader
    from torch.utils.data import DataLoader, Dataset

    count = count or LOADER_RECORDS
    records = _records(count)
    shard_dir, file_dir = work / "loader-shards", work / "loader-files"
    shard_dir.mkdir()
    file_dir.mkdir()
    for index, part in enumerate(np.array_split(records, SHARDS)):
        write_shard(str(shard_dir / f"shard-{index:05d}.rec"), part)
    for index, record in enumerate(records):
        np.save(file_dir / f"{index:08d}.npy", record)

    class OneFilePerRecord(Dataset):
        def __init__(self, folder: Path):
            self.files = sorted(folder.iterdir())

        def __len__(self):
            return len(self.files)

        def __getitem__(self, index):
            record = np.load(self.files[index])
            return torch.from_numpy(record["pixels"].astype(np.float32) / 255.0).unsqueeze(0), int(record["label"])

    def shards():
        batches, _ = shard_loader(str(shard_dir), batch_size=256, workers=2, shuffle_buffer=2048)
        return sum(len(labels) for _, labels in batches)

    def files():
        loader = DataLoader(OneFilePerRecord(file_dir), batch_size=256, shuffle=True, num_workers=2, prefetch_factor=4)
        return sum(len(labels) for _, labels in loader)

    rates = {}
    for name, action in (("shards", shards), ("one file per record", files)):
        seconds = []
        for _ in range(REPEATS):
            started = time.perf_counter()
            assert action() == count
            seconds.append(time.perf_counter() - started)
        rates[name] = count / statistics.median(seconds)
    return rates


def figures(quick: bool = False) -> list:
    from goals import Figure

    global WRITE_RECORDS, LOADER_RECORDS
    if quick:
        WRITE_RECORDS = min(WRITE_RECORDS, 400_000)  # the loader keeps its size: at 8,000 its start-up was half
    with tempfile.TemporaryDirectory(dir=REPO / ".mlscale" if (REPO / ".mlscale").exists() else None) as tmp:
        work = Path(tmp)
        write = bench_shard_writing(work)
        loaders = {}
        for scale in (1, 4):  # the default data size and four times it
            (work / f"x{scale}").mkdir()
            loaders[scale] = bench_loader(work / f"x{scale}", LOADER_RECORDS * scale)
    note = f"{WRITE_RECORDS:,} records into {SHARDS} shards, best of {REPEATS}"
    return [
        Figure("shard_writing_vs_pyarrow", write["shards"], write["pyarrow write_dataset"], ">= 1.0", "MB/s", note),
        Figure("shard_writing_vs_raw_copy", write["shards"], write["raw copy"], ">= 0.7", "MB/s", note),
        *(
            Figure(
                f"loader_vs_one_file_per_record{'' if scale == 1 else f'_{scale}x'}",
                loader["shards"],
                loader["one file per record"],
                ">= 5",
                "samples/s",
                f"{LOADER_RECORDS * scale:,} records, batch 256, 2 workers, median of {REPEATS}",
            )
            for scale, loader in loaders.items()
        ),
    ]


def main() -> None:
    with tempfile.TemporaryDirectory(dir=REPO / ".mlscale" if (REPO / ".mlscale").exists() else None) as tmp:
        work = Path(tmp)
        write = bench_shard_writing(work)
        print(
            f"Shard writing ({WRITE_RECORDS} records, {SHARDS} shards), MB/s: "
            + ", ".join(f"{k} {v:.0f}" for k, v in write.items())
        )
        print(
            f"  ratio shards / pyarrow write_dataset {write['shards'] / write['pyarrow write_dataset']:.2f}, "
            f"shards / raw copy {write['shards'] / write['raw copy']:.2f}"
        )
        loader = bench_loader(work)
        print(
            f"Loader ({LOADER_RECORDS} records, batch 256, 2 workers), samples/s: "
            + ", ".join(f"{k} {v:.0f}" for k, v in loader.items())
        )
        print(f"  ratio shards / one file per record {loader['shards'] / loader['one file per record']:.2f}")


if __name__ == "__main__":
    main()
