import torch


def train(model, loader, optimizer, save_every=500):
    for step, batch in enumerate(loader):
        loss = model(batch).loss
        loss.backward()
        optimizer.step()
        if step % save_every == 0:
            print("Saving model checkpoint")
            torch.save(model.state_dict(), f"/mnt/nfs/ckpt/step_{step}.pt")
