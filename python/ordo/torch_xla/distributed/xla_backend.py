"""torch.distributed's 'xla' backend over ordo (torch_xla 1.13's
torch_xla.distributed.xla_backend): importing it registers the backend, so
that `dist.init_process_group('xla', ...)`, torch.distributed's
collectives on xla tensors and DistributedDataParallel run on ordo's
collectives, in each device's cc-token chain.

torch.distributed keeps one world per process, and ordo's replicas may be
threads of one process (xmp.spawn). So the 'xla' world is shared by the
process's replicas: the first to call init_process_group makes it, the
others join it, and each sees its own rank (its global ordinal). Every
replica calls new_group in the same order, as torch.distributed asks; the
k-th call of each returns the same group. No store rendezvous is needed:
ordo's devices are connected already; init_process_group ends when every
replica has called it. The world ends when its last replica destroys it,
or with the xmp.spawn that made it (as with torch_xla's replica
processes)."""

import threading

import torch
import torch.distributed as dist
from torch._C._distributed_c10d import ProcessGroup
from torch.distributed import distributed_c10d as c10d

from ..core import xla_model as xm
from . import xla_multiprocessing as xmp

_REDUCE_TYPES = {
    dist.ReduceOp.SUM: xm.REDUCE_SUM,
    dist.ReduceOp.PRODUCT: xm.REDUCE_MUL,
    dist.ReduceOp.MIN: xm.REDUCE_MIN,
    dist.ReduceOp.MAX: xm.REDUCE_MAX,
    dist.ReduceOp.BAND: xm.REDUCE_AND,
    dist.ReduceOp.BOR: xm.REDUCE_OR,
}


def _done(result):
    """A finished Work whose future holds result (the tensors)."""
    future = torch.futures.Future()
    future.set_result(list(result))
    return torch._C._distributed_c10d._create_work_from_future(future)


class ProcessGroupXla(ProcessGroup):
    """A group of replicas: the world, or one made by new_group. Its
    collectives run over `_mesh` (torch_xla's replica groups: every row of
    the mesh this group is a row of, or [] for the world), on the calling
    replica's device."""

    def __init__(self, prefix_store, rank, size, timeout):
        super().__init__(rank, size)
        self.prefix_store = prefix_store
        self.timeout = timeout
        self._mesh = []
        self._ranks = list(range(size))
        self._shared = False  # by the process's replicas (the world, new_group's groups)

    def getBackendName(self):
        return "xla"

    def rank(self):
        """The calling replica's rank in this group, when the process's
        replicas share it."""
        return self._ranks.index(xm.get_ordinal()) if self._shared else super().rank()

    def _groups(self):
        return self._mesh or None

    def _reduce_type(self, op, what):
        if op not in _REDUCE_TYPES:
            raise NotImplementedError(f"the xla backend's {what} has no reduce op {op}")
        return _REDUCE_TYPES[op]

    def allreduce(self, tensors, opts):
        xm.all_reduce(self._reduce_type(opts.reduceOp, "all_reduce"), tensors, groups=self._groups())
        return _done(tensors)

    def allreduce_coalesced(self, tensors, opts):
        return self.allreduce(tensors, opts)  # one coalesced all_reduce in ordo already

    def allgather(self, output_tensors_list, input_tensors, opts=None):
        for outputs, value in zip(output_tensors_list, input_tensors):
            if len(outputs) != self.size():
                raise ValueError(f"all_gather: {len(outputs)} output tensors for a group of {self.size()}")
            gathered = xm.all_gather(value.unsqueeze(0), dim=0, groups=self._groups())
            for output, part in zip(outputs, gathered.unbind(0)):
                output.copy_(part)
        return _done([t for outputs in output_tensors_list for t in outputs])

    def _allgather_base(self, output, value, opts=None):
        xm.all_gather(value, dim=0, groups=self._groups(), output=output)
        return _done([output])

    def broadcast(self, tensors, opts):
        root = tensors[opts.rootTensor]
        if len(self._mesh) > 1:
            # Every row of the mesh has its own root: gather the row, keep the root's.
            gathered = xm.all_gather(root.unsqueeze(0), dim=0, groups=self._groups())
            root.copy_(gathered[opts.rootRank])
        else:
            xm.collective_broadcast([root], self._ranks[opts.rootRank], groups=self._groups())
        return _done([root])

    def reduce_scatter(self, output_tensors, input_tensors_list, opts):
        reduce_type = self._reduce_type(opts.reduceOp, "reduce_scatter")
        for inputs, output in zip(input_tensors_list, output_tensors):
            if len(inputs) != self.size():
                raise ValueError(f"reduce_scatter: {len(inputs)} input tensors for a group of {self.size()}")
            shapes = {tuple(t.shape) for t in inputs}
            if len(shapes) != 1:
                raise ValueError(f"reduce_scatter: the input tensors differ in shape: {sorted(shapes)}")
            mine = xm.reduce_scatter(reduce_type, torch.stack(inputs), scale=1.0, scatter_dim=0,
                                     shard_count=self.size(), groups=self._groups())
            output.copy_(mine.squeeze(0))
        return _done(output_tensors)

    def _reduce_scatter_base(self, output, value, opts):
        xm.reduce_scatter(self._reduce_type(opts.reduceOp, "reduce_scatter"), value, scale=1.0, scatter_dim=0,
                          shard_count=self.size(), groups=self._groups(), output=output)
        return _done([output])

    def alltoall_base(self, output, value, output_split_sizes, input_split_sizes, opts):
        if output_split_sizes or input_split_sizes:
            raise NotImplementedError("the xla backend's all_to_all_single takes equal splits only")
        output.copy_(xm.all_to_all(value, split_dimension=0, concat_dimension=0, split_count=self.size(),
                                   groups=self._groups()))
        return _done([output])

    def barrier(self, opts=None):
        """Returns when every replica of the group has reached it."""
        xm.rendezvous(f"torch.distributed barrier {self._ranks}", b"", self._ranks)
        return _done([])


def _refusal(what, instead):
    def refuse(self, *args):
        raise NotImplementedError(f"the xla backend has no {what} (torch_xla's has none either): {instead}")
    return refuse


_PEERS = "collective_permute moves tensors between replicas"
for _method, _what, _instead in [
        ("reduce", "reduce", "all_reduce gives every rank the result"),
        ("allgather_coalesced", "all_gather_coalesced", "all_gather each tensor"),
        ("alltoall", "all_to_all of tensor lists", "use all_to_all_single"),
        ("gather", "gather", "all_gather gives every rank every tensor"),
        ("scatter", "scatter", "broadcast, then take this rank's part"),
        ("send", "send", _PEERS), ("recv", "recv", _PEERS), ("recv_anysource", "recv", _PEERS),
        ("monitored_barrier", "monitored_barrier", "barrier")]:
    setattr(ProcessGroupXla, _method, _refusal(_what, _instead))


def _create_xla_process_group(prefix_store, rank, size, timeout):
    return ProcessGroupXla(prefix_store, rank, size, timeout)


# ---- One world per process, shared by its replicas ----

_lock = threading.Lock()
_joined = set()          # ordinals that called init_process_group in this world
_groups_made = []        # new_group's groups, in call order
_calls = {}              # ordinal -> how many new_group calls it made
_orig_init_process_group = dist.init_process_group
_orig_new_group = dist.new_group
_orig_destroy_process_group = dist.destroy_process_group


def _is_xla(backend):
    return backend is not None and str(backend).lower() == "xla"


def _check_world(world_size, rank):
    ordinal, count = xm.get_ordinal(), xm.xrt_world_size()
    if world_size not in (-1, count):
        raise ValueError(f"init_process_group('xla'): world_size {world_size}, but ordo's world has {count} "
                         f"devices")
    if rank not in (-1, ordinal):
        raise ValueError(f"init_process_group('xla'): rank {rank}, but this replica is ordinal {ordinal} "
                         f"(xm.get_ordinal())")
    return ordinal, count


def _make_world(count, timeout, group_name):
    pg = c10d._new_process_group_helper(count, 0, [], "xla", dist.HashStore(), group_name=group_name or None,
                                        timeout=timeout)
    pg._shared = True
    c10d._update_default_pg(pg)
    c10d._pg_group_ranks[pg] = {i: i for i in range(count)}
    c10d._backend = "xla"
    c10d._default_pg_init_method = None


def init_process_group(backend=None, init_method=None, timeout=c10d.default_pg_timeout, world_size=-1, rank=-1,
                       store=None, group_name="", pg_options=None):
    if not _is_xla(backend):
        return _orig_init_process_group(backend, init_method, timeout, world_size, rank, store, group_name,
                                        pg_options)
    ordinal, count = _check_world(world_size, rank)
    with _lock:
        world = c10d.GroupMember.WORLD
        if world is not None and not isinstance(world, ProcessGroupXla):
            raise RuntimeError("trying to initialize the default process group twice!")
        if world is None or ordinal in _joined:  # a new world, or a new spawn in this one
            if world is None:
                _make_world(count, timeout, group_name)
            _joined.clear()
            _groups_made.clear()
            _calls.clear()
        _joined.add(ordinal)
        _calls[ordinal] = 0
    xm.rendezvous("torch.distributed init_process_group")


def _mesh_of(ranks, count):
    """torch_xla's replica groups for a group of ranks: the rows (or the
    columns) of the rectangle of ranks this group is one of."""
    if len(ranks) == count:
        return [list(ranks)]
    if len(ranks) == 1:
        return [[r] for r in range(count)]
    step = ranks[1] - ranks[0]
    rows = count // len(ranks)
    if (count % len(ranks) or step < 1 or ranks != list(range(ranks[0], ranks[0] + step * len(ranks), step))
            or (step == 1 and ranks[0] % len(ranks)) or (step > 1 and (step != rows or ranks[0] >= rows))):
        raise ValueError(f"new_group('xla'): ranks {ranks} are not a row or a column of a rectangle of the "
                         f"world's {count} ranks")
    if step == 1:
        return [list(range(i * len(ranks), (i + 1) * len(ranks))) for i in range(rows)]
    return [list(range(i, count, rows)) for i in range(rows)]


def new_group(ranks=None, timeout=c10d.default_pg_timeout, backend=None, pg_options=None):
    world = c10d.GroupMember.WORLD
    if not isinstance(world, ProcessGroupXla) or (backend is not None and not _is_xla(backend)):
        return _orig_new_group(ranks, timeout, backend, pg_options)
    count, ordinal = world.size(), xm.get_ordinal()
    ranks = sorted(range(count) if ranks is None else ranks)
    if any(not 0 <= r < count for r in ranks) or len(set(ranks)) != len(ranks):
        raise ValueError(f"new_group: ranks {ranks} must be distinct ranks of the world of {count}")
    with _lock:
        call = _calls.get(ordinal, 0)
        _calls[ordinal] = call + 1
        if call == len(_groups_made):
            pg = ProcessGroupXla(None, 0, len(ranks), timeout)
            pg._ranks, pg._mesh, pg._shared = ranks, _mesh_of(ranks, count), True
            c10d._pg_map[pg] = ("xla", None)
            c10d._pg_names[pg] = f"xla group {call}"
            c10d._pg_group_ranks[pg] = {r: i for i, r in enumerate(ranks)}
            _groups_made.append(pg)
        pg = _groups_made[call]
    if pg._ranks != ranks:
        raise ValueError(f"new_group: call {call} of replica {ordinal} asks for ranks {ranks}, another replica's "
                         f"call {call} for {pg._ranks}: every replica makes the same groups in the same order")
    return pg if ordinal in ranks else c10d.GroupMember.NON_GROUP_MEMBER


def destroy_process_group(group=None):
    world = c10d.GroupMember.WORLD
    if not isinstance(world, ProcessGroupXla):
        return _orig_destroy_process_group(group)
    if group is not None and group is not world:
        return None  # a group of the shared world ends with it
    with _lock:
        _joined.discard(xm.get_ordinal())
        if not _joined:  # the last replica of the process ends the world
            _end_world_locked()
    return None


def _end_world_locked():
    _joined.clear()
    _groups_made.clear()
    _calls.clear()
    _orig_destroy_process_group()


def _world_of_a_spawn():
    """Called as xmp.spawn starts: returns what ends, as the spawn ends, a
    world its replicas made and did not destroy (torch_xla's replicas are
    processes, whose world ends when they exit)."""
    before = c10d.GroupMember.WORLD

    def end():
        world = c10d.GroupMember.WORLD
        if isinstance(world, ProcessGroupXla) and world is not before:
            with _lock:
                _end_world_locked()
    return end


xmp._replica_scopes.append(_world_of_a_spawn)
dist.Backend.register_backend("xla", _create_xla_process_group)
dist.init_process_group = c10d.init_process_group = init_process_group
dist.new_group = c10d.new_group = new_group
dist.destroy_process_group = c10d.destroy_process_group = destroy_process_group
