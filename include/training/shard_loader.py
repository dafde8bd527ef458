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
    dtype = np.dtype(
        [tuple(field) if len(field) == 2 else (field[0], field[1], tuple(field[2])) for field in header["dtype"]]
    )
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
    """Batches from this rank's shards; DataLoader workers split the shards further.

    A worker makes whole batches with NumPy (one permutation of its shuffle buffer per chunk read, then slices):
    turning records into tensors one at a time and collating them took longer than the example model's training
    step, and the trainer waited for data a quarter of the time.
    """

    def __init__(self, shards, shuffle_buffer: int, seed: int, batch_size: int):
        self.shards, self.shuffle_buffer, self.seed, self.batch_size = list(shards), shuffle_buffer, seed, batch_size

    def __iter__(self):
        worker = get_worker_info()
        mine = self.shards if worker is None else self.shards[worker.id :: worker.num_workers]
        rng = np.random.default_rng(self.seed + (worker.id if worker else 0))
        order = [mine[i] for i in rng.permutation(len(mine))]
        buffer = None
        for path in order:
            for chunk in iterate_shard(path):
                buffer = chunk if buffer is None else np.concatenate([buffer, chunk])
                ready = (len(buffer) - self.shuffle_buffer) // self.batch_size  # keep shuffle_buffer records back
                if ready > 0:
                    buffer = buffer[rng.permutation(len(buffer))]
                    for start in range(0, ready * self.batch_size, self.batch_size):
                        yield self._batch(buffer[start : start + self.batch_size])
                    buffer = buffer[ready * self.batch_size :]
        if buffer is not None and len(buffer):
            buffer = buffer[rng.permutation(len(buffer))]
            for start in range(0, len(buffer), self.batch_size):
                yield self._batch(buffer[start : start + self.batch_size])

    @staticmethod
    def _batch(records):
        images = torch.from_numpy(records["pixels"].astype(np.float32) / 255.0).unsqueeze(1)
        return images, torch.from_numpy(records["label"].astype(np.int64))


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


def shard_loader(
    channel_dir: str,
    batch_size: int,
    rank: int = 0,
    world_size: int = 1,
    epoch: int = 0,
    workers: int = 2,
    shuffle_buffer: int = 2048,
    prefetch_factor: int = 4,
    seed: int = 0,
):
    """A DataLoader over this rank's share of the shards (every world_size-th shard) and its stats."""
    shards = find_shards(channel_dir)
    if not shards:
        raise FileNotFoundError(f"no .rec shards under {channel_dir}")
    mine = shards[rank::world_size] or shards  # fewer shards than ranks: share them
    workers = max(0, min(workers, len(mine)))
    stream = ShardStream(mine, shuffle_buffer, seed + 1000 * epoch + rank, batch_size)
    extra = {"prefetch_factor": prefetch_factor, "persistent_workers": False} if workers else {}
    stats = LoaderStats()
    loader = DataLoader(stream, batch_size=None, num_workers=workers, **extra)  # the stream makes the batches
    return stats.wrap(loader), stats
