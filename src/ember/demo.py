"""ember's demo (``python -m ember``): train a small CNN on real handwritten digits.

It trains on the UCI digits that ship with ember (no download), shows a progress bar, reports
test accuracy against two baselines, and writes what autograd makes visible into a folder:
the loss curve, the profiler's table and a Chrome trace of one training step, and a picture of
the graph behind the loss. Pictures need the ``demo`` extra (matplotlib, graphviz); everything
else runs on NumPy alone. ``--device cuda`` trains on a GPU (the ``gpu`` extra, CuPy), as the
same torch code would.
"""
from __future__ import annotations

import argparse
import pathlib
import sys
import time

import numpy as np

import ember
from ember import nn
from ember.nn import functional as F
from ember.utils.data import DataLoader, TensorDataset, random_split


class DigitNet(nn.Module):
    """conv 3x3 -> ReLU -> max-pool -> linear: about 3,000 parameters."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 16, kernel_size=3, padding=1)
        self.pool = nn.MaxPool2d(2)
        self.fc = nn.Linear(16 * 4 * 4, 10)

    def forward(self, x):
        return self.fc(self.pool(F.relu(self.conv(x))).flatten(1))


def _progress(iterable, total, desc):
    """tqdm when it is installed (the ``demo`` extra), else one line redrawn in place.

    Nothing is drawn when stdout is not a terminal (a log file, CI): only the epoch summaries.
    """
    if not sys.stdout.isatty():
        return iterable
    try:
        from tqdm import tqdm
        return tqdm(iterable, total=total, desc=desc, leave=False, file=sys.stdout)
    except ImportError:
        return _plain_progress(iterable, total, desc)


def _plain_progress(iterable, total, desc, width=30):
    for i, item in enumerate(iterable, 1):
        done = width * i // total
        print(f"\r{desc} [{'#' * done}{'.' * (width - done)}] {i}/{total}", end="", flush=True)
        yield item
    print("\r" + " " * (len(desc) + width + 16) + "\r", end="")


def load_data(generator):
    images, labels = ember.datasets.load_digits()
    data = TensorDataset(images.unsqueeze(1), labels)
    return random_split(data, [0.8, 0.2], generator=generator)


def baselines(train, test):
    """Accuracy of always guessing the commonest class, and of a nearest-class-mean rule."""
    x_tr, y_tr = (np.stack([train[i][k].numpy() for i in range(len(train))]) for k in (0, 1))
    x_te, y_te = (np.stack([test[i][k].numpy() for i in range(len(test))]) for k in (0, 1))
    majority = float(np.mean(y_te == np.bincount(y_tr).argmax()))
    means = np.stack([x_tr[y_tr == c].mean(0) for c in range(10)]).reshape(10, -1)
    distances = ((x_te.reshape(len(x_te), 1, -1) - means) ** 2).sum(-1)
    return majority, float(np.mean(distances.argmin(1) == y_te))


def accuracy(model, data, device):
    model.eval()
    with ember.no_grad():
        correct = sum(int((model(x.to(device)).argmax(1) == y.to(device)).sum())
                      for x, y in DataLoader(data, 256))
    model.train()
    return correct / len(data)


def train(model, train_data, epochs, generator, device):
    optimizer = ember.optim.Adam(model.parameters(), lr=3e-3)
    loader = DataLoader(train_data, batch_size=32, shuffle=True, generator=generator,
                        pin_memory=device.type == "cuda")
    losses = []
    for epoch in range(1, epochs + 1):
        for x, y in _progress(loader, len(loader), f"epoch {epoch:2d}/{epochs}"):
            x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
            optimizer.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
        print(f"epoch {epoch:2d}/{epochs}  mean loss {np.mean(losses[-len(loader):]):.4f}")
    return losses, optimizer


def write_loss_curve(losses, out):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return "loss_curve.png skipped (pip install 'ember[demo]' for matplotlib)"
    fig, ax = plt.subplots(figsize=(6, 3.5))
    ax.plot(losses, lw=0.6, alpha=0.5, label="batch")
    window = 20
    smooth = np.convolve(losses, np.ones(window) / window, mode="valid")
    ax.plot(np.arange(window - 1, len(losses)), smooth, lw=1.5, label=f"mean of {window}")
    ax.set(xlabel="step", ylabel="cross-entropy", yscale="log", title="ember: DigitNet")
    ax.legend()
    fig.tight_layout()
    fig.savefig(out / "loss_curve.png", dpi=120)
    plt.close(fig)
    return "loss_curve.png"


def profile_step(model, optimizer, batch, out):
    """Profile one training step: forward ops and backward nodes, as torch's profiler shows
    (with each one's CUDA time on a GPU)."""
    x, y = batch
    gpu = "cuda" if x.is_cuda else None
    with ember.autograd.profiler.profile(record_shapes=True, use_device=gpu) as prof:
        with ember.autograd.profiler.record_function("training_step"):
            optimizer.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            optimizer.step()
    table = prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=12)
    (out / "profile.txt").write_text(table + "\n")
    prof.export_chrome_trace(str(out / "trace.json"))
    return table


def write_graph(model, batch, out):
    x, y = batch
    loss = F.cross_entropy(model(x), y)
    dot = loss.to_dot(params=dict(model.named_parameters()))
    (out / "graph.dot").write_text(dot)
    try:
        ember.autograd.graphviz.render(dot, out / "graph.svg")
        return "graph.dot, graph.svg"
    except Exception as error:  # noqa: BLE001 - the picture is optional; the DOT text is not
        return f"graph.dot (graph.svg skipped: {str(error).splitlines()[0]})"


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m ember", description=__doc__.split("\n")[0])
    parser.add_argument("--epochs", type=int, default=8)
    parser.add_argument("--out", default="ember-demo", help="folder for the pictures and traces")
    parser.add_argument("--device", default="cpu", help="where to train: cpu or cuda")
    args = parser.parse_args(argv)
    device = ember.device(args.device)
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    ember.manual_seed(0)
    generator = ember.Generator().manual_seed(0)

    print("ember: define-by-run autograd on NumPy, with PyTorch's API\n")
    train_data, test_data = load_data(generator)
    model = DigitNet().to(device)
    print(f"UCI handwritten digits (8x8): {len(train_data)} training and {len(test_data)} "
          f"test images\n{model}\n")
    if device.type == "cuda":
        print(f"training on {ember.cuda.get_device_name(device)}\n")
    start = time.perf_counter()
    losses, optimizer = train(model, train_data, args.epochs, generator, device)
    seconds = time.perf_counter() - start
    majority, centroid = baselines(train_data, test_data)
    print(f"\ntrained {len(losses)} steps in {seconds:.1f} s")
    print(f"test accuracy: {accuracy(model, test_data, device):.1%}   baselines: commonest class "
          f"{majority:.1%}, nearest class mean {centroid:.1%}\n")

    batch = [t.to(device) for t in next(iter(DataLoader(train_data, batch_size=32)))]
    print("one training step under the autograd profiler:")
    print(profile_step(model, optimizer, batch, out))
    written = [write_loss_curve(losses, out), "profile.txt", "trace.json (open in "
               "https://ui.perfetto.dev)", write_graph(model, batch, out)]
    print(f"written to {out}/: " + "; ".join(written))


if __name__ == "__main__":
    main()
