"""A training script whose loader does not pin memory: its comment says pin_memory=True, which is no fact."""

import argparse

import torch
from torch.utils.data import DataLoader


def parse_args():
    parser = argparse.ArgumentParser()
    parser.add_argument("--num-workers", type=int, default=6)
    return parser.parse_args()


def main(dataset, model, optimizer):
    args = parse_args()
    # DataLoader(dataset, pin_memory=True) would be better
    loader = DataLoader(dataset, batch_size=64, num_workers=args.num_workers)
    for inputs, targets in loader:
        inputs = inputs.cuda()
        loss = torch.nn.functional.cross_entropy(model(inputs), targets.cuda())
        loss.backward()
        optimizer.step()
