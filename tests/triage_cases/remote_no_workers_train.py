"""A training script that reads its shards from S3 through a DataLoader without workers: the training process
fetches every batch from remote storage itself, between its steps.

It pins memory and copies without blocking, so the input problems are the remote reads and the loading on one core.
"""

import argparse

import torch
from torch.utils.data import DataLoader


def parse_args():
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", default="s3://vision-datasets/imagenet-shards")
    parser.add_argument("--workers", type=int, default=0)
    return parser.parse_args()


def main(build_dataset, model, optimizer):
    args = parse_args()
    loader = DataLoader(build_dataset(args.data), batch_size=256, num_workers=args.workers, pin_memory=True)
    for inputs, targets in loader:
        inputs = inputs.cuda(non_blocking=True)
        loss = torch.nn.functional.cross_entropy(model(inputs), targets.cuda(non_blocking=True))
        loss.backward()
        optimizer.step()
