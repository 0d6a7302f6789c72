"""What the multi-device tests share: a restart, running a function on
every device and collecting each device's outcome, replica groups, and
numpy references of the collectives (inputs listed in rank order)."""

import functools

import numpy as np

import ordo

# Reduce type -> the numpy function that folds two inputs.
NUMPY_REDUCE = {
    ordo.REDUCE_SUM: np.add,
    ordo.REDUCE_MUL: np.multiply,
    ordo.REDUCE_MIN: np.minimum,
    ordo.REDUCE_MAX: np.maximum,
    ordo.REDUCE_AND: np.bitwise_and,
    ordo.REDUCE_OR: np.bitwise_or,
}


def restart(num_devices):
    """A clean runtime of num_devices devices: shutdown also forgets failed
    devices, sequence numbers and the host-exchange state."""
    ordo.shutdown()
    ordo.init(num_devices)


def spawn_outcomes(fn, *args):
    """Runs fn on every device like ordo.spawn and returns each device's
    result or exception, so a test can look at what every device saw.

    ordo's own errors (ExecutionError and the CollectiveError family) are
    caught on the device. Any other exception is user code failing: it still
    reaches spawn, which marks its device failed (unblocking its peers), and
    is returned in that device's slot instead of raised."""
    outcomes = [None] * ordo.world_size()

    def guarded(index, *args):
        try:
            outcomes[index] = fn(index, *args)
        except ordo.ExecutionError as error:
            outcomes[index] = error
        except Exception as error:
            outcomes[index] = error
            raise

    try:
        ordo.spawn(guarded, args)
    except Exception:  # noqa: BLE001 - already in outcomes
        pass
    return outcomes


def with_failing_device(action, failing=3):
    """A step where device `failing`'s function raises RuntimeError("user
    code failed") and every other device runs action(index)."""

    def step(index):
        if index == failing:
            raise RuntimeError("user code failed")
        return action(index)

    return step


def errors_of(outcomes):
    """{ordinal: exception} of the devices that raised."""
    return {i: o for i, o in enumerate(outcomes) if isinstance(o, BaseException)}


def even_odd_groups(world):
    """[[0, 2, ...], [1, 3, ...]]: the replica groups of torch_xla's tests
    (one group on a single device)."""
    return [group for group in (list(range(0, world, 2)), list(range(1, world, 2))) if group]


def group_of(index, groups):
    return next(group for group in groups if index in group)


def all_reduce(inputs, reduce_type, scale=1.0):
    """In rank order, as ordo reduces, then scaled."""
    reduced = functools.reduce(NUMPY_REDUCE[reduce_type], inputs)
    if scale == 1.0:
        return reduced
    return (reduced * scale).astype(reduced.dtype)


def all_gather(inputs, dim):
    return np.concatenate(inputs, axis=dim)


def reduce_scatter(inputs, reduce_type, scale, dim, rank):
    return np.split(all_reduce(inputs, reduce_type, scale), len(inputs), axis=dim)[rank]


def all_to_all(inputs, split_dim, concat_dim, rank):
    return np.concatenate([np.split(x, len(inputs), axis=split_dim)[rank] for x in inputs], axis=concat_dim)
