"""One training step of a ResNet-18-like network, ember against torch, and where ember's time goes.

    python benchmarks/resnet_step.py                      # step times, ember / torch
    python benchmarks/resnet_step.py --clock cpu --rounds 9
    python benchmarks/resnet_step.py --profile            # ember's time per op (ember.profiler)
    python benchmarks/resnet_step.py --smoke              # seconds: a narrow net, small input

The network is built from ``nn`` modules only: a 3x3 stem (conv, BatchNorm2d, ReLU, max_pool2d),
four stages of two BasicBlocks each (conv3x3-bn-relu-conv3x3-bn plus the shortcut, a 1x1
strided conv-bn where the shape changes) with 64, 128, 256 and 512 channels, adaptive_avg_pool2d
and a linear head; the loss is cross-entropy and the optimizer Adadelta (as pytorch/examples'
siamese_network, whose trunk is a ResNet-18). One thread per library, interleaved rounds, medians.
"""
from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import pathlib  # noqa: E402
import platform  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "src"))   # benchmark the checkout, not an old install
sys.path.insert(0, str(HERE))

import ember  # noqa: E402
from _timing import interleaved, peers  # noqa: E402
from run import _cpu_model  # noqa: E402


def basic_block(nn, cin, cout, stride):
    """conv3x3-bn-relu-conv3x3-bn, plus the shortcut (1x1 conv-bn where the shape changes)."""
    class BasicBlock(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
            self.bn1 = nn.BatchNorm2d(cout)
            self.relu = nn.ReLU(inplace=True)
            self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
            self.bn2 = nn.BatchNorm2d(cout)
            self.shortcut = nn.Sequential()
            if stride != 1 or cin != cout:
                self.shortcut = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False),
                                              nn.BatchNorm2d(cout))

        def forward(self, x):
            out = self.relu(self.bn1(self.conv1(x)))
            out = self.bn2(self.conv2(out))
            return self.relu(out + self.shortcut(x))
    return BasicBlock()


def resnet18(lib, width=64, in_channels=3, classes=10):
    """A ResNet-18 of ``lib.nn`` modules (stages of ``width`` x 1, 2, 4, 8 channels)."""
    nn = lib.nn
    layers = [nn.Conv2d(in_channels, width, 3, 1, 1, bias=False), nn.BatchNorm2d(width),
              nn.ReLU(inplace=True), nn.MaxPool2d(2)]
    cin = width
    for stage, mult in enumerate((1, 2, 4, 8)):
        cout = width * mult
        for block in range(2):
            layers.append(basic_block(nn, cin, cout, 2 if stage and not block else 1))
            cin = cout
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(cin, classes)]
    return nn.Sequential(*layers)


def copy_parameters(src, dst):
    """Give ``dst`` (ember) the parameters and buffers of ``src`` (torch): the same network."""
    for (name, p), (_, q) in zip(src.state_dict().items(), dst.state_dict().items()):
        q.copy_(ember.tensor(p.detach().numpy()) if hasattr(p, "numpy") else p)


def make_step(lib, model, x, y):
    """One training step: forward, cross-entropy, backward, Adadelta update."""
    optimizer = lib.optim.Adadelta(model.parameters())
    loss_fn = lib.nn.CrossEntropyLoss()
    x, y = lib.tensor(x), lib.tensor(y)

    def step():
        optimizer.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()
        return loss.item()
    return step


def build(libs, args):
    rs = np.random.RandomState(0)
    x = rs.randn(args.batch, 3, args.size, args.size).astype(np.float32)
    y = rs.randint(0, 10, args.batch)
    models = {name: resnet18(lib, args.width) for name, lib in libs.items()}
    if "torch" in models:
        copy_parameters(models["torch"], models["ember"])
    return {name: make_step(lib, models[name], x, y) for name, lib in libs.items()}


def profile(step, steps):
    """ember's own time per op over ``steps`` steps (ember.profiler), the largest first."""
    from ember.profiler import ProfilerActivity
    from ember.profiler import profile as ember_profile
    step()
    with ember_profile(activities=[ProfilerActivity.CPU]) as prof:
        for _ in range(steps):
            step()
    print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=25))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--size", type=int, default=64, help="input height and width")
    parser.add_argument("--width", type=int, default=64, help="channels of the first stage")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--clock", choices=("wall", "cpu"), default="wall")
    parser.add_argument("--profile", action="store_true", help="ember's time per op instead")
    parser.add_argument("--steps", type=int, default=3, help="steps profiled")
    parser.add_argument("--no-torch", action="store_true")
    parser.add_argument("--smoke", action="store_true", help="a narrow net on a small input")
    args = parser.parse_args(argv)
    if args.smoke:
        args.batch, args.size, args.width, args.rounds = 4, 16, 8, min(args.rounds, 3)
    libs = peers(ember, args.no_torch or args.profile)
    steps = build(libs, args)
    losses = {name: step() for name, step in steps.items()}
    if args.profile:
        profile(steps["ember"], args.steps)
        return
    clock = time.process_time if args.clock == "cpu" else time.perf_counter
    times = interleaved(steps, args.rounds, 0.0, clock)
    print(f"ResNet-18-like step, batch {args.batch}x3x{args.size}x{args.size}, width "
          f"{args.width} ({_cpu_model()}, {os.cpu_count()} cores, Python "
          f"{platform.python_version()}, NumPy {np.__version__}, {args.clock} clock, "
          f"median of {args.rounds} interleaved rounds)")
    for name, t in times.items():
        print(f"  {name:6s} {t * 1e3:9.1f} ms   first loss {losses[name]:.5f}")
    if "torch" in times:
        agree = abs(losses["ember"] - losses["torch"]) <= 1e-4 * max(1.0, abs(losses["torch"]))
        print(f"  ember / torch: {times['ember'] / times['torch']:.2f}   first losses "
              f"{'agree' if agree else 'DIFFER'}")


if __name__ == "__main__":
    main()
