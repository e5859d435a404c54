"""Train a small ResNet (BatchNorm, in-place ReLU, pooling) on scikit-learn's digits.

The model is written as PyTorch code is (``nn.Conv2d``, ``nn.BatchNorm2d``,
``nn.ReLU(inplace=True)``, ``nn.MaxPool2d``, ``nn.AdaptiveAvgPool2d``, residual
``out += shortcut``); the training step (forward, cross-entropy, ``backward()``,
SGD with momentum and weight decay, BatchNorm's running statistics) is one
``arraykit.jit`` program; ``--eager`` runs the same loop without it. The images are
the 8x8 digits as they are, one channel.

    python examples/train_cnn.py [--epochs 8] [--batch-size 64] [--width 16]
                                 [--device cpu|gpu] [--eager] [--seed 0]

With the defaults it runs 176 jitted steps, compiled once, and prints the test
accuracy it reaches (the run is deterministic).
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split

import arraykit as ak
import arraykit.nn.functional as F
from arraykit import nn, optim


def resnet_class(nn):
    """A small ResNet class over the layer library ``nn`` (``arraykit.nn`` or
    ``torch.nn``: the benchmark builds the same model in both)."""

    class BasicBlock(nn.Module):
        """Two 3x3 convolutions with BatchNorm and a residual connection."""

        def __init__(self, cin, cout, stride=1):
            super().__init__()
            self.conv1 = nn.Conv2d(cin, cout, 3, stride=stride, padding=1, bias=False)
            self.bn1 = nn.BatchNorm2d(cout)
            self.relu = nn.ReLU(inplace=True)
            self.conv2 = nn.Conv2d(cout, cout, 3, padding=1, bias=False)
            self.bn2 = nn.BatchNorm2d(cout)
            self.shortcut = nn.Sequential()
            if stride != 1 or cin != cout:
                self.shortcut = nn.Sequential(
                    nn.Conv2d(cin, cout, 1, stride=stride, bias=False), nn.BatchNorm2d(cout))

        def forward(self, x):
            out = self.relu(self.bn1(self.conv1(x)))
            out = self.bn2(self.conv2(out))
            out += self.shortcut(x)
            return self.relu(out)

    class ResNet(nn.Module):
        """Stem, a block, max-pooling, a wider block, global average pooling, a classifier."""

        def __init__(self, in_channels=1, width=16, num_classes=10):
            super().__init__()
            self.stem = nn.Sequential(
                nn.Conv2d(in_channels, width, 3, padding=1, bias=False),
                nn.BatchNorm2d(width), nn.ReLU(inplace=True))
            self.layer1 = BasicBlock(width, width)
            self.pool = nn.MaxPool2d(2)
            self.layer2 = BasicBlock(width, 2 * width)
            self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
            self.fc = nn.Linear(2 * width, num_classes)

        def forward(self, x):
            x = self.pool(self.layer1(self.stem(x)))
            x = self.avgpool(self.layer2(x))
            return self.fc(x.flatten(1))

    return ResNet


def load(device, seed):
    """Digits (1797 8x8 images, 10 classes) as (N, 1, 8, 8) in [0, 1], split 80/20."""
    digits = load_digits()
    x = (digits.images / 16.0).astype(np.float32)[:, None]
    x_train, x_test, y_train, y_test = train_test_split(
        x, digits.target, test_size=0.2, random_state=seed, stratify=digits.target)
    return [ak.asarray(a, device=device) for a in (x_train, x_test, y_train, y_test)]


def make_step(model, optimizer):
    """One training step: forward, cross-entropy, ``backward()``, ``optimizer.step()``."""

    def train_step(x, y):
        optimizer.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        return loss

    return train_step


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=8)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--width", type=int, default=16)
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--device", default="cpu", help="cpu or gpu (cuda)")
    parser.add_argument("--eager", action="store_true", help="run the step without arraykit.jit")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    device = ak.device(args.device)
    ak.manual_seed(args.seed)
    x_train, x_test, y_train, y_test = load(device, args.seed)
    model = resnet_class(nn)(width=args.width).to(device)
    optimizer = optim.SGD(model.parameters(), lr=args.lr, momentum=0.9, weight_decay=5e-4)
    train_step = make_step(model, optimizer)
    step = train_step if args.eager else ak.jit(train_step)

    n = x_train.shape[0] - x_train.shape[0] % args.batch_size  # whole batches: one shape
    rng = np.random.default_rng(args.seed)
    start = time.perf_counter()
    for epoch in range(args.epochs):
        model.train()
        order = rng.permutation(x_train.shape[0])[:n].reshape(-1, args.batch_size)
        losses = [step(x_train[ak.asarray(b, device=device)], y_train[ak.asarray(b, device=device)])
                  for b in order]
        print(f"epoch {epoch + 1}: mean loss {sum(v.item() for v in losses) / len(losses):.4f}")
    seconds = time.perf_counter() - start
    model.eval()  # BatchNorm now uses its running statistics
    with ak.no_grad():
        accuracy = (ak.argmax(model(x_test), axis=1) == y_test).to(ak.float32).mean().item()
    mode = "eager" if args.eager else f"jit ({step.compile_count} XLA compilation(s))"
    print(f"{mode}: {args.epochs * order.shape[0]} steps in {seconds:.1f} s, "
          f"test accuracy {accuracy:.3f}")


if __name__ == "__main__":
    main()
