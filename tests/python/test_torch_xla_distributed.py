"""torch.distributed's 'xla' backend on ordo
(ordo.torch_xla.distributed.xla_backend): its groups as torch_xla makes
them, and its errors. The program tests/torch_xla_programs/
mp_torch_distributed.py (collectives, new_group, DDP) runs from
test_torch_xla_programs.py, and under mpirun from ctest."""

import sys
from datetime import timedelta

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("ordo.torch_xla")

import torch.distributed as dist  # noqa: E402

import ordo  # noqa: E402
import ordo.torch_xla.core.xla_model as xm  # noqa: E402
import ordo.torch_xla.distributed.xla_backend as xb  # noqa: E402


@pytest.fixture(autouse=True)
def no_world_left():
    """A test's world must not reach the next test."""
    yield
    if dist.is_initialized():
        ordo.spawn(lambda i: dist.destroy_process_group(), nprocs=ordo._C.num_devices())
    assert not dist.is_initialized()


def test_the_backend_is_registered_and_makes_groups_of_the_rank_and_size_asked():
    creator = dist.Backend._plugins[dist.Backend.XLA].creator_fn
    pg = creator(prefix_store=None, rank=1, size=2, timeout=timedelta(minutes=1))
    assert isinstance(pg, xb.ProcessGroupXla) and pg.rank() == 1 and pg.size() == 2
    assert pg.getBackendName() == "xla"


@pytest.mark.parametrize("ranks, mesh", [
    ([1, 5, 9], [[0, 4, 8], [1, 5, 9], [2, 6, 10], [3, 7, 11]]),  # a column of 12 ranks in rows of 4
    ([4, 5, 6, 7], [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10, 11]]),  # a row
    ([3], [[r] for r in range(12)]),
    (list(range(12)), [list(range(12))]),
])
def test_a_groups_replica_groups_are_the_rectangle_it_is_a_row_or_column_of(ranks, mesh):
    assert xb._mesh_of(ranks, 12) == mesh


@pytest.mark.parametrize("ranks", [[1, 2, 3], [0, 2, 5], [0, 5], [2, 3, 4, 5], [4, 5, 6]])
def test_ranks_that_are_no_row_or_column_are_refused(ranks):
    with pytest.raises(ValueError, match="not a row or a column"):
        xb._mesh_of(ranks, 12)


def spawn_error(fn):
    with pytest.raises(Exception) as raised:
        ordo.spawn(fn, nprocs=ordo._C.num_devices())
    return raised.value


def test_a_world_or_rank_other_than_ordos_is_a_clear_error():
    error = spawn_error(lambda i: dist.init_process_group("xla", world_size=3))
    assert isinstance(error, ValueError) and "world_size 3, but ordo's world has 4 devices" in str(error)
    error = spawn_error(lambda i: dist.init_process_group("xla", rank=(i + 1) % 4))
    assert isinstance(error, ValueError) and "this replica is ordinal" in str(error)


def in_world(body):
    def replica(index):
        dist.init_process_group("xla")
        body(index, xm.xla_device())
    return replica


@pytest.mark.parametrize("call, message", [
    (lambda d: dist.reduce(torch.ones(2, device=d), 0), "no reduce"),
    (lambda d: dist.gather(torch.ones(2, device=d),  # torch wants the list on the destination
                           [torch.ones(2, device=d)] * dist.get_world_size() if dist.get_rank() == 0 else None),
     "no gather"),
    (lambda d: dist.send(torch.ones(2, device=d), 0), "no send"),
    (lambda d: dist.all_reduce(torch.ones(2, device=d), op=dist.ReduceOp.BXOR), "no reduce op"),
])
def test_what_the_backend_does_not_do_is_a_clear_error_on_every_replica(call, message):
    def body(index, device):
        with pytest.raises(NotImplementedError, match=message):
            call(device)
    ordo.spawn(in_world(body), nprocs=ordo._C.num_devices())


def test_a_cpu_tensor_is_refused_before_anything_is_recorded():
    def body(index, device):
        with pytest.raises(ValueError, match="expected a tensor on the xla device"):
            dist.all_reduce(torch.ones(2))
        value = torch.ones(2, device=device)
        dist.all_reduce(value)  # the chains are still in step
        assert value.cpu().tolist() == [4.0, 4.0]
    ordo.spawn(in_world(body), nprocs=4)


def test_replicas_that_make_different_groups_are_told_so():
    error = spawn_error(in_world(lambda i, d: dist.new_group([0, 1] if i == 0 else [2, 3])))
    assert isinstance(error, ValueError) and "every replica makes the same groups" in str(error)


def test_a_second_spawn_makes_its_world_again():
    def body(index, device):
        half = dist.new_group([0, 1])
        assert (half is dist.GroupMember.NON_GROUP_MEMBER) == (index >= 2)
        value = torch.ones(1, device=device)
        dist.all_reduce(value)
        assert value.item() == 4.0
    for _ in range(2):  # the first spawn leaves its world up; the second joins it anew
        ordo.spawn(in_world(body), nprocs=4)


def test_the_world_ends_with_the_xmp_spawn_that_made_it_even_when_a_replica_fails():
    import ordo.torch_xla.distributed.xla_multiprocessing as xmp

    def made_and_left(index):  # as torch_xla's programs do: no destroy_process_group
        dist.init_process_group("xla")
        dist.all_reduce(torch.ones(1, device=xm.xla_device()))
    xmp.spawn(made_and_left, nprocs=4)
    assert not dist.is_initialized()

    def one_fails(index):
        made_and_left(index)
        if index == 2:
            raise KeyError("replica 2")
    with pytest.raises(KeyError, match="replica 2"):
        xmp.spawn(one_fails, nprocs=4)
    assert not dist.is_initialized()

    def one_exits(index):  # a program's own way out
        made_and_left(index)
        if index == 1:
            sys.exit(3)
    with pytest.raises(SystemExit):
        xmp.spawn(one_exits, nprocs=4)
    assert not dist.is_initialized()
    xmp.spawn(made_and_left, nprocs=4)  # and the next spawn makes its own
    assert not dist.is_initialized()
