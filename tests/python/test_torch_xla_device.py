"""PyTorch's xla device run by ordo (ordo.torch_xla): tensors, ops, views,
in-place ops, fallbacks and errors, against torch on the CPU."""

import copy
import time

import pytest

torch = pytest.importorskip("torch")
xla = pytest.importorskip("ordo.torch_xla")

import ordo  # noqa: E402
import ordo.torch_xla.core.xla_model as xm  # noqa: E402
import ordo.torch_xla.debug.metrics as met  # noqa: E402


def test_the_device_is_a_torch_device_of_type_xla():
    device = xm.xla_device()
    assert isinstance(device, torch.device) and device.type == "xla" and device.index == 0
    t = torch.ones(2, 3, device=device)
    assert t.device.type == "xla" and t.shape == (2, 3) and t.dtype == torch.float32
    assert xm.xla_device_hw(device) == "CPU"
    assert t.cpu().tolist() == [[1.0] * 3] * 2


def test_elementwise_reductions_and_products_match_the_cpu():
    torch.manual_seed(0)
    a, b = torch.randn(5, 7), torch.randn(7, 3)
    d = xm.xla_device()
    xa, xb = a.to(d), b.to(d)
    cases = [
        (lambda x, y: (x * 2 + 1).relu().sum(dim=1), (a, b)),
        (lambda x, y: x @ y, (a, b)),
        (lambda x, y: torch.log_softmax(x, dim=1), (a, b)),
        (lambda x, y: x.max(dim=0).values - x.mean(), (a, b)),
        (lambda x, y: torch.where(x > 0, x, -x).pow(2).sqrt(), (a, b)),
        (lambda x, y: x.t().contiguous().view(-1)[:10], (a, b)),
        (lambda x, y: torch.cat([x, x[:2]], dim=0).exp(), (a, b)),
    ]
    for fn, _ in cases:
        expected = fn(a, b)
        got = fn(xa, xb)
        assert got.device.type == "xla"
        torch.testing.assert_close(got.cpu(), expected, rtol=1e-5, atol=1e-6)


NUMBER_OPERANDS = {  # a Python number (torch wraps it in a 0-d CPU tensor) or a 0-d CPU tensor
    "float32 * 0.3": (torch.float32, lambda t: t * 0.3),
    "bfloat16 * 0.3": (torch.bfloat16, lambda t: t * 0.3),
    "float16 + 7": (torch.float16, lambda t: t + 7),
    "int64 * 2.5": (torch.int64, lambda t: t * 2.5),
    "int32 * 3": (torch.int32, lambda t: t * 3),
    "float32 * True": (torch.float32, lambda t: t * True),
    "float64 / 3": (torch.float64, lambda t: t / 3),
    "int32 * a float32 0-d tensor": (torch.int32, lambda t: t * torch.tensor(2.5)),
    "float32 * an int32 0-d tensor": (torch.float32, lambda t: t * torch.tensor(3, dtype=torch.int32)),
}


@pytest.mark.parametrize("dtype, op", NUMBER_OPERANDS.values(), ids=NUMBER_OPERANDS.keys())
def test_numbers_and_0d_cpu_tensors_promote_as_on_the_cpu(dtype, op):
    cpu = torch.arange(5).to(dtype)
    expected, got = op(cpu), op(cpu.to(xm.xla_device())).cpu()
    assert got.dtype == expected.dtype
    torch.testing.assert_close(got, expected, rtol=0, atol=0)


BOOL_ARITHMETIC = {  # torch's sum of bools is a logical or, its product a logical and
    "a + b": lambda a, b: a + b,
    "a + True": lambda a, b: a + True,
    "a * b": lambda a, b: a * b,
    "a * False": lambda a, b: a * False,
    "add, alpha 2": lambda a, b: torch.add(a, b, alpha=2),
    "add, alpha False": lambda a, b: torch.add(a, b, alpha=False),
    "a * a 0-d True": lambda a, b: a * torch.tensor(True),
    "broadcast a[:, None] * b": lambda a, b: a[:, None] * b,
    "a.add_(b)": lambda a, b: a.clone().add_(b),
    "a.mul_(b)": lambda a, b: a.clone().mul_(b),
    "a += True": lambda a, b: a.clone().__iadd__(True),
    "a + 1 (int64)": lambda a, b: a + 1,
}


@pytest.mark.parametrize("op", BOOL_ARITHMETIC.values(), ids=BOOL_ARITHMETIC.keys())
def test_bool_sums_and_products_are_logical_as_on_the_cpu(op):
    a = torch.tensor([True, False, True, False])
    b = torch.tensor([True, True, False, False])
    d = xm.xla_device()
    expected, got = op(a, b), op(a.to(d), b.to(d)).cpu()
    assert got.dtype == expected.dtype
    torch.testing.assert_close(got, expected, rtol=0, atol=0)


def test_bool_subtraction_and_a_float_update_of_a_bool_are_refused_as_on_the_cpu():
    a = torch.tensor([True, False])
    x = a.to(xm.xla_device())
    for op in (lambda t: t - t, lambda t: t.mul_(2.5)):
        with pytest.raises(RuntimeError):
            op(a.clone())
        with pytest.raises(RuntimeError):
            op(x)
    assert x.cpu().tolist() == [True, False]


@pytest.mark.parametrize("p", [2.0, 1.0, 3.0, 0.0, float("inf"), float("-inf")])
def test_vector_norms_and_their_gradients_match_the_cpu(p):
    torch.manual_seed(0)
    a = torch.randn(4, 6)
    a[0, 1] = 0.0
    d = xm.xla_device()
    cases = [
        lambda x: torch.norm(x, p),
        lambda x: torch.norm(x, p, dim=1, keepdim=True),
        lambda x: torch.linalg.vector_norm(x, p, dim=(0, 1)),
        lambda x: torch.linalg.vector_norm(x, p, dim=0, dtype=torch.float64),
    ]
    for fn in cases:
        x_cpu, x_xla = a.clone().requires_grad_(), a.to(d).requires_grad_()
        expected, got = fn(x_cpu), fn(x_xla)
        torch.testing.assert_close(got.cpu(), expected, rtol=1e-5, atol=1e-6)
        if p != 0.0:
            expected.sum().backward()
            got.sum().backward()
            torch.testing.assert_close(x_xla.grad.cpu(), x_cpu.grad, rtol=1e-5, atol=1e-6)
    with pytest.raises(RuntimeError, match="floating point"):
        torch.norm(torch.ones(3, dtype=torch.int64, device=d), 2.0)


def test_stack_and_ones_like_do_not_fall_back():
    """ones_like fills what empty_like made; stack is one cat of its
    tensors, each with a new dim."""
    d = xm.xla_device()
    before = fallback_counts()
    norms = [torch.ones(3, device=d).sum(), torch.full((2,), 2.0, device=d).sum()]
    stacked = torch.stack(norms)
    assert stacked.cpu().tolist() == [3.0, 4.0]
    assert torch.stack([torch.ones(2, 3, device=d)] * 2, dim=2).cpu().tolist() == torch.stack(
        [torch.ones(2, 3)] * 2, dim=2).tolist()
    assert torch.ones_like(stacked).cpu().tolist() == [1.0, 1.0]
    assert torch.zeros_like(stacked).cpu().tolist() == [0.0, 0.0]
    assert fallback_counts() == before
    with pytest.raises(RuntimeError, match="equal size"):
        torch.stack([torch.ones(2, device=d), torch.ones(3, device=d)])


def test_a_dropped_graph_fails_its_torch_tensors_with_ordos_execution_error():
    from ordo.torch_xla import _XLAC
    d = xm.xla_device()
    kept = torch.full((2,), 3.0, device=d)
    xm.mark_step()
    lost = kept * 2
    _XLAC._clear_pending_irs(str(d))
    with pytest.raises(ordo.ExecutionError, match="dropped"):
        lost.cpu()
    assert (kept + 1).cpu().tolist() == [4.0, 4.0]  # what had run keeps its value


def fallback_counts():
    return {n: met.counter_value(n) for n in met.counter_names() if n.startswith("aten::")}


def test_advanced_indexing_with_integer_tensors_is_lowered_with_its_gradient():
    torch.manual_seed(0)
    a = torch.randn(4, 5, 6)
    i, j = torch.tensor([[0, 3], [-1, 1]]), torch.tensor([2, -4])
    cases = [
        lambda x, i, j: x[i],                   # B first
        lambda x, i, j: x[:, j],                # B in place of dim 1
        lambda x, i, j: x[i, :, j],             # not adjacent: B first
        lambda x, i, j: x[:, i, j],             # adjacent, broadcast together
        lambda x, i, j: x[j, 1:5][:, i[0]],     # after a slice
    ]
    d = xm.xla_device()
    before = fallback_counts()
    for fn in cases:
        x_cpu, x_xla = a.clone().requires_grad_(), a.to(d).requires_grad_()
        expected, got = fn(x_cpu, i, j), fn(x_xla, i.to(d), j.to(d))
        torch.testing.assert_close(got.cpu(), expected)
        g = torch.randn(expected.shape)
        expected.backward(g)
        got.backward(g.to(d))
        torch.testing.assert_close(x_xla.grad.cpu(), x_cpu.grad)  # repeated indices add up
    accumulated = torch.zeros(4, 5, device=d).index_put_((i.to(d),), torch.ones(5, device=d), accumulate=True)
    torch.testing.assert_close(accumulated.cpu(), torch.zeros(4, 5).index_put_((i,), torch.ones(5), accumulate=True))
    assert fallback_counts() == before


def test_a_mask_index_and_an_assigning_index_put_fall_back_and_are_right():
    d = xm.xla_device()
    a = torch.arange(12.0).reshape(3, 4)
    x = a.to(d)
    torch.testing.assert_close(x[x > 5].cpu(), a[a > 5])
    mask = torch.tensor([1, 0, 1], dtype=torch.uint8)  # a mask too (on the CPU: the device holds no uint8)
    torch.testing.assert_close(x[mask].cpu(), a[mask])
    i = torch.tensor([2, 0])
    x[i.to(d)] = torch.full((4,), -1.0, device=d)
    a[i] = -1.0
    torch.testing.assert_close(x.cpu(), a)
    with pytest.raises(IndexError, match="shape of the mask"):
        torch.ones(3, device=d)[torch.tensor([True, False], device=d)]
    with pytest.raises(IndexError, match="too many indices"):
        torch.ones(3, device=d)[torch.tensor([0], device=d), torch.tensor([0], device=d)]


def test_the_gradients_of_views_reach_their_base():
    """A view's backward writes the gradient into zeros through a view (or
    is lowered as a scatter): the write must reach the zeros."""
    a = torch.arange(12.0).reshape(3, 4)
    views = [lambda x: x[1:3], lambda x: x[:, 1:3], lambda x: x[1], lambda x: x[:, 2], lambda x: x[::2, 1::2],
             lambda x: x.narrow(1, 1, 2), lambda x: x.diagonal(), lambda x: x.chunk(2, 1)[1],
             lambda x: x.unfold(1, 2, 1), lambda x: x.t()[1:]]
    d = xm.xla_device()
    for view in views:
        x_cpu, x_xla = a.clone().requires_grad_(), a.to(d).requires_grad_()
        y_cpu, y_xla = view(x_cpu), view(x_xla)
        g = torch.randn(y_cpu.shape)
        y_cpu.backward(g)
        y_xla.backward(g.to(d))
        torch.testing.assert_close(x_xla.grad.cpu(), x_cpu.grad)


def test_views_share_their_base_and_in_place_ops_keep_torch_semantics():
    d = xm.xla_device()
    base_cpu = torch.arange(12.0).reshape(3, 4)
    base = base_cpu.to(d)
    for t in (base_cpu, base):
        v = t.view(-1)
        v[1] = 100.0          # through a view
        t[:, 0] = 5           # a select, then fill_
        t.t()[2].add_(1)      # a transposed view's row is the base's column
        t.mul_(2)
        col = t[:, 3]
        col.sub_(1)
    torch.testing.assert_close(base.cpu(), base_cpu)
    p = torch.ones(3, device=d)
    g = torch.full((3,), 2.0, device=d)
    p.add_(g, alpha=-0.5)
    assert p.cpu().tolist() == [0.0, 0.0, 0.0]


IN_PLACE_UPDATES = {  # ordo's kernels of writes (in_place.cc): the unboxed ones, then boxed
    "add_": lambda t, o: t.add_(o, alpha=2),
    "add_ scalar": lambda t, o: t.add_(1.5),
    "sub_": lambda t, o: t.sub_(o[0], alpha=0.5),
    "sub_ scalar": lambda t, o: t.sub_(2),
    "mul_": lambda t, o: t.mul_(o),
    "mul_ scalar": lambda t, o: t.mul_(-3),
    "div_": lambda t, o: t.div_(o + 10),
    "div_ scalar": lambda t, o: t.div_(4),
    "addcmul_": lambda t, o: t.addcmul_(o, o, value=0.25),
    "addcdiv_": lambda t, o: t.addcdiv_(o, o + 10, value=-2),
    "a float64 operand": lambda t, o: t.add_(o.double()),
    "an int operand": lambda t, o: t.mul_(o.long()),
    "zero_": lambda t, o: t.zero_(),
    "fill_": lambda t, o: t.fill_(-2.5),
    "fill_ from a tensor": lambda t, o: t.fill_(o[1]),
    "relu_": lambda t, o: t.sub_(5).relu_(),
    "neg_": lambda t, o: t.neg_(),
    "sqrt_": lambda t, o: t.sqrt_(),
    "exp_": lambda t, o: t.div_(8).exp_(),
    "sigmoid_": lambda t, o: t.sigmoid_(),
    "tanh_": lambda t, o: t.div_(6).tanh_(),
    "clamp_": lambda t, o: t.clamp_(2, 6.5),
    "clamp_min_": lambda t, o: t.clamp_min_(4),
    "abs_": lambda t, o: t.sub_(6).abs_(),
    "floor_": lambda t, o: t.div_(3).floor_(),
    "pow_": lambda t, o: t.pow_(2),
    "masked_fill_": lambda t, o: t.masked_fill_(t > 5, -1),
    "lerp_": lambda t, o: t.lerp_(o, 0.25),
    "index_fill_": lambda t, o: t.index_fill_(-1, torch.tensor([0, 2], device=t.device), 7),
    "eq_ into floats": lambda t, o: t.eq_(5),
}


@pytest.mark.parametrize("update", IN_PLACE_UPDATES.values(), ids=IN_PLACE_UPDATES.keys())
def test_in_place_updates_write_their_tensor_and_its_views_as_on_the_cpu(update):
    d = xm.xla_device()
    base_cpu, other_cpu = torch.arange(12.0).reshape(3, 4), torch.linspace(-1, 1, 4)
    results = []
    for device in ("cpu", d):
        base, other = base_cpu.to(device, copy=True), other_cpu.to(device)
        row, column = base[1], base[:, 2]
        assert update(base, other) is base
        update(row, other)  # through a view: the base and the other view see it
        results.append([base.cpu(), row.cpu(), column.cpu()])
    for got, expected in zip(results[1], results[0]):
        torch.testing.assert_close(got, expected)


def test_an_in_place_update_reaches_every_alias_and_no_other_tensor():
    # A tensor without aliases takes an update alone (xla_tensor_impl.h);
    # each alias here must see it, or not, as on the CPU.
    def run(device):
        seen = []
        t = torch.arange(6.0).reshape(2, 3).to(device)
        data = t.data
        t.add_(1)
        seen.append(data.cpu().clone())
        detached = t.detach()
        t.mul_(2)
        seen.append(detached.cpu().clone())
        del data, detached
        row = t[0]
        t.sub_(1)
        seen.append(row.cpu().clone())
        del row
        t.add_(10)  # its views gone: alone again
        seen.append(t.cpu().clone())
        t[1].add_(100)
        t.add_(1)
        seen.append(t.cpu().clone())
        x = torch.ones(3).to(device)
        y = x * 2
        x.add_(y)
        seen += [y.cpu().clone(), x.cpu().clone()]
        shared = torch.zeros(2).to(device)
        shared.set_(x)  # now an alias of x
        x.mul_(3)
        seen.append(shared.cpu().clone())
        half = torch.zeros(3, dtype=torch.bfloat16).to(device)
        half.add_(torch.full((3,), 1.3).to(device))  # a float32 result written as bfloat16
        seen.append(half.cpu().clone())
        return seen

    for got, expected in zip(run(xm.xla_device()), run("cpu")):
        assert got.dtype == expected.dtype
        torch.testing.assert_close(got, expected, rtol=0, atol=0)


def test_a_view_kept_while_its_base_is_updated_keeps_no_old_value_alive():
    """A write drops the values its aliases held: a view kept across steps
    is read again from the new base, and no old value of it is computed at
    each step."""
    d = xm.xla_device()
    t, o = torch.randn(4, 4, device=d), torch.randn(4, 4, device=d)
    row, alias = t[1], t.detach()
    xm.mark_step(wait=True)
    before = live_tensors()
    for _ in range(20):
        t.add_(o)
    xm.mark_step(wait=True)
    assert live_tensors() - before <= 2
    torch.testing.assert_close(row.cpu(), t.cpu()[1])
    torch.testing.assert_close(alias.cpu(), t.cpu())


def test_the_last_alias_left_stands_alone_and_keeps_torch_semantics():
    """Once its base and other aliases are gone, a view keeps only its own
    value: a write to it is not carried back to a base nobody sees (a
    weight's gradient, a transposed view of a product, cost a transpose of
    the weight a step)."""
    d = xm.xla_device()
    t = torch.arange(6.0).reshape(2, 3).to(d)
    v = t.t().detach()  # no _base: as AccumulateGrad keeps a gradient
    del t
    xm.mark_step(wait=True)
    v.add_(1)
    assert "permute" not in ordo._C.dump_pending_graph(), "the write went back to a dead base"

    def run(device):
        seen = []
        t = torch.arange(6.0).reshape(2, 3).to(device)
        v = t.t().detach()
        del t
        v.add_(1)
        seen.append(v.cpu().clone())
        row = v[1]  # a new view of the lone tensor aliases it again
        row.mul_(10)
        seen.append(v.cpu().clone())
        v.t_()  # an in-place view op of a lone tensor
        v.sub_(1)
        seen += [v.cpu().clone(), row.cpu().clone()]
        base = torch.arange(4.0).to(device)
        half = base[2:]
        base.set_(half)  # set_ onto a view of its own aliases
        base.add_(5)
        seen += [base.cpu().clone(), half.cpu().clone()]
        return seen

    for got, expected in zip(run(d), run("cpu")):
        torch.testing.assert_close(got, expected, rtol=0, atol=0)


def test_activations_python_objects_that_die_on_autograds_thread_are_released_at_mark_step():
    """An activation saved for backward whose Python object went first dies
    on autograd's thread, without the GIL: its Python object is parked
    until the next mark_step (python_objects.h), or released the PyTorch
    way when a weak reference reaches it."""
    import weakref
    from ordo import _torch

    d = xm.xla_device()
    torch.manual_seed(0)
    first, second = torch.nn.Linear(4, 8).to(d), torch.nn.Linear(8, 2).to(d)
    x = torch.randn(3, 4, device=d)
    xm.mark_step(wait=True)
    released = []
    hidden = torch.relu(first(x))
    note = type("Note", (), {})()
    hidden.note = note  # lives in the Python object's __dict__
    weakref.finalize(note, released.append, "note")
    watched = torch.relu(first(x))
    seen = weakref.ref(watched)
    loss = second(hidden).sum() + second(watched).sum()
    del hidden, note, watched  # the graph still holds both tensors
    loss.backward()
    assert seen() is None, "an object a weak reference reaches is released the PyTorch way"
    assert _torch.parked_python_objects() >= 1
    assert released == []
    xm.mark_step()
    assert _torch.parked_python_objects() == 0
    assert released == ["note"]
    assert first.weight.grad.cpu().shape == (8, 4)


VIEW_OPS = {  # each view's write reaches its base, and the base's reaches the view
    "unfold, windows apart": lambda t: t.unfold(1, 2, 2),
    "unfold of a transpose": lambda t: t.t().unfold(0, 3, 1)[1],
    "t_ of a row pair": lambda t: t[1:].t_(),
    "transpose_": lambda t: t.view(2, 2, 3).transpose_(0, 2),
    "unsqueeze_ then squeeze_": lambda t: t[2].unsqueeze_(0).unsqueeze_(2).squeeze_(0),
    "squeeze_ of a dim": lambda t: t[:, 1:2].squeeze_(1),
    "as_strided_": lambda t: t.as_strided_((2, 2), (1, 4), 1),
    "split, a part": lambda t: torch.split(t, [1, 3], dim=1)[1],
    "unbind, a row": lambda t: t.unbind(0)[2],
    "chunk of a narrow": lambda t: t.narrow(1, 1, 2).chunk(2, dim=0)[0],
    "movedim of a view": lambda t: t.view(3, 2, 2).movedim(0, 2),
    "diagonal": lambda t: t.diagonal(),
    "detach of a slice": lambda t: t[:, ::2].detach(),
}


@pytest.mark.parametrize("view", VIEW_OPS.values(), ids=VIEW_OPS.keys())
def test_views_and_in_place_view_ops_alias_their_base_as_on_the_cpu(view):
    d = xm.xla_device()
    results = []
    for device in ("cpu", d):
        base = torch.arange(12.0).reshape(3, 4).to(device)
        v = view(base)
        shape = tuple(v.shape)
        v.mul_(-1)  # reaches the base
        base.add_(100)  # reaches the view
        results.append((shape, base.cpu(), v.cpu()))
    assert results[1][0] == results[0][0]
    torch.testing.assert_close(results[1][1], results[0][1])
    torch.testing.assert_close(results[1][2], results[0][2])


def test_a_write_through_an_expanded_view_is_refused_and_changes_nothing():
    for device in ("cpu", xm.xla_device()):
        base = torch.ones(1, 3).to(device)
        repeated = base.expand(2, 3)
        for write in (lambda: repeated.add_(1), lambda: repeated.copy_(torch.zeros(2, 3))):
            with pytest.raises(RuntimeError, match="more than one element of the written-to tensor"):
                write()
        assert base.cpu().tolist() == [[1.0, 1.0, 1.0]] and repeated.cpu().tolist() == [[1.0] * 3] * 2
        base.expand(1, 3).mul_(2)  # repeats nothing: written through
        assert base.cpu().tolist() == [[2.0, 2.0, 2.0]]


def test_storage_tells_aliases_apart_and_gives_no_data_pointer():
    """Aliases share a storage of no bytes (DDP's reducer asks is_alias_of
    of each gradient and its bucket)."""
    d = xm.xla_device()
    t, other = torch.ones(2, 3, device=d), torch.ones(2, 3, device=d)

    def storage(x):
        return x._storage()._cdata
    assert storage(t[0]) == storage(t) == storage(t.detach()) == storage(t[1].t())
    assert storage(other) != storage(t) and storage(t.clone()) != storage(t)
    with pytest.raises(RuntimeError, match="data pointer"):
        t.data_ptr()


IN_PLACE_REFUSALS = {
    "a broadcast that grows the output": lambda d: torch.ones(3, device=d).add_(torch.ones(2, 3, device=d)),
    "a float result into ints": lambda d: torch.ones(2, dtype=torch.long, device=d).div_(torch.ones(2, device=d)),
    "a float scalar into ints": lambda d: torch.ones(2, dtype=torch.long, device=d).mul_(0.5),
    "a float alpha for ints": lambda d: torch.ones(2, dtype=torch.long, device=d).add_(1, alpha=1.5),
    "a float result of a unary op into ints": lambda d: torch.arange(3, device=d).sqrt_(),
    "fill_ from a tensor of one dimension": lambda d: torch.ones(3, device=d).fill_(torch.ones(1, device=d)),
    "integer addcdiv": lambda d: torch.ones(2, device=d).addcdiv_(*[torch.ones(2, dtype=torch.long, device=d)] * 2),
}


@pytest.mark.parametrize("refused", IN_PLACE_REFUSALS.values(), ids=IN_PLACE_REFUSALS.keys())
def test_an_in_place_update_torch_refuses_is_refused_and_leaves_the_tensor_alone(refused):
    d = xm.xla_device()
    with pytest.raises(RuntimeError) as on_cpu:
        refused("cpu")
    with pytest.raises(RuntimeError) as on_xla:
        refused(d)
    first_words = " ".join(str(on_cpu.value).split()[:2])
    if "addcdiv" not in str(on_xla.value):  # ordo's own words there
        assert first_words in str(on_xla.value)
    kept = torch.ones(3, device=d)
    with pytest.raises(RuntimeError):
        kept.add_(torch.ones(2, 3, device=d))
    assert kept.cpu().tolist() == [1.0] * 3


def live_tensors():
    return met.counter_value("CreateTensor") - (met.counter_value("DestroyTensor") or 0)


LONG_LIVED_UPDATES = {
    "add_": lambda t, o: t.add_(o),
    "clamp_": lambda t, o: t.clamp_(-1, 1),
    "masked_fill_": lambda t, o: t.masked_fill_(o > 0, 0.5),
    "lerp_": lambda t, o: t.lerp_(o, 0.1),
    "an assigning index": lambda t, o: t.__setitem__(torch.tensor([0, 2], device=t.device), 1.0),
    "a slice assigned": lambda t, o: t.__setitem__((slice(None), 0), 5.0),
    "add_ through a row": lambda t, o: t[1].add_(1),
    "uniform_": lambda t, o: t.uniform_(),
    "normal_": lambda t, o: t.normal_(),
    "add with out=": lambda t, o: torch.add(o, 1, out=t),
    "mm with out=": lambda t, o: torch.mm(o, o, out=t),
}


@pytest.mark.parametrize("update", LONG_LIVED_UPDATES.values(), ids=LONG_LIVED_UPDATES.keys())
def test_an_in_place_update_leaves_no_old_value_behind(update):
    """A tensor updated every step holds one value, not one a step (torch
    1.13's functionalization kept every value a tensor had until a view of
    it synced)."""
    d = xm.xla_device()
    t, o = torch.randn(4, 4, device=d), torch.randn(4, 4, device=d)
    update(t, o)
    xm.mark_step(wait=True)
    before = live_tensors()
    for _ in range(20):
        update(t, o)
    xm.mark_step(wait=True)
    assert live_tensors() - before <= 2


FOREACH_OPS = {  # ordo's kernels for the list ops (foreach.cc): each element's op
    "_foreach_add_ of lists, alpha": lambda a, b: torch._foreach_add_(a, b, alpha=-0.5),
    "_foreach_mul_ by a number": lambda a, b: torch._foreach_mul_(a, 0.9),
    "_foreach_div_ by a list of numbers": lambda a, b: torch._foreach_div_(a, [2.0, 4.0, 8.0]),
    "_foreach_addcmul_": lambda a, b: torch._foreach_addcmul_(a, b, b, value=0.1),
    "_foreach_addcdiv_ by numbers": lambda a, b: torch._foreach_addcdiv_(a, b, [x.abs() + 1 for x in b], [1.0, 2.0, 3.0]),
    "_foreach_sqrt_": lambda a, b: torch._foreach_sqrt_([x.abs() for x in a]),
    "_foreach_zero_": lambda a, b: torch._foreach_zero_(a),
    "_foreach_maximum_ (no maximum_: maximum, copied back)": lambda a, b: torch._foreach_maximum_(a, b),
    "_foreach_add, new tensors": lambda a, b: torch._foreach_add(a, b),
    "_foreach_neg, new tensors": lambda a, b: torch._foreach_neg(a),
    "_foreach_norm": lambda a, b: torch._foreach_norm(a),
}


@pytest.mark.parametrize("op", FOREACH_OPS.values(), ids=FOREACH_OPS.keys())
def test_list_ops_match_the_cpu_and_update_in_place(op):
    torch.manual_seed(0)
    shapes = [(4, 3), (5,), (2, 2, 2)]
    a, b = [torch.randn(s) for s in shapes], [torch.randn(s) for s in shapes]
    d = xm.xla_device()
    xa, xb = [t.to(d) for t in a], [t.to(d) for t in b]
    expected, got = op(a, b), op(xa, xb)
    if expected is None:
        assert got is None
        expected, got = a, xa
    assert len(got) == len(expected)
    for x, e in zip(got, expected):
        assert x.device.type == "xla"
        torch.testing.assert_close(x.cpu(), e, rtol=1e-6, atol=1e-6)


def test_list_ops_of_different_lengths_or_none_are_refused():
    d = xm.xla_device()
    a = [torch.ones(2, device=d), torch.ones(3, device=d)]
    with pytest.raises(RuntimeError, match="one length"):
        torch._foreach_add_(a, [torch.ones(2, device=d)])
    with pytest.raises(RuntimeError):
        torch._foreach_add_([], [])
    assert [t.cpu().tolist() for t in a] == [[1.0, 1.0], [1.0, 1.0, 1.0]]


@pytest.mark.parametrize("make", [
    lambda ps: torch.optim.SGD(ps, lr=0.1, momentum=0.9, foreach=True),
    lambda ps: torch.optim.Adam(ps, lr=0.01, foreach=True),
    lambda ps: torch.optim.AdamW(ps, lr=0.01, weight_decay=0.1, foreach=True),
], ids=["SGD", "Adam", "AdamW"])
def test_foreach_optimizers_train_as_on_the_cpu_and_keep_no_old_values(make):
    """torch.optim's foreach=True updates every parameter with one list op;
    on the xla device torch's own kernels for them failed (no meta kernel)."""
    torch.manual_seed(0)
    cpu_net = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 3))
    d = xm.xla_device()
    xla_net = copy.deepcopy(cpu_net).to(d)
    x, y = torch.randn(32, 8), torch.randint(0, 3, (32,))
    xx, xy = x.to(d), y.to(d)
    cpu_opt, xla_opt = make(cpu_net.parameters()), make(xla_net.parameters())
    for step in range(12):
        for net, opt, inputs, labels in ((cpu_net, cpu_opt, x, y), (xla_net, xla_opt, xx, xy)):
            opt.zero_grad()
            torch.nn.functional.cross_entropy(net(inputs), labels).backward()
            opt.step()
        xm.mark_step(wait=True)
        if step == 4:
            before = live_tensors()
    assert live_tensors() - before <= 2
    for p, q in zip(cpu_net.parameters(), xla_net.parameters()):
        torch.testing.assert_close(q.cpu(), p, rtol=1e-4, atol=1e-5)


OUT_OPS = {  # ordo's kernel for every out= op (in_place.cc, BoxedOutUpdate)
    "add": lambda a, b, out: torch.add(a, b, alpha=2, out=out),
    "mul by a number": lambda a, b, out: torch.mul(a, 3, out=out),
    "mm, resizing out": lambda a, b, out: torch.mm(a, b.t(), out=out),
    "sum, resizing out": lambda a, b, out: torch.sum(a, 0, out=out),
    "cat, resizing out": lambda a, b, out: torch.cat([a, b], out=out),
    "into float64": lambda a, b, out: torch.add(a, b, out=out.double()),
    "into int64 (refused)": lambda a, b, out: torch.add(a, b, out=out.long()),
}


@pytest.mark.filterwarnings("ignore:An output with one or more elements was resized")
@pytest.mark.parametrize("op", OUT_OPS.values(), ids=OUT_OPS.keys())
def test_out_ops_write_out_and_its_views_as_on_the_cpu(op):
    results = []
    for device in ("cpu", xm.xla_device()):
        a, b = torch.arange(6.0).reshape(2, 3).to(device), torch.linspace(-1, 1, 6).reshape(2, 3).to(device)
        out = torch.zeros(2, 3).to(device)
        row = out[0]
        try:
            written = op(a, b, out)
        except RuntimeError as error:
            results.append(str(error).split(" can't")[0])
            continue
        # A view of an out that was resized keeps the old value (as the
        # CPU's keeps its old storage): only an out of its own shape is
        # checked through it.
        results.append([written.cpu().clone()] + ([row.cpu().clone()] if written.shape == (2, 3) else []))
    if isinstance(results[0], str):
        assert results[1] == results[0]
        return
    for got, expected in zip(results[1], results[0]):
        assert got.dtype == expected.dtype
        torch.testing.assert_close(got, expected)


def test_a_training_loop_keeps_as_many_tensors_at_step_30_as_at_step_5():
    d = xm.xla_device()
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Conv2d(1, 4, 3), torch.nn.BatchNorm2d(4), torch.nn.ReLU(inplace=True),
                                torch.nn.Flatten(), torch.nn.Linear(4 * 6 * 6, 3)).to(d)
    x, y = torch.randn(8, 1, 8, 8, device=d), torch.randint(0, 3, (8,), device=d)
    optimizers = [torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9),
                  torch.optim.AdamW(model.parameters(), lr=1e-3)]
    live = {}
    for step in range(31):
        for optimizer in optimizers:
            optimizer.zero_grad()
            torch.nn.functional.cross_entropy(model(x), y).backward()
            optimizer.step()
        xm.mark_step(wait=True)
        live[step] = live_tensors()
    assert live[30] == live[5], live


def test_functorchs_functionalize_of_cpu_tensors_is_left_as_torch_has_it():
    """ordo registers kernels for the xla device alone: functionalize on CPU
    tensors takes torch's path (its meta check too)."""
    from functorch.experimental import functionalize

    def steps(x, y):
        x.view(-1).add_(y.view(-1), alpha=2)
        return x.mul_(3).addcmul_(y, y, value=0.5).div_(2.0).sub_(1)
    x, y = torch.ones(2, 2), torch.arange(4.0).view(2, 2)
    torch.testing.assert_close(functionalize(steps)(x.clone(), y), steps(x.clone(), y))
    with pytest.raises(RuntimeError, match="doesn't match the broadcast shape"):
        functionalize(lambda a: a.add_(torch.ones(2, 3)))(torch.ones(3))


def test_an_op_ordo_does_not_lower_falls_back_and_is_counted():
    met.clear_counters()
    x = torch.arange(6.0)
    got = torch.cumsum(x.to(xm.xla_device()), dim=0)
    assert got.device.type == "xla"
    assert got.cpu().tolist() == torch.cumsum(x, 0).tolist()
    assert met.counter_value("aten::cumsum") >= 1
    assert "aten::cumsum" in met.counter_names()
    assert "Counter: aten::cumsum" in met.metrics_report()


def test_bad_input_gets_a_clear_error():
    d = xm.xla_device()
    with pytest.raises(TypeError, match="cannot hold"):
        torch.ones(2, dtype=torch.complex64).to(d)
    with pytest.raises(ValueError, match="xla device"):
        xm.all_reduce(xm.REDUCE_SUM, torch.ones(2))
    if ordo._C.num_devices() > 1:
        with pytest.raises(RuntimeError, match="one device"):
            torch.ones(2, device="xla:0") + torch.ones(2, device="xla:1")


def test_a_training_step_is_one_graph_compiled_once_and_matches_the_cpu():
    torch.manual_seed(1)
    cpu_model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4))
    d = xm.xla_device()
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4)).to(d)
    model.load_state_dict(cpu_model.state_dict())
    optimizers = [torch.optim.SGD(m.parameters(), lr=0.1, momentum=0.9) for m in (cpu_model, model)]
    x, y = torch.randn(32, 8), torch.randint(0, 4, (32,))
    xx, xy = x.to(d), y.to(d)
    losses_cpu, losses_xla = [], []
    compiles = []
    for _ in range(5):
        for m, opt, inputs, target, losses in ((cpu_model, optimizers[0], x, y, losses_cpu),
                                               (model, optimizers[1], xx, xy, losses_xla)):
            opt.zero_grad()
            loss = torch.nn.functional.cross_entropy(m(inputs), target)
            loss.backward()
            opt.step()
            losses.append(loss)
        xm.mark_step()
        compiles.append(met.counter_value("UncachedCompile"))
    torch.testing.assert_close(torch.stack([l.cpu() for l in losses_xla]), torch.stack(losses_cpu),
                               rtol=1e-5, atol=1e-6)  # reordered float32 sums
    for p_xla, p_cpu in zip(model.parameters(), cpu_model.parameters()):
        torch.testing.assert_close(p_xla.cpu(), p_cpu, rtol=1e-5, atol=1e-6)
    # The first two steps differ (the momentum buffers appear at the first),
    # every later step reuses the compiled graph.
    assert compiles[2] == compiles[3] == compiles[4]


def test_the_parallel_loader_uploads_ahead_and_its_threads_end_when_closed():
    import ordo.torch_xla.distributed.parallel_loader as pl
    device = xm.xla_device()
    batches = [(torch.full((2,), float(i)), torch.tensor([i])) for i in range(50)]
    loader = pl.ParallelLoader(batches, [device], loader_prefetch_size=2, device_prefetch_size=2)
    per_device = loader.per_device_loader(device)
    first = next(per_device)
    assert first[0].device.type == "xla" and first[0].cpu().tolist() == [0.0, 0.0]
    assert [b[1].item() for b in list(pl.MpDeviceLoader(batches[:5], device))] == [0, 1, 2, 3, 4]
    loader.close()
    for thread in loader._threads:
        thread.join(timeout=2)
        assert not thread.is_alive()


def test_step_closures_run_after_mark_step_in_order():
    import threading
    seen, done = [], threading.Event()
    t = torch.ones(2, device=xm.xla_device())
    xm.add_step_closure(lambda: seen.append(("sync", t.cpu().tolist())))
    for i in range(3):
        xm.add_step_closure(seen.append, args=(i,), run_async=True)
    xm.add_step_closure(done.set, run_async=True)
    assert seen == []
    xm.mark_step()
    assert done.wait(5)
    assert seen == [("sync", [1.0, 1.0]), 0, 1, 2]
    xm.add_step_closure(lambda: 1 / 0, run_async=True)
    xm.mark_step()
    time.sleep(0.2)
    with pytest.raises(ZeroDivisionError):
        xm.mark_step()


def test_copy_between_two_xla_devices_goes_through_the_host():
    if ordo._C.num_devices() < 2:
        pytest.skip("needs two devices")
    source = torch.arange(3.0, device="xla:1")
    target = torch.zeros(3, dtype=torch.float64, device="xla:0")
    target.copy_(source)
    assert target.device == torch.device("xla", 0) and target.dtype == torch.float64
    assert target.cpu().tolist() == [0.0, 1.0, 2.0]
    assert source.to("xla:0").device == torch.device("xla", 0)


def test_a_cpu_tensor_takes_an_xla_tensors_values_with_copy_():
    d = xm.xla_device()
    source = torch.arange(6.0).reshape(2, 3)
    into = torch.zeros(2, 3, dtype=torch.float64)
    into.copy_(source.to(d) * 2)  # the xla kernel of copy_, which reads the source back
    assert into.tolist() == (source * 2).tolist()
    rows = torch.zeros(4, 3)
    rows[1:3].copy_(source.to(d))  # into a CPU view, which keeps its base
    assert rows.tolist() == [[0.0] * 3, *source.tolist(), [0.0] * 3]
    wide = torch.zeros(2, 2, 3)
    wide.copy_(source.to(d))  # broadcast
    assert wide.tolist() == [source.tolist()] * 2
    with pytest.raises(RuntimeError, match="must match"):
        torch.zeros(4).copy_(source.to(d))
    assert into.tolist() == (source * 2).tolist()  # a refused copy changed nothing
    a = torch.ones(3, device=d, requires_grad=True)
    out = torch.zeros(3)
    out.copy_(a * 3)
    out.sum().backward()
    assert a.grad.cpu().tolist() == [3.0] * 3


@pytest.mark.parametrize("size, stride, offset", [
    ((2, 3), (3, 1), 2),      # one run: a slice
    ((3, 3), (1, 1), 0),      # overlapping windows
    ((2, 2), (1, 4), 1),      # a transposed block
    ((3,), (0,), 5),          # one element, repeated
])
def test_as_strided_views_read_and_write_as_on_the_cpu(size, stride, offset):
    d = xm.xla_device()
    base_cpu = torch.arange(12.0)
    base = base_cpu.to(d)
    torch.testing.assert_close(base.as_strided(size, stride, offset).cpu(), base_cpu.as_strided(size, stride, offset))
    offsets = _offsets(size, stride, offset)
    if len(set(offsets)) == len(offsets):
        for t in (base_cpu, base):  # a write through a view without overlap reaches the base
            t.as_strided(size, stride, offset).mul_(-1)
        torch.testing.assert_close(base.cpu(), base_cpu)
    with pytest.raises(RuntimeError, match="out of bounds"):
        base.as_strided((4,), (4,), 0)
    weights = torch.arange(1.0, 1.0 + torch.Size(size).numel()).reshape(size)
    grads = []
    for t in (torch.arange(12.0), torch.arange(12.0).to(d)):  # overlapping elements add up
        t.requires_grad_(True)
        (t.as_strided(size, stride, offset) * weights.to(t.device)).sum().backward()
        grads.append(t.grad.cpu())
    torch.testing.assert_close(grads[1], grads[0])


def _offsets(size, stride, offset):
    offsets = [offset]
    for s, st in zip(size, stride):
        offsets = [o + i * st for o in offsets for i in range(s)]
    return offsets
