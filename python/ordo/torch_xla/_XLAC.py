"""torch_xla._XLAC: the handful of its C functions torch_xla programs reach
into, over ordo."""

import ordo
from .. import _C
from ._tensors import to_ordo


def _xla_get_default_device():
    return f"xla:{_C.current_device()}"


def _xla_set_default_device(device):
    _C.set_current_device(int(str(device).rsplit(":", 1)[-1]))


def _xla_sync_multi(tensors, devices, wait=True, sync_xla_data=True):
    del devices, sync_xla_data
    from .core import xla_model
    if wait:
        xla_model.unlazy(tensors)
        return
    for index in sorted({to_ordo(t, "_xla_sync_multi").device for t in tensors}):
        _C.mark_step(index)


def _xla_step_marker(device, devices, wait=True):
    del devices
    index = int(str(device).rsplit(":", 1)[-1]) if device else _C.current_device()
    (_C.mark_step_and_wait if wait else _C.mark_step)(index)


def _clear_pending_irs(device):
    """Drops the device's pending graph: its tensors lose their values
    (reading one raises ordo.ExecutionError) and its peers' collectives
    fail instead of waiting (ordo.drop_pending_graph)."""
    ordo.drop_pending_graph(int(str(device).rsplit(":", 1)[-1]))


def _xla_set_use_full_mat_mul_precision(use_full_mat_mul_precision=True):
    """Accepted for torch_xla's programs: the setting lowers matmul precision
    on TPUs; ordo's float32 matmuls always run in full float32."""
    del use_full_mat_mul_precision


def _xla_get_use_full_mat_mul_precision():
    return True


def _xla_metrics_report():
    return ordo.metrics_report()


def _xla_get_replication_devices_count():
    from .core import xla_model
    return xla_model.xrt_world_size()


_get_all_reduce_token = _C._get_all_reduce_token
_set_all_reduce_token = _C._set_all_reduce_token
_get_cc_token = _C._get_cc_token
_set_cc_token = _C._set_cc_token
