import torch
import torch.nn as nn
from model import build_model
from torch.utils.data import DataLoader


def main(dataset):
    device = torch.device("cuda")
    model = nn.DataParallel(build_model()).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    loader = DataLoader(dataset, batch_size=256, num_workers=8, pin_memory=True)
    for step, (inputs, targets) in enumerate(loader):
        inputs = inputs.to(device, non_blocking=True)
        targets = targets.to(device, non_blocking=True)
        loss = nn.functional.cross_entropy(model(inputs), targets)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if step % 100 == 0:
            print("step", step, loss.item())
