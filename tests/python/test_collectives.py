"""The semantics of torch_xla's multi-device collective tests, on 1, 2, 4
and 8 devices, with numpy as the reference.

Each test runs a step on every device with ordo.spawn; the step returns
numpy arrays and the assertions run here, against a reference computed from
every device's input."""

import numpy as np
import pytest

import ordo
from cases import params
import spmd


def device_input(index, shape, dtype=np.float32):
    """A different, exactly representable input on every device."""
    values = np.arange(np.prod(shape, dtype=np.int64)).reshape(shape) % 7 + 1 + 10 * index
    return values.astype(dtype)


def assert_same_on_every_device(results):
    for result in results[1:]:
        np.testing.assert_array_equal(result, results[0])


# ---- all_reduce. ----

@pytest.mark.parametrize("scale", [1.0, 0.5])
def test_replication_all_reduce_of_a_list_is_in_place(world, scale):
    def step(index):
        ones = ordo.ones((2, 3))
        twos = ones + ones
        inputs = [ones, twos]
        returned = ordo.all_reduce(ordo.REDUCE_SUM, inputs, scale=scale)
        assert returned == inputs and returned[0] is ones and returned[1] is twos
        ordo.mark_step()
        return ones.numpy(), twos.numpy()

    for ones, twos in ordo.spawn(step):
        np.testing.assert_array_equal(ones, np.full((2, 3), world * scale, np.float32))
        np.testing.assert_array_equal(twos, np.full((2, 3), 2 * world * scale, np.float32))


def test_all_reduce_of_a_tensor_returns_a_new_tensor(world):
    def step(index):
        x = ordo.tensor(device_input(index, (5,)))
        total = ordo.all_reduce(ordo.REDUCE_SUM, x)
        assert total is not x
        return x.numpy(), total.numpy()

    results = ordo.spawn(step)
    inputs = [x for x, _ in results]
    for index, (x, total) in enumerate(results):
        np.testing.assert_array_equal(x, device_input(index, (5,)))  # untouched
        np.testing.assert_array_equal(total, spmd.all_reduce(inputs, ordo.REDUCE_SUM))


REDUCE_CASES = [
    # (id, reduce type, dtype, scale, input of device i)
    ("sum float32 scaled", ordo.REDUCE_SUM, np.float32, 0.25, lambda i: device_input(i, (3, 4))),
    ("sum int64", ordo.REDUCE_SUM, np.int64, 1.0, lambda i: device_input(i, (6,), np.int64) - 20),
    ("mul float64 scaled", ordo.REDUCE_MUL, np.float64, 2.0, lambda i: 1 + device_input(i, (7,), np.float64) / 100),
    ("min int32", ordo.REDUCE_MIN, np.int32, 1.0, lambda i: (device_input(i, (2, 5), np.int32) * 37) % 11),
    ("max float32 scaled", ordo.REDUCE_MAX, np.float32, 0.5, lambda i: np.cos(device_input(i, (9,)))),
    ("and int32", ordo.REDUCE_AND, np.int32, 1.0, lambda i: (device_input(i, (8,), np.int32) * 0x9E37) & 0xFFFF),
    ("or int64", ordo.REDUCE_OR, np.int64, 1.0, lambda i: 1 << (device_input(i, (8,), np.int64) % 40)),
    ("and bool", ordo.REDUCE_AND, np.bool_, 1.0, lambda i: device_input(i, (6,)) % 3 != 0),
    ("or bool", ordo.REDUCE_OR, np.bool_, 1.0, lambda i: (device_input(i, (6,)) + i) % 5 == 0),
    ("sum of no elements", ordo.REDUCE_SUM, np.float32, 1.0, lambda i: np.zeros((0, 3), np.float32)),
]


@pytest.mark.parametrize("reduce_type, dtype, scale, make_input", params(REDUCE_CASES))
def test_all_reduce_matches_numpy(world, reduce_type, dtype, scale, make_input):
    inputs = [make_input(i).astype(dtype) for i in range(world)]

    def step(index):
        return ordo.all_reduce(reduce_type, ordo.tensor(inputs[index]), scale=scale).numpy()

    results = ordo.spawn(step)
    assert_same_on_every_device(results)  # bitwise: one reduction order
    expected = spmd.all_reduce(inputs, reduce_type, scale)
    assert results[0].dtype == expected.dtype
    np.testing.assert_allclose(results[0], expected, rtol=1e-6)


def test_all_reduce_within_replica_groups(world):
    groups = spmd.even_odd_groups(world)

    def step(index):
        return ordo.all_reduce(ordo.REDUCE_SUM, ordo.tensor([float(index)]), groups=groups).numpy()

    for index, result in enumerate(ordo.spawn(step)):
        np.testing.assert_array_equal(result, [float(sum(spmd.group_of(index, groups)))])


# ---- all_gather. ----

def test_all_gather_of_the_ordinal_gives_arange(world):
    groups = spmd.even_odd_groups(world)

    def step(index):
        me = ordo.tensor([index])
        return ordo.all_gather(me).numpy(), ordo.all_gather(me, groups=groups).numpy()

    for index, (everyone, my_group) in enumerate(ordo.spawn(step)):
        np.testing.assert_array_equal(everyone, np.arange(world))
        np.testing.assert_array_equal(my_group, np.arange(index % 2, world, 2))


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_all_gather_along_a_dimension_into_output(world, dim):
    shape = (2, 3)
    out_shape = list(shape)
    out_shape[dim] *= world

    def step(index):
        output = ordo.zeros(out_shape)
        returned = ordo.all_gather(ordo.tensor(device_input(index, shape)), dim=dim, output=output)
        assert returned is output
        return output.numpy()

    expected = spmd.all_gather([device_input(i, shape) for i in range(world)], dim)
    for result in ordo.spawn(step):
        np.testing.assert_array_equal(result, expected)


# ---- reduce_scatter. ----

def test_reduce_scatter_is_a_slice_of_the_scaled_all_reduce(world):
    def step(index):
        x = ordo.rand((32, 2 * world, 32), seed=index)
        shard = ordo.reduce_scatter(ordo.REDUCE_SUM, x, scale=1.0 / world, scatter_dim=1, shard_count=world)
        full = ordo.all_reduce(ordo.REDUCE_SUM, x, scale=1.0 / world)
        ordo.mark_step()
        return x.numpy(), shard.numpy(), full.numpy()

    results = ordo.spawn(step)
    inputs = [x for x, _, _ in results]
    for index, (_, shard, full) in enumerate(results):
        assert shard.shape == (32, 2, 32)
        np.testing.assert_allclose(shard, full[:, 2 * index:2 * index + 2, :], rtol=1e-6)
        np.testing.assert_allclose(
            shard, spmd.reduce_scatter(inputs, ordo.REDUCE_SUM, 1.0 / world, 1, index), rtol=1e-5)


def test_reduce_scatter_of_a_list_into_outputs(world):
    # torch_xla's list form: one scatter_dim and shard_count for every tensor.
    shapes = [(world, 3), (2 * world, 2)]

    def step(index):
        inputs = [ordo.tensor(device_input(index, shape)) for shape in shapes]
        outputs = [ordo.zeros((1, 3)), ordo.zeros((2, 2))]
        returned = ordo.reduce_scatter(ordo.REDUCE_MAX, inputs, 1.0, 0, world, output=outputs)
        assert returned is outputs
        return [o.numpy() for o in outputs]

    for index, results in enumerate(ordo.spawn(step)):
        for shape, result in zip(shapes, results):
            inputs = [device_input(i, shape) for i in range(world)]
            np.testing.assert_array_equal(result, spmd.reduce_scatter(inputs, ordo.REDUCE_MAX, 1.0, 0, index))


# ---- all_to_all. ----

def test_all_to_all_of_the_ordinal(world):
    def step(index):
        x = ordo.tensor([index] * 4 * world, dtype=ordo.int32)
        return ordo.all_to_all(x, split_dimension=0, concat_dimension=0, split_count=world).numpy()

    for result in ordo.spawn(step):
        assert result.dtype == np.int32
        for i, chunk in enumerate(np.split(result, world)):
            np.testing.assert_array_equal(chunk, [i] * 4)


ALL_TO_ALL_CASES = [((4, 3), 0, 1), ((3, 4), 1, 0), ((2, 4, 3), 1, 2), ((2, 4, 3), 1, 1)]


@pytest.mark.parametrize("shape, split, concat", ALL_TO_ALL_CASES, ids=[str(c) for c in ALL_TO_ALL_CASES])
def test_all_to_all_across_dimensions(world, shape, split, concat):
    shape = list(shape)
    shape[split] *= world  # splits into world chunks
    inputs = [device_input(i, shape) for i in range(world)]

    def step(index):
        return ordo.all_to_all(ordo.tensor(inputs[index]), split, concat, world).numpy()

    for index, result in enumerate(ordo.spawn(step)):
        np.testing.assert_array_equal(result, spmd.all_to_all(inputs, split, concat, index))


# ---- collective_permute and collective_broadcast. ----

def test_collective_permute_along_a_ring_gives_the_left_neighbours_value(world):
    ring = [[i, (i + 1) % world] for i in range(world)]

    def step(index):
        return ordo.collective_permute(ordo.tensor(device_input(index, (3,))), ring).numpy()

    for index, result in enumerate(ordo.spawn(step)):
        np.testing.assert_array_equal(result, device_input((index - 1) % world, (3,)))


def test_collective_permute_leaves_zeros_where_nothing_arrives(world):
    pairs = [[0, world - 1]]

    def step(index):
        return ordo.collective_permute(ordo.tensor(device_input(index, (2,))), pairs).numpy()

    for index, result in enumerate(ordo.spawn(step)):
        expected = device_input(0, (2,)) if index == world - 1 else np.zeros(2, np.float32)
        np.testing.assert_array_equal(result, expected)


@pytest.mark.parametrize("root", ["first", "last"])
def test_collective_broadcast_gives_every_device_the_roots_value(world, root):
    root = 0 if root == "first" else world - 1

    def step(index):
        tensors = [ordo.tensor(device_input(index, (2, 2))), ordo.full((3,), index, dtype=ordo.int64)]
        returned = ordo.collective_broadcast(tensors, root_ordinal=root)
        assert returned[0] is tensors[0] and returned[1] is tensors[1]  # in place
        return [t.numpy() for t in tensors]

    for first, second in ordo.spawn(step):
        np.testing.assert_array_equal(first, device_input(root, (2, 2)))
        np.testing.assert_array_equal(second, np.full(3, root, np.int64))


def test_collective_broadcast_gives_zeros_to_a_group_without_the_root(world):
    groups = spmd.even_odd_groups(world)

    def step(index):
        return ordo.collective_broadcast([ordo.tensor(device_input(index, (3,)))], groups=groups)[0].numpy()

    for index, result in enumerate(ordo.spawn(step)):
        expected = device_input(0, (3,)) if index % 2 == 0 else np.zeros(3, np.float32)
        np.testing.assert_array_equal(result, expected)


# ---- Every collective within replica groups, with and without elements. ----

# (id, input shape for a group of n, the collective on a device, numpy
# reference over the group's inputs). Dimensions count from the end so that
# a leading dimension of size 0 can be put in front.
GROUPED_CASES = [
    ("all_reduce", lambda n: (3,), lambda x, n, groups: ordo.all_reduce(ordo.REDUCE_MIN, x, groups=groups),
     lambda inputs, rank: spmd.all_reduce(inputs, ordo.REDUCE_MIN)),
    ("all_gather", lambda n: (2, 1), lambda x, n, groups: ordo.all_gather(x, dim=-1, groups=groups),
     lambda inputs, rank: spmd.all_gather(inputs, -1)),
    ("reduce_scatter", lambda n: (2 * n, 2),
     lambda x, n, groups: ordo.reduce_scatter(ordo.REDUCE_SUM, x, 0.5, -2, n, groups=groups),
     lambda inputs, rank: spmd.reduce_scatter(inputs, ordo.REDUCE_SUM, 0.5, -2, rank)),
    ("all_to_all", lambda n: (2, 2 * n), lambda x, n, groups: ordo.all_to_all(x, -1, -2, n, groups=groups),
     lambda inputs, rank: spmd.all_to_all(inputs, -1, -2, rank)),
]


@pytest.mark.parametrize("leading", [(), (0,)], ids=["elements", "no elements"])
@pytest.mark.parametrize("grouping", ["world", "even/odd"])
@pytest.mark.parametrize("shape, collective, reference", params(GROUPED_CASES))
def test_collectives_within_groups(world, shape, collective, reference, grouping, leading):
    groups = spmd.even_odd_groups(world) if grouping == "even/odd" else None
    members = groups or [list(range(world))]
    size = len(members[0])
    inputs = [device_input(i, leading + shape(size)) for i in range(world)]

    def step(index):
        return collective(ordo.tensor(inputs[index]), size, groups).numpy()

    for index, result in enumerate(ordo.spawn(step)):
        group = spmd.group_of(index, members)
        expected = reference([inputs[i] for i in group], group.index(index))
        assert result.shape == expected.shape
        np.testing.assert_array_equal(result, expected)


# ---- reduce_gradients, device queries, spawn. ----

def test_reduce_gradients_is_an_in_place_mean(world):
    def step(index):
        grads = [ordo.full((2, 2), float(index)), ordo.tensor(device_input(index, (3,)))]
        returned = ordo.reduce_gradients(grads)
        assert returned[0] is grads[0] and returned[1] is grads[1]
        return [g.numpy() for g in grads]

    mean = np.mean([device_input(i, (3,)) for i in range(world)], axis=0)
    for first, second in ordo.spawn(step):
        np.testing.assert_allclose(first, np.full((2, 2), (world - 1) / 2), rtol=1e-6)
        np.testing.assert_allclose(second, mean, rtol=1e-6)


def test_device_queries_inside_spawn(world):
    def step(index):
        return dict(ordinal=ordo.get_ordinal(), local=ordo.get_local_ordinal(), world=ordo.world_size(),
                    xrt_world=ordo.xrt_world_size(), master=ordo.is_master_ordinal(),
                    master_global=ordo.is_master_ordinal(local=False), device=ordo.xla_device(),
                    same=ordo.device(), tensor_device=ordo.ones(1).device, devices=ordo.devices())

    for index, seen in enumerate(ordo.spawn(step)):
        assert seen == dict(ordinal=index, local=index, world=world, xrt_world=world, master=index == 0,
                            master_global=index == 0, device=ordo.Device(index), same=ordo.Device(index),
                            tensor_device=ordo.Device(index), devices=[ordo.Device(i) for i in range(world)])
        assert repr(seen["device"]) == f"ordo:{index}"


def test_spawn_passes_args_and_returns_results_by_ordinal(world):
    assert ordo.spawn(lambda index, a, b: (index, a + b), args=(2, 3)) == [(i, 5) for i in range(world)]
    assert ordo.spawn(lambda index: index * 10, nprocs=1) == [0]


def test_bind_thread_to_device_checks_the_device():
    with pytest.raises(ValueError, match="device 99"):
        ordo.bind_thread_to_device(99)
