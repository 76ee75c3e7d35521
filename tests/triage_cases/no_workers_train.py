"""A training script whose DataLoader has no workers: the training process decodes every batch itself.

It pins memory and copies without blocking, so the only input problem is the loading on one core.
"""

import argparse

import torch
from torch.utils.data import DataLoader


def parse_args():
    parser = argparse.ArgumentParser()
    parser.add_argument("--workers", type=int, default=0)
    return parser.parse_args()


def main(dataset, model, optimizer):
    args = parse_args()
    loader = DataLoader(dataset, batch_size=256, shuffle=True, num_workers=args.workers, pin_memory=True)
    for inputs, targets in loader:
        inputs = inputs.cuda(non_blocking=True)
        loss = torch.nn.functional.cross_entropy(model(inputs), targets.cuda(non_blocking=True))
        loss.backward()
        optimizer.step()
