"""torch_xla.utils.utils: what torch_xla programs import from it."""

import os
import shutil
import tempfile


class SampleGenerator:
    """Yields `data` sample_count times: fake data at no loading cost."""

    def __init__(self, data, sample_count):
        self._data = data
        self._sample_count = sample_count
        self._count = 0

    def __iter__(self):
        return SampleGenerator(self._data, self._sample_count)

    def __len__(self):
        return self._sample_count

    def __next__(self):
        return self.next()

    def next(self):
        if self._count >= self._sample_count:
            raise StopIteration
        self._count += 1
        return self._data


class DataWrapper:
    """Marks an object whose tensors the data movers leave alone."""

    def __init__(self):
        pass

    def get_tensors(self):
        raise NotImplementedError("DataWrapper subclasses list their tensors")

    def from_tensors(self, tensors):
        raise NotImplementedError("DataWrapper subclasses rebuild themselves from tensors")


class TmpFolder:
    def __init__(self):
        self.name = tempfile.mkdtemp()

    def __enter__(self):
        return self.name

    def __exit__(self, *exc):
        shutil.rmtree(self.name, ignore_errors=True)


def get_free_tcp_ports(n=1):
    import socket
    ports, sockets = [], []
    for _ in range(n):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.bind(("127.0.0.1", 0))
        sockets.append(s)
        ports.append(s.getsockname()[1])
    for s in sockets:
        s.close()
    return ports


def getenv_as(name, type_fn, defval=None):
    """The variable as type_fn gives it (a bool from its integer: "0" is False)."""
    value = os.environ.get(name)
    if value is None:
        return defval
    return bool(int(value)) if type_fn is bool else type_fn(value)
