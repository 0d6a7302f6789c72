"""A torch_xla MNIST training program: the CNN (two Conv2d with BatchNorm2d
and max_pool2d, two Linear, log_softmax) trained data parallel with SGD,
pl.MpDeviceLoader, xm.optimizer_step and step closures that print progress;
the held-out accuracy averaged over the replicas with xm.mesh_reduce, the
metrics report at the end; exit 21 when the accuracy misses its target.

Nothing is downloaded. The default data are MNIST-shaped digits: the
1797 handwritten digits of scikit-learn, 8 x 8 pixels upscaled to 20 x 20
and centred on 28 x 28 as MNIST's are, served through torchvision's dataset
interface and transforms. --fake_data trains on MNIST-shaped zeros from
xu.SampleGenerator instead (every label 0), as torch_xla's --fake_data.

    PYTHONPATH=python /usr/bin/python3 tests/torch_xla_programs/train_mp_mnist.py --num_epochs 3
"""

import argparse
import sys

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from torchvision import datasets, transforms

import ordo.torch_xla.core.xla_model as xm
import ordo.torch_xla.debug.metrics as met
import ordo.torch_xla.distributed.parallel_loader as pl
import ordo.torch_xla.distributed.xla_multiprocessing as xmp
import ordo.torch_xla.test.test_utils as test_utils
import ordo.torch_xla.utils.utils as xu


def parse_flags():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--num_cores', type=int, default=None)
    parser.add_argument('--batch_size', type=int, default=32, help='per replica')
    parser.add_argument('--num_epochs', type=int, default=3)
    parser.add_argument('--lr', type=float, default=0.01, help='per replica: scaled by the world size')
    parser.add_argument('--momentum', type=float, default=0.5)
    parser.add_argument('--target_accuracy', type=float, default=90.0)
    parser.add_argument('--log_steps', type=int, default=5)
    parser.add_argument('--fake_data', action='store_true')
    parser.add_argument('--fake_train_samples', type=int, default=2048)
    parser.add_argument('--fake_test_samples', type=int, default=512)
    parser.add_argument('--drop_last', action='store_true')
    parser.add_argument('--async_closures', action='store_true')
    parser.add_argument('--metrics_debug', action='store_true')
    parser.add_argument('--logdir', type=str, default=None, help='TensorBoard summaries (needs tensorboard)')
    return parser.parse_args()


class MNIST(nn.Module):

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 10, kernel_size=5)
        self.bn1 = nn.BatchNorm2d(10)
        self.conv2 = nn.Conv2d(10, 20, kernel_size=5)
        self.bn2 = nn.BatchNorm2d(20)
        self.fc1 = nn.Linear(320, 50)
        self.fc2 = nn.Linear(50, 10)

    def forward(self, x):
        x = self.bn1(F.relu(F.max_pool2d(self.conv1(x), 2)))
        x = self.bn2(F.relu(F.max_pool2d(self.conv2(x), 2)))
        x = F.relu(self.fc1(torch.flatten(x, 1)))
        return F.log_softmax(self.fc2(x), dim=1)


class Digits28(datasets.VisionDataset):
    """scikit-learn's digits as MNIST serves its images: 28 x 28 grey PIL
    images (uint8), the digit in the central 20 x 20, and int labels; the
    first 1437 digits train, the other 360 are held out."""

    SPLIT = 1437

    def __init__(self, root, train=True, transform=None, target_transform=None):
        super().__init__(root, transform=transform, target_transform=target_transform)
        from sklearn.datasets import load_digits
        digits = load_digits()
        order = np.random.default_rng(0).permutation(len(digits.target))
        keep = order[:self.SPLIT] if train else order[self.SPLIT:]
        small = torch.tensor(digits.images[keep] / 16.0, dtype=torch.float32).unsqueeze(1)
        large = F.interpolate(small, size=(20, 20), mode='bilinear', align_corners=False)
        self.data = (F.pad(large, (4, 4, 4, 4)).squeeze(1).clamp(0, 1) * 255).to(torch.uint8)
        self.targets = torch.tensor(digits.target[keep], dtype=torch.int64)

    def __len__(self):
        return len(self.targets)

    def __getitem__(self, index):
        from PIL import Image
        image, target = Image.fromarray(self.data[index].numpy(), mode='L'), int(self.targets[index])
        if self.transform is not None:
            image = self.transform(image)
        if self.target_transform is not None:
            target = self.target_transform(target)
        return image, target


def fake_loader(flags, samples):
    data = (torch.zeros(flags.batch_size, 1, 28, 28), torch.zeros(flags.batch_size, dtype=torch.int64))
    return xu.SampleGenerator(data=data, sample_count=samples // flags.batch_size // xm.xrt_world_size())


def digits_loader(flags, train):
    normalize = transforms.Compose([transforms.ToTensor(), transforms.Normalize((0.1307,), (0.3081,))])
    dataset = Digits28('/nonexistent/digits', train=train, transform=normalize)
    sampler = torch.utils.data.distributed.DistributedSampler(
        dataset, num_replicas=xm.xrt_world_size(), rank=xm.get_ordinal(), shuffle=train)
    return torch.utils.data.DataLoader(dataset, batch_size=flags.batch_size, sampler=sampler,
                                       drop_last=flags.drop_last)


def _train_update(device, step, loss, tracker, writer):
    test_utils.print_training_update(device, step, loss.item(), tracker.rate(), tracker.global_rate(),
                                     summary_writer=writer)


def train_mnist(flags):
    torch.manual_seed(1)
    if flags.fake_data:
        train_loader = fake_loader(flags, flags.fake_train_samples)
        test_loader = fake_loader(flags, flags.fake_test_samples)
    else:
        train_loader, test_loader = digits_loader(flags, True), digits_loader(flags, False)

    device = xm.xla_device()
    model = MNIST().to(device)
    writer = test_utils.get_summary_writer(flags.logdir) if xm.is_master_ordinal() else None
    optimizer = optim.SGD(model.parameters(), lr=flags.lr * xm.xrt_world_size(), momentum=flags.momentum)
    loss_fn = nn.NLLLoss()

    def train_loop_fn(loader, epoch):
        tracker = xm.RateTracker()
        model.train()
        if hasattr(train_loader, 'sampler'):
            train_loader.sampler.set_epoch(epoch)
        for step, (data, target) in enumerate(loader):
            optimizer.zero_grad()
            loss = loss_fn(model(data), target)
            loss.backward()
            xm.optimizer_step(optimizer)
            tracker.add(flags.batch_size)
            if step % flags.log_steps == 0:
                xm.add_step_closure(_train_update, args=(device, step, loss, tracker, writer),
                                    run_async=flags.async_closures)

    def test_loop_fn(loader):
        correct, samples = 0, 0
        model.eval()
        for data, target in loader:
            predicted = model(data).max(1, keepdim=True)[1]
            correct += predicted.eq(target.view_as(predicted)).sum()
            samples += data.size()[0]
        accuracy = 100.0 * correct.item() / samples
        return xm.mesh_reduce('test_accuracy', accuracy, np.mean)

    train_device_loader = pl.MpDeviceLoader(train_loader, device)
    test_device_loader = pl.MpDeviceLoader(test_loader, device)
    max_accuracy = 0.0
    for epoch in range(1, flags.num_epochs + 1):
        xm.master_print(f'Epoch {epoch} train begin {test_utils.now()}')
        train_loop_fn(train_device_loader, epoch)
        xm.master_print(f'Epoch {epoch} train end {test_utils.now()}')
        accuracy = test_loop_fn(test_device_loader)
        xm.master_print(f'Epoch {epoch} test end {test_utils.now()}, Accuracy={accuracy:.2f}')
        max_accuracy = max(accuracy, max_accuracy)
        test_utils.write_to_summary(writer, epoch, dict_to_write={'Accuracy/test': accuracy}, write_xla_metrics=True)
        if flags.metrics_debug:
            xm.master_print(met.metrics_report())
    test_utils.close_summary_writer(writer)
    xm.master_print(f'Max Accuracy: {max_accuracy:.2f}%')
    return max_accuracy


def _mp_fn(index, flags):
    torch.set_default_tensor_type('torch.FloatTensor')
    accuracy = train_mnist(flags)
    xm.master_print(met.short_metrics_report())
    if accuracy < flags.target_accuracy:
        print(f'Accuracy {accuracy:.2f} is below the target {flags.target_accuracy}', file=sys.stderr)
        sys.exit(21)


if __name__ == '__main__':
    FLAGS = parse_flags()
    xmp.spawn(_mp_fn, args=(FLAGS,), nprocs=FLAGS.num_cores)
