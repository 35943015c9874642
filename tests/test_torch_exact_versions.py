"""Version counters compared with torch: a tensor detached in place keeps sharing its counter
with its views and aliases, while the nodes that saved it before still refuse it."""
from __future__ import annotations

import pytest

from oracle import same


def test_detach_in_place_keeps_the_shared_version_counter():
    def body(t):
        x = t.ones(3, requires_grad=True)
        y = x * 2
        alias, view = y.detach(), y[:2]
        y.detach_()
        y.add_(1)
        seen = [(y._version, alias._version, view._version)]
        alias.add_(1)
        later_alias, later_view = y.detach(), y[1:]
        y.mul_(2)
        seen.append((y._version, alias._version, view._version, later_alias._version,
                     later_view._version))
        return seen
    same(body)


def _graph(t):
    x = t.ones(3, requires_grad=True)
    return x, x * 2


CASES = {
    # saved before detach_: refused whether or not it was written since
    "input_saved_before": lambda t, x, y: (y * y, y.detach_()),
    "input_saved_before_then_written": lambda t, x, y: (y * x, y.detach_(), y.add_(1)),
    "input_saved_before_alias_written": lambda t, x, y: (y * x, y.detach().add_(1),
                                                         y.detach_()),
    # saved after detach_: the usual version check
    "input_saved_after_then_written": lambda t, x, y: (y.detach_(), y * x, y.add_(1)),
    # a view of the tensor saved before: the view keeps its own history
    "view_saved_before": lambda t, x, y: (y[:2] * y[:2], y.detach_()),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_saved_tensor_after_detach_in_place(case):
    def body(t):
        x, y = _graph(t)
        z = CASES[case](t, x, y)[0]
        z.sum().backward()
        return x.grad
    same(body)


@pytest.mark.parametrize("written", [False, True])
def test_saved_output_after_detach_in_place(written):
    """An output its node saved (exp's) stays usable; a later write is still seen."""
    def body(t):
        x = t.ones(3, requires_grad=True)
        e = x.exp()
        z = e * 1
        e.detach_()
        if written:
            e.add_(1)
        z.sum().backward()
        return x.grad
    same(body)


def test_saved_again_after_a_second_detach_in_place():
    def body(t):
        x = t.ones(3, requires_grad=True)
        w = t.ones(3, requires_grad=True)
        y = x * 2
        y.detach_()
        y.mul_(w)  # y has a history again
        z = y * y
        y.detach_()
        z.sum().backward()
        return w.grad
    same(body)


def test_in_place_op_reading_an_alias_of_a_tensor_detached_in_place():
    def body(t):
        x = t.ones(3, requires_grad=True)
        w = t.ones(3, requires_grad=True)
        y = x * 2
        alias = y.detach()
        y.detach_()
        y.add_(w)
        y.mul_(alias)  # alias is y's memory: saved before the write, refused at backward
        y.sum().backward()
        return w.grad, y._version, alias._version
    same(body)


def test_versions_of_copied_pickled_and_loaded_tensors():
    """torch rebuilds a tensor by setting its storage in place (version 1); a deep-copied
    Parameter is a clone (version 0)."""
    def body(t):
        import copy
        import io
        import pickle

        def loaded(obj):
            buf = io.BytesIO()
            t.save(obj, buf)
            buf.seek(0)
            return t.load(buf)

        x = t.ones(3)
        x.add_(1)
        base = t.ones(4)
        tensors = [x, t.ones(2, requires_grad=True), base[1:], t.arange(3),
                   t.nn.Parameter(t.ones(2))]
        seen = [(copy.deepcopy(a)._version, pickle.loads(pickle.dumps(a))._version,
                 loaded(a)._version) for a in tensors]
        lin = t.nn.Linear(2, 2)
        both = loaded([base, base[1:]])
        both[0].add_(1)
        seen.append((copy.deepcopy(lin).weight._version,
                     loaded(lin.state_dict())["weight"]._version,
                     both[0]._version, both[1]._version))
        return seen
    same(body)


@pytest.mark.parametrize("how", ["module", "functional", "update_stats", "instance_norm"])
def test_running_statistics_are_written_without_a_version(how):
    # torch's CPU kernels write the running statistics' memory without counting a write: a
    # BatchNorm's buffers keep the version their reset_parameters gave them (1) however many
    # training steps update them; only num_batches_tracked += 1 counts. InstanceNorm copies
    # its averaged statistics back with copy_ (one write a call).
    def body(t):
        x = t.tensor([[[0.32, -0.28], [0.89, 1.8], [-0.22, -1.86]],
                      [[0.1, 0.2], [0.3, 0.4], [0.5, 0.7]]], requires_grad=True)
        seen = []
        if how in ("module", "instance_norm"):
            m = (t.nn.BatchNorm1d(3, momentum=0.3) if how == "module" else
                 t.nn.InstanceNorm1d(3, affine=True, track_running_stats=True))
            for _ in range(2):
                m(x)
                seen.append((m.running_mean._version, m.running_var._version,
                             m.num_batches_tracked._version, m.running_mean, m.running_var))
            return seen
        rm, rv = t.zeros(3), t.ones(3)
        for _ in range(2):
            if how == "functional":
                t.nn.functional.batch_norm(x, rm, rv, training=True)
            else:
                t.batch_norm_update_stats(x.detach(), rm, rv, 0.1)
            seen.append((rm._version, rv._version, rm.clone(), rv.clone()))
        return seen
    same(body, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("use_input_stats", [True, False])
def test_instance_norm_writes_its_running_statistics_only_with_input_statistics(
        use_input_stats):
    # torch copies the averaged statistics back only where it used the input's (training);
    # a non-contiguous input is made contiguous, then viewed (CloneBackward0, ViewBackward0)
    def body(t):
        x = t.tensor([[[0.3, -1.0, 2.0], [0.5, 0.1, -0.7]],
                      [[1.3, 1.0, 0.0], [0.2, 0.4, -0.1]]], requires_grad=True)
        rm, rv = t.zeros(2), t.ones(2)
        seen = []
        for v in (x, x.transpose(0, 1).contiguous().transpose(0, 1)):
            y = t.nn.functional.instance_norm(v, rm, rv, use_input_stats=use_input_stats)
            below = y.grad_fn.next_functions[0][0]
            seen.append((y, rm._version, rv._version, rm.clone(), rv.clone(),
                         [f.name() for f, _ in below.next_functions if f is not None]))
        return seen
    same(body, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("training", [True, False])
def test_batch_norm_saves_its_running_statistics(training):
    # torch's NativeBatchNormBackward0 saves running_mean and running_var (in training and in
    # eval): writing one in place before backward is refused, as any saved tensor's write
    # (difftest 26000162: ember read the new values). instance_norm normalises with copies
    # of them, which nothing else writes.
    def body(t):
        seen = []
        for write in ("mean", "var", "instance"):
            x = t.tensor([[-0.59, -1.25], [0.5, -1.0], [0.5, -0.36], [0.76, -0.29]],
                         requires_grad=True)
            rm, rv = t.zeros(2), t.ones(2)
            if write == "instance":
                y = t.nn.functional.instance_norm(x.T[None], rm, rv,
                                                  use_input_stats=training)
            else:
                y = t.nn.functional.batch_norm(x, rm, rv, training=training)
            (rm if write == "mean" else rv).add_(1)
            try:
                (y * y).sum().backward()
                seen.append(x.grad)
            except RuntimeError as e:
                seen.append(str(e))
        return seen
    same(body, rtol=1e-5, atol=1e-6)


# Writes after a node saved a tensor that had no version counter yet (a fresh op result,
# never written nor viewed: ember makes its counter at the first write or view, not at save).
WRITES_AFTER_SAVE = {
    "none": lambda y: None,
    "in_place": lambda y: y.add_(1),
    "twice": lambda y: (y.add_(1), y.sub_(1)),
    "view_made_after": lambda y: y[:2].mul_(2),
    "view_made_after_unwritten": lambda y: y[1:],
    "alias_made_after": lambda y: y.detach().add_(1),
    "detached_in_place": lambda y: y.detach_(),
}


@pytest.mark.parametrize("graph", [False, True])
@pytest.mark.parametrize("write", sorted(WRITES_AFTER_SAVE))
def test_saved_input_without_a_version_counter_then_written(write, graph):
    def body(t):
        x = t.tensor([0.5, -1.0, 2.0], requires_grad=True)
        y = x * 3
        z = (y.sin() * y).sum()  # (sin and mul save y as an input)
        WRITES_AFTER_SAVE[write](y)
        (g,) = t.autograd.grad(z, [x], create_graph=graph)
        return g, y._version
    same(body)
