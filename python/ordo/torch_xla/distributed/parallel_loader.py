"""torch_xla.distributed.parallel_loader over ordo: a thread reads the host
loader's batches and others upload them to their devices ahead of the step
that uses them (device_prefetch_size batches per device), so the upload of
the next batch runs while the device computes this one. Each device's
loader cuts the device's graph (mark_step) before it hands out the next
batch, as torch_xla's does: a training loop over it needs no mark_step."""

import queue
import threading

import torch

from ..core import xla_model as xm
from .._tensors import to_device

_END = object()
# How often a blocked reader or uploader looks whether the loader was closed.
_POLL_SECONDS = 0.1


class PerDeviceLoader:
    def __init__(self, loader, device):
        self._loader = loader
        self._device = device
        self._mark_step_batch_count = loader.batches_per_execution - 1
        self._batches_yielded = 0

    def __iter__(self):
        return self

    def __next__(self):
        return self.next()

    def __len__(self):
        return self._loader.per_device_samples()

    def next(self):
        if self._mark_step_batch_count <= self._batches_yielded:
            self._batches_yielded = 0
            xm.mark_step()
        else:
            self._batches_yielded += 1
        item = self._loader.next_item(self._device)
        if item is None:
            xm.mark_step()
            raise StopIteration
        return item


class ParallelLoader:
    """Spreads the batches of `loader` over `devices` (round robin) and
    uploads them ahead; per_device_loader(device) iterates one device's."""

    def __init__(self, loader, devices, batchdim=0, batches_per_execution=1, loader_prefetch_size=8,
                 device_prefetch_size=4, host_to_device_transfer_threads=1, input_sharding=None):
        del host_to_device_transfer_threads, input_sharding
        self._loader = loader
        self._devices = [torch.device(d) for d in devices]
        self._batchdim = batchdim
        self._batches_per_execution = batches_per_execution
        self._done = False
        self._host_queues = {d: queue.Queue(maxsize=loader_prefetch_size) for d in self._devices}
        self._device_queues = {d: queue.Queue(maxsize=device_prefetch_size) for d in self._devices}
        self._threads = [threading.Thread(target=self._read, daemon=True)]
        self._threads += [threading.Thread(target=self._upload, args=(d,), daemon=True) for d in self._devices]
        for thread in self._threads:
            thread.start()

    @property
    def batches_per_execution(self):
        return self._batches_per_execution

    def per_device_loader(self, device):
        return PerDeviceLoader(self, torch.device(device))

    def per_device_samples(self):
        return len(self._loader) // len(self._devices)

    def next_item(self, device):
        item = self._device_queues[device].get()
        if item is _END:
            self._device_queues[device].put(_END)  # a second next() ends too
            return None
        if isinstance(item, BaseException):
            raise item
        return item

    def close(self):
        """Stops reading and uploading: the threads end (within a poll) and
        drop what they held."""
        self._done = True
        for q in list(self._host_queues.values()) + list(self._device_queues.values()):
            while not q.empty():
                q.get_nowait()

    def _put(self, q, item):
        """q.put(item) unless the loader is closed meanwhile; False then."""
        while not self._done:
            try:
                q.put(item, timeout=_POLL_SECONDS)
                return True
            except queue.Full:
                continue
        return False

    def _read(self):
        """Deals the host batches to the devices; a batch short of a full
        round is dropped, so that every device takes the same steps."""
        try:
            round_ = []
            for batch in self._loader:
                if self._done:
                    break
                round_.append(batch)
                if len(round_) == len(self._devices):
                    for device, item in zip(self._devices, round_):
                        self._put(self._host_queues[device], item)
                    round_ = []
        except BaseException as error:  # the loader's error reaches every device's loop
            for q in self._host_queues.values():
                self._put(q, error)
        for q in self._host_queues.values():
            self._put(q, _END)

    def _upload(self, device):
        host, ahead = self._host_queues[device], self._device_queues[device]
        while not self._done:
            try:
                item = host.get(timeout=_POLL_SECONDS)
            except queue.Empty:
                continue
            if item is not _END and not isinstance(item, BaseException):
                try:
                    item = to_device(item, device)
                except BaseException as error:
                    item = error
            if not self._put(ahead, item) or item is _END:
                return


class MpDeviceLoader:
    """The device's loader of a replica: ParallelLoader over its one device."""

    def __init__(self, loader, device, **kwargs):
        self._loader = loader
        self._device = device
        self._parallel_loader_kwargs = kwargs

    def __iter__(self):
        parallel_loader = ParallelLoader(self._loader, [self._device], **self._parallel_loader_kwargs)
        return parallel_loader.per_device_loader(self._device)

    def __len__(self):
        return len(self._loader)
