"""Host-side exchange between devices: rendezvous and mesh_reduce.

Devices are threads of this process, so an exchange is a meeting place in
memory: each participant leaves its payload under (tag, round) and waits
until every participant has. A participant that waits past the collective
timeout, or whose peer's spawn function raised or returned, or whose
meeting another participant left on Ctrl-C, gets a CollectiveError instead
of waiting forever."""

import os
import pickle
import threading
import time


from . import _C

_lock = threading.Condition()
_meetings = {}  # (tag, participants, round) -> _Meeting; guarded by _lock
_rounds = {}  # (tag, participants, ordinal) -> next round; guarded by _lock
_failed = {}  # ordinal -> reason; guarded by _lock
_absent = {}  # ordinal -> reason, while nothing drives it; guarded by _lock


class _Meeting:
    __slots__ = ("payloads", "taken", "failure")

    def __init__(self):
        self.payloads = {}
        self.taken = 0
        self.failure = None  # why it can never complete: a participant was interrupted


def fail_device(ordinal, reason):
    """Wakes every exchange waiting for ordinal: they raise CollectiveError.
    The first reason given for a device is the one reported."""
    with _lock:
        _failed.setdefault(ordinal, reason)
        _lock.notify_all()


def mark_absent(ordinal, reason):
    """Like fail_device until clear_absent(ordinal): nothing drives the
    device for now (its spawn function returned)."""
    with _lock:
        _absent[ordinal] = reason
        _lock.notify_all()


def interrupt(ordinals, reason):
    """Fails every meeting that one of ordinals waits in: all its
    participants raise CollectiveError naming reason (an interrupted spawn
    does this for its devices)."""
    with _lock:
        for (tag, participants, _), meeting in _meetings.items():
            waiting = [d for d in ordinals if d in meeting.payloads]
            if waiting and meeting.failure is None and len(meeting.payloads) < len(participants):
                meeting.failure = f"rendezvous '{tag}' cannot complete: device {waiting[0]} was interrupted: {reason}"
        _lock.notify_all()


def clear_absent(ordinal):
    with _lock:
        _absent.pop(ordinal, None)


def reset():
    """Forgets failures and pending meetings (after a runtime restart)."""
    with _lock:
        _meetings.clear()
        _rounds.clear()
        _failed.clear()
        _absent.clear()


def _after_fork_in_child():
    """A forked child has only the thread that forked, and a lock another
    thread held stays held: its exchange starts afresh, as its runtime
    does."""
    global _lock
    _lock = threading.Condition()
    reset()


os.register_at_fork(after_in_child=_after_fork_in_child)


def rendezvous(tag, payload=b"", replicas=()):
    """Every participant (replicas, or every device when empty) calls this
    with the same tag; returns each participant's payload (bytes) in ordinal
    order."""
    me = _C.current_device()
    participants = tuple(sorted(replicas)) if replicas else tuple(range(_C.num_devices()))
    if me not in participants:
        raise ValueError(f"rendezvous: device {me} is not among the replicas {list(participants)}")
    payload = bytes(payload)
    warn_seconds, timeout_seconds = _C.collective_timeouts()
    with _lock:
        round_key = (tag, participants, me)
        round_ = _rounds.get(round_key, 0)
        _rounds[round_key] = round_ + 1
        key = (tag, participants, round_)
        meeting = _meetings.setdefault(key, _Meeting())
        meeting.payloads[me] = payload
        _lock.notify_all()
        try:
            _wait_for_participants(tag, me, participants, meeting, warn_seconds, timeout_seconds)
        except _C.CollectiveError:
            raise
        except BaseException as interrupt:  # Ctrl-C in the main thread: the others must not wait
            meeting.failure = (f"rendezvous '{tag}' cannot complete: device {me} was interrupted by "
                               f"{type(interrupt).__name__} while it waited")
            _lock.notify_all()
            raise
        result = [meeting.payloads[d] for d in participants]
        meeting.taken += 1
        if meeting.taken == len(participants):
            del _meetings[key]
        return result


def _wait_for_participants(tag, me, participants, meeting, warn_seconds, timeout_seconds):
    """Until every participant left its payload (with _lock held)."""
    start = time.monotonic()
    warned = False
    while len(meeting.payloads) < len(participants):
        if meeting.failure:
            raise _C.CollectiveError(meeting.failure)
        gone = [d for d in participants if (d in _failed or d in _absent) and d not in meeting.payloads]
        if gone:
            reason = _failed.get(gone[0]) or _absent[gone[0]]
            raise _C.CollectiveError(f"rendezvous '{tag}': device {gone[0]} is gone ({reason})")
        waited = time.monotonic() - start
        if waited >= timeout_seconds:
            missing = [d for d in participants if d not in meeting.payloads]
            raise _C.CollectiveTimeoutError(
                f"device {me} waited {timeout_seconds:g} s in rendezvous '{tag}'; "
                f"devices that never arrived: {missing}")
        if not warned and waited >= warn_seconds:
            missing = [d for d in participants if d not in meeting.payloads]
            print(f"ordo: device {me} has waited {warn_seconds:g} s in rendezvous '{tag}'; "
                  f"missing devices: {missing}", flush=True)
            warned = True
        _lock.wait(timeout=min(0.1, max(0.0, timeout_seconds - waited)))


def _to_host(value):
    if isinstance(value, _C.Tensor):
        return value.numpy()
    if isinstance(value, (list, tuple)):
        return type(value)(_to_host(v) for v in value)
    return value


def mesh_reduce(tag, data, reduce_fn):
    """Applies reduce_fn to the list of every device's data (tensors are
    read to numpy first; anything picklable works) and returns the result."""
    payloads = rendezvous(tag, pickle.dumps(_to_host(data)))
    return reduce_fn([pickle.loads(p) for p in payloads])



