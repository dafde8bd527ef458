"""Read pre-shuffled .rec shards (written by include/processing/shard.py) for training.

Sequential reads of whole shards by parallel workers, a shuffle buffer across
shards, and prefetch of more than one batch ahead, on torch's DataLoader.
Travels in the training job's source dir: imports nothing from mlscale.

    loader, stats = shard_loader(channel_dir, batch_size=64, rank=0, world_size=2, epoch=1)
    for images, labels in loader: ...
    print(stats.line())  # "data_wait_fraction=0.031 ..." for the diagnosis stage
"""

import glob
import json
import os
import random
import time

import numpy as np
import torch
from torch.utils.data import DataLoader, IterableDataset, get_worker_info

MAGIC = b"MLSR1\n"
CHUNK_RECORDS = 4096


def read_header(path: str):
    with open(path, "rb") as f:
        if f.read(len(MAGIC)) != MAGIC:
            raise ValueError(f"{path} is not an MLSR1 shard")
        header = json.loads(f.readline())
        offset = f.tell()
    dtype = np.dtype([tuple(field) if len(field) == 2 else (field[0], field[1], tuple(field[2]))
                      for field in header["dtype"]])  # fmt: skip
    return header["records"], dtype, offset


def iterate_shard(path: str):
    """Yield structured-array chunks of a shard, reading it front to back."""
    count, dtype, offset = read_header(path)
    with open(path, "rb") as f:
        f.seek(offset)
        remaining = count
        while remaining:
            n = min(CHUNK_RECORDS, remaining)
            yield np.frombuffer(f.read(n * dtype.itemsize), dtype=dtype, count=n)
            remaining -= n


class ShardStream(IterableDataset):
    """Samples from this rank's shards; DataLoader workers split them further."""

    def __init__(self, shards, shuffle_buffer: int, seed: int):
        self.shards, self.shuffle_buffer, self.seed = list(shards), shuffle_buffer, seed

    def __iter__(self):
        worker = get_worker_info()
        mine = self.shards if worker is None else self.shards[worker.id :: worker.num_workers]
        rng = random.Random(self.seed + (worker.id if worker else 0))
        order = list(mine)
        rng.shuffle(order)
        buffer = []
        for path in order:
            for chunk in iterate_shard(path):
                for record in chunk:
                    buffer.append(record)
                    if len(buffer) >= self.shuffle_buffer:
                        yield self._sample(buffer.pop(rng.randrange(len(buffer))))
        rng.shuffle(buffer)
        for record in buffer:
            yield self._sample(record)

    @staticmethod
    def _sample(record):
        image = torch.from_numpy(record["pixels"].astype(np.float32) / 255.0).unsqueeze(0)
        return image, int(record["label"])


class LoaderStats:
    """How long the training loop waited for data, against the whole epoch."""

    def __init__(self):
        self.wait = 0.0
        self.started = time.perf_counter()
        self.batches = 0

    def wrap(self, loader):
        iterator = iter(loader)
        while True:
            before = time.perf_counter()
            try:
                batch = next(iterator)
            except StopIteration:
                return
            self.wait += time.perf_counter() - before
            self.batches += 1
            yield batch

    def line(self) -> str:
        total = max(time.perf_counter() - self.started, 1e-9)
        return f"data_wait_fraction={self.wait / total:.3f} data_wait_seconds={self.wait:.2f} batches={self.batches}"


def find_shards(channel_dir: str):
    return sorted(glob.glob(os.path.join(channel_dir, "**", "*.rec"), recursive=True))


def shard_loader(channel_dir: str, batch_size: int, rank: int = 0, world_size: int = 1, epoch: int = 0,
                 workers: int = 2, shuffle_buffer: int = 2048, prefetch_factor: int = 4, seed: int = 0):  # fmt: skip
    """A DataLoader over this rank's share of the shards (every world_size-th shard) and its stats."""
    shards = find_shards(channel_dir)
    if not shards:
        raise FileNotFoundError(f"no .rec shards under {channel_dir}")
    mine = shards[rank::world_size] or shards  # fewer shards than ranks: share them
    workers = max(0, min(workers, len(mine)))
    stream = ShardStream(mine, shuffle_buffer, seed + 1000 * epoch + rank)
    extra = {"prefetch_factor": prefetch_factor, "persistent_workers": False} if workers else {}
    stats = LoaderStats()
    loader = DataLoader(stream, batch_size=batch_size, num_workers=workers, **extra)
    return stats.wrap(loader), stats
