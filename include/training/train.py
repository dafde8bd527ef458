"""Train a small CNN on scikit-learn's digits images with PyTorch DDP.

Reads the train channel as pre-shuffled .rec shards (shard_loader.py, each
rank its own shards) or, for small data, .npz files sampled in memory.

Plain SageMaker script-mode code: it runs unchanged on SageMaker's PyTorch
training containers and in mlscale's emulator. It reads the SageMaker
training environment (SM_MODEL_DIR, SM_CHANNEL_TRAIN, SM_CHANNEL_TEST) and
torchrun's RANK/WORLD_SIZE, and prints the lines that the job's
MetricDefinitions pick up:

    epoch=3 train_loss=0.1234 test_loss=0.0987 test_accuracy=0.9750

When the job has a CheckpointConfig, rank 0 saves a checkpoint after every
epoch to its local path (/opt/ml/checkpoints, which SageMaker syncs to S3), and
a restarted job (a Managed Spot interruption) resumes from the last one.
"""

import argparse
import contextlib
import hashlib
import json
import os
import time

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from shard_loader import find_shards, iterate_shard, shard_loader
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


class DigitsCNN(nn.Module):
    def __init__(self, num_classes: int = 10):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 16, 3, padding=1)
        self.conv2 = nn.Conv2d(16, 32, 3, padding=1)
        self.fc1 = nn.Linear(32 * 4 * 4, 64)
        self.fc2 = nn.Linear(64, num_classes)

    def forward(self, x):
        x = F.relu(self.conv1(x))
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        x = F.relu(self.fc1(torch.flatten(x, 1)))
        return self.fc2(x)


class FlatInput(nn.Module):
    """What gets served: 64 pixel values in [0, 1] per row (a CSV line or a JSON list) -> 10 logits."""

    def __init__(self, model: nn.Module):
        super().__init__()
        self.model = model

    def forward(self, x):
        return self.model(x.reshape(-1, 1, 8, 8))


def load_split(channel_dir: str):
    """A channel as one in-memory dataset: .rec shards, or .npz files (images in [0, 16], labels)."""
    if find_shards(channel_dir):
        chunks = [chunk for path in find_shards(channel_dir) for chunk in iterate_shard(path)]
        records = np.concatenate(chunks)
        x = torch.from_numpy(records["pixels"].astype(np.float32) / 255.0).unsqueeze(1)
        return TensorDataset(x, torch.from_numpy(records["label"].astype(np.int64)))
    images, labels = [], []
    for name in sorted(os.listdir(channel_dir)):
        if name.endswith(".npz"):
            with np.load(os.path.join(channel_dir, name)) as data:
                images.append(data["images"])
                labels.append(data["labels"])
    if not images:
        raise FileNotFoundError(f"no .npz files in {channel_dir}")
    x = torch.from_numpy(np.concatenate(images).astype(np.float32) / 16.0).unsqueeze(1)
    return TensorDataset(x, torch.from_numpy(np.concatenate(labels).astype(np.int64)))


def evaluate(model, loader):
    model.eval()
    loss, correct, count = 0.0, 0, 0
    with torch.no_grad():
        for x, y in loader:
            out = model(x)
            loss += F.cross_entropy(out, y, reduction="sum").item()
            correct += (out.argmax(1) == y).sum().item()
            count += len(y)
    return loss / count, correct / count


def weights_digest(model) -> str:
    digest = hashlib.sha256()
    for tensor in model.state_dict().values():
        digest.update(tensor.detach().cpu().numpy().tobytes())
    return digest.hexdigest()[:16]


# CheckpointConfig.LocalPath's default; SAGEMAKER_BASE_DIR moves /opt/ml, as in the training toolkit
CHECKPOINTS = os.path.join(os.environ.get("SAGEMAKER_BASE_DIR", "/opt/ml"), "checkpoints")


def save_checkpoint(epoch, model, optimizer):
    """Written whole, then renamed: an interruption mid-write leaves the previous checkpoint."""
    path = os.path.join(CHECKPOINTS, "checkpoint.pt")
    torch.save({"epoch": epoch, "model": model.state_dict(), "optimizer": optimizer.state_dict()}, path + ".partial")
    os.replace(path + ".partial", path)


def resume_epoch(model, optimizer):
    """The epoch to start from: 1, or the one after the last checkpoint (loaded into model and optimizer)."""
    path = os.path.join(CHECKPOINTS, "checkpoint.pt")
    if not os.path.isfile(path):
        return 1
    state = torch.load(path, map_location="cpu")
    model.load_state_dict(state["model"])
    optimizer.load_state_dict(state["optimizer"])
    print(f"resumed from checkpoint epoch={state['epoch']}", flush=True)
    return state["epoch"] + 1


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=12)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--lr", type=float, default=0.003)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--loader-workers", type=int, default=1)
    parser.add_argument("--model-dir", default=os.environ.get("SM_MODEL_DIR", "model"))
    parser.add_argument("--train", default=os.environ.get("SM_CHANNEL_TRAIN", "data/train"))
    parser.add_argument("--test", default=os.environ.get("SM_CHANNEL_TEST", "data/test"))
    args = parser.parse_args()

    world_size = int(os.environ.get("WORLD_SIZE", 1))
    rank = int(os.environ.get("RANK", 0))
    if world_size > 1:
        dist.init_process_group("gloo", rank=rank, world_size=world_size)
    torch.manual_seed(args.seed)  # same initial weights on every rank
    print(f"host={os.environ.get('SM_CURRENT_HOST', 'local')} rank={rank} world_size={world_size}", flush=True)

    sharded = bool(find_shards(args.train))
    test_set = load_split(args.test)
    test_loader = DataLoader(test_set, batch_size=256)
    if not sharded:  # small data in .npz: sample it in memory
        train_set = load_split(args.train)
        sampler = DistributedSampler(train_set, num_replicas=world_size, rank=rank, seed=args.seed)
        train_loader = DataLoader(train_set, batch_size=args.batch_size, sampler=sampler)

    model = DigitsCNN()
    trained = DistributedDataParallel(model) if world_size > 1 else model
    optimizer = torch.optim.Adam(trained.parameters(), lr=args.lr)
    checkpointing = os.path.isdir(CHECKPOINTS)  # SageMaker creates it when the job has a CheckpointConfig
    first_epoch = resume_epoch(model, optimizer) if checkpointing else 1
    started = time.time()
    if first_epoch > args.epochs:  # the checkpoint is the last epoch: nothing is left to train
        test_loss, accuracy = evaluate(model, test_loader)
    for epoch in range(first_epoch, args.epochs + 1):
        trained.train()
        stats = None
        if sharded:  # each rank streams its own shards, read front to back
            batches_iter, stats = shard_loader(
                args.train, args.batch_size, rank, world_size, epoch, workers=args.loader_workers, seed=args.seed
            )
        else:
            sampler.set_epoch(epoch)
            batches_iter = train_loader
        total, batches = 0.0, 0
        # Shards may give ranks a batch more or less: join() keeps DDP's all-reduce from waiting forever.
        with trained.join() if world_size > 1 else contextlib.nullcontext():
            for x, y in batches_iter:
                optimizer.zero_grad()
                loss = F.cross_entropy(trained(x), y)
                loss.backward()  # DDP all-reduces (averages) the gradients here
                optimizer.step()
                total, batches = total + loss.item(), batches + 1
        if stats:
            print(f"epoch={epoch} {stats.line()}", flush=True)
        test_loss, accuracy = evaluate(model, test_loader)
        print(
            f"epoch={epoch} train_loss={total / batches:.4f} test_loss={test_loss:.4f} "
            f"test_accuracy={accuracy:.4f} elapsed={time.time() - started:.1f}s",
            flush=True,
        )
        if checkpointing and rank == 0:
            save_checkpoint(epoch, model, optimizer)

    print(f"rank={rank} weights_sha256={weights_digest(model)}", flush=True)
    if rank == 0:
        os.makedirs(args.model_dir, exist_ok=True)
        model.eval()
        example = test_set.tensors[0][:2].reshape(2, 64)
        # TorchScript: the inference toolkit's default model_fn loads it, Neo can compile it.
        torch.jit.trace(FlatInput(model), example).save(os.path.join(args.model_dir, "model.pt"))
        with open(os.path.join(args.model_dir, "metrics.json"), "w") as f:
            json.dump({"test_accuracy": accuracy, "test_loss": test_loss, "epochs": args.epochs}, f)
    if world_size > 1:
        dist.barrier()
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
