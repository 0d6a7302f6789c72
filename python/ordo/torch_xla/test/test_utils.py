"""torch_xla.test.test_utils: the progress lines and summary-writer helpers
torch_xla's example programs (MNIST, ImageNet) import."""

from datetime import datetime

from ..core import xla_model as xm
from ..debug import metrics as met


def now(format="%H:%M:%S"):  # noqa: A002 - torch_xla's argument name
    return datetime.now().strftime(format)


def _device_name(device):
    return f"{device}/{xm.get_ordinal()}"


def _line(*fields):
    """One "| "-prefixed line of the fields that are given, written at once
    (replicas are threads: one write per line keeps lines whole)."""
    print("| " + " ".join(f for f in fields if f) + "\n", end="", flush=True)


def print_training_update(device, step, loss, rate, global_rate, epoch=None, summary_writer=None):
    """Training Device=xla:N/ordinal [Epoch=] Step= Loss= Rate= GlobalRate= Time="""
    _line("Training", f"Device={_device_name(device)}", f"Epoch={epoch}" if epoch is not None else None,
          f"Step={step}", f"Loss={loss:.5f}", f"Rate={rate:.2f}", f"GlobalRate={global_rate:.2f}", f"Time={now()}")
    write_to_summary(summary_writer, dict_to_write={"examples/sec": rate, "average_examples/sec": global_rate})


def print_test_update(device, accuracy, epoch=None, step=None):
    _line("Test", f"Device={_device_name(device)}", f"Step={step}" if step is not None else None,
          f"Epoch={epoch}" if epoch is not None else None,
          f"Accuracy={accuracy:.2f}" if accuracy is not None else None, f"Time={now()}")


def get_summary_writer(logdir):
    """A TensorBoard SummaryWriter logging to logdir, or None without one."""
    if not logdir:
        return None
    try:
        from torch.utils.tensorboard import SummaryWriter
    except ImportError as error:
        raise ImportError(f"get_summary_writer({logdir!r}) needs the tensorboard package: {error}") from error
    return SummaryWriter(log_dir=logdir)


def write_to_summary(summary_writer, global_step=None, dict_to_write={}, write_xla_metrics=False):  # noqa: B006
    """Adds each scalar of dict_to_write (and, with write_xla_metrics, every
    counter of the metrics, the fallbacks' sum as aten_ops_sum); nothing
    without a writer."""
    if summary_writer is None:
        return
    for name, value in dict_to_write.items():
        summary_writer.add_scalar(name, value, global_step)
    if write_xla_metrics:
        fallbacks = 0
        for name in met.counter_names():
            value = met.counter_value(name)
            summary_writer.add_scalar(name, value, global_step)
            fallbacks += value if name.startswith("aten::") else 0
        summary_writer.add_scalar("aten_ops_sum", fallbacks, global_step)


def close_summary_writer(summary_writer):
    if summary_writer is not None:
        summary_writer.flush()
        summary_writer.close()
