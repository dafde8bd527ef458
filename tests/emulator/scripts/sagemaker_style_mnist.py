"""Distributed training as the public SageMaker PyTorch example (pytorch_mnist/mnist.py) writes it.

The argument parsing, the SM_* defaults and the host-rank rendezvous are the
example's own: no torchrun, each host calls init_process_group with its index
in SM_HOSTS, relying on MASTER_ADDR/MASTER_PORT from the platform. Two
differences: the data (scikit-learn's digits in a channel instead of a
download), and the process group is destroyed at the end. The example leaves
it to interpreter shutdown, where gloo can abort ("terminate called without an
active exception", SIGABRT) when the hosts exit at different moments; that
happens on SageMaker too, and it made this test flaky.
"""

import argparse
import json
import logging
import os
import sys

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

logger = logging.getLogger(__name__)
logger.setLevel(logging.DEBUG)
logger.addHandler(logging.StreamHandler(sys.stdout))


def train(args):
    is_distributed = len(args.hosts) > 1 and args.backend is not None
    if is_distributed:
        world_size = len(args.hosts)
        os.environ["WORLD_SIZE"] = str(world_size)
        host_rank = args.hosts.index(args.current_host)
        os.environ["RANK"] = str(host_rank)
        dist.init_process_group(backend=args.backend, rank=host_rank, world_size=world_size)
        logger.info(
            f"Initialized the distributed environment: '{args.backend}' backend on "
            f"{dist.get_world_size()} nodes. Current host rank is {dist.get_rank()}."
        )
    torch.manual_seed(args.seed)
    with np.load(os.path.join(args.data_dir, "digits.npz")) as data:
        x = torch.tensor(data["images"], dtype=torch.float32).reshape(-1, 64) / 16.0
        y = torch.tensor(data["labels"])
    model = nn.Linear(64, 10)
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr)
    for epoch in range(1, args.epochs + 1):
        optimizer.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        if is_distributed:  # average gradients, as the example does
            for param in model.parameters():
                dist.all_reduce(param.grad.data, op=dist.ReduceOp.SUM)
                param.grad.data /= float(dist.get_world_size())
        optimizer.step()
        logger.info(f"Train Epoch: {epoch} Loss: {loss.item():.6f}")
    weights = torch.cat([p.detach().flatten() for p in model.parameters()]).sum().item()
    logger.info(f"host={args.current_host} weights_sum={weights:.6f}")
    if args.current_host == args.hosts[0]:
        torch.save(model.state_dict(), os.path.join(args.model_dir, "model.pth"))
        with open(os.path.join(args.model_dir, "seen.json"), "w") as f:
            json.dump(
                {
                    "argv": sys.argv[1:],
                    "sm": {k: v for k, v in os.environ.items() if k.startswith("SM_")},
                    "cwd": os.getcwd(),
                },
                f,
            )
    if is_distributed:
        dist.barrier()
        dist.destroy_process_group()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--lr", type=float, default=0.01)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--backend", type=str, default=None)
    parser.add_argument("--hosts", type=list, default=json.loads(os.environ["SM_HOSTS"]))
    parser.add_argument("--current-host", type=str, default=os.environ["SM_CURRENT_HOST"])
    parser.add_argument("--model-dir", type=str, default=os.environ["SM_MODEL_DIR"])
    parser.add_argument("--data-dir", type=str, default=os.environ["SM_CHANNEL_TRAINING"])
    parser.add_argument("--num-gpus", type=int, default=os.environ["SM_NUM_GPUS"])
    train(parser.parse_args())
