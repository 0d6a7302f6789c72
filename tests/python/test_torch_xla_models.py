"""torch.nn models trained on the xla device give the losses and weights of
the same model on the CPU (float32: within the tolerance of reordered
float sums, rtol 2e-4 over a few steps), and each step's graph compiles
once and is then reused (counted by the metrics), with no op falling back
to the CPU (a fallback reads values back and waits for the device)."""

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("ordo.torch_xla")

import ordo  # noqa: E402
import ordo.torch_xla.core.xla_model as xm  # noqa: E402
import ordo.torch_xla.debug.metrics as met  # noqa: E402

nn, F = torch.nn, torch.nn.functional
TOLERANCE = dict(rtol=2e-4, atol=2e-5)


class MnistCnn(nn.Module):
    """torch_xla's MNIST example's model."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 10, kernel_size=5)
        self.bn1 = nn.BatchNorm2d(10)
        self.conv2 = nn.Conv2d(10, 20, kernel_size=5)
        self.bn2 = nn.BatchNorm2d(20)
        self.fc1 = nn.Linear(320, 50)
        self.fc2 = nn.Linear(50, 10)

    def forward(self, x):
        x = F.relu(F.max_pool2d(self.conv1(x), 2))
        x = self.bn1(x)
        x = F.relu(F.max_pool2d(self.conv2(x), 2))
        x = self.bn2(x)
        x = torch.flatten(x, 1)
        x = F.relu(self.fc1(x))
        return F.log_softmax(self.fc2(x), dim=1)


class TinyTransformer(nn.Module):
    def __init__(self, vocab=40, width=16):
        super().__init__()
        self.embedding = nn.Embedding(vocab, width)
        self.encoder = nn.TransformerEncoderLayer(width, nhead=2, dim_feedforward=32, dropout=0.0, batch_first=True)
        self.head = nn.Linear(width, vocab)

    def forward(self, tokens):
        return self.head(self.encoder(self.embedding(tokens)))


class ResidualCnn(nn.Module):
    """torchvision's BasicBlock pattern: in-place ReLUs, and the shortcut
    added in place to an activation that autograd needs."""

    def __init__(self, width=6):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(1, width, 3, padding=1), nn.BatchNorm2d(width), nn.ReLU(inplace=True))
        self.conv1, self.bn1 = nn.Conv2d(width, width, 3, padding=1), nn.BatchNorm2d(width)
        self.conv2, self.bn2 = nn.Conv2d(width, width, 3, padding=1), nn.BatchNorm2d(width)
        self.relu = nn.ReLU(inplace=True)
        self.head = nn.Linear(width, 10)

    def forward(self, x):
        identity = self.stem(x)
        out = self.relu(self.bn1(self.conv1(identity)))
        out = self.bn2(self.conv2(out))
        out += identity
        out = self.relu(out)
        return F.log_softmax(self.head(F.adaptive_avg_pool2d(out, 1).flatten(1)), dim=1)


def mlp():
    return nn.Sequential(nn.Linear(12, 32), nn.Tanh(), nn.Linear(32, 32), nn.GELU(), nn.Linear(32, 5))


def fallback_counts():
    return {name: met.counter_value(name) for name in met.counter_names() if name.startswith("aten::")}


def train_both(make_model, make_optimizer, batches, loss_fn, steps=4, max_norm=None):
    """Trains one model on the CPU and its copy on the xla device on the same
    batches (clipping the gradients' norm to max_norm when given); returns
    both losses, both models and the compile counts, and checks that no op
    of the xla device's steps fell back to the CPU."""
    torch.manual_seed(0)
    cpu_model = make_model()
    device = xm.xla_device()
    xla_model = make_model().to(device)
    xla_model.load_state_dict(cpu_model.state_dict())
    runs = []
    compiles = []
    for model, on_device in ((cpu_model, False), (xla_model, True)):
        fallbacks_before = fallback_counts()
        optimizer = make_optimizer(model.parameters())
        losses = []
        for step in range(steps):
            x, y = batches[step % len(batches)]
            if on_device:
                x, y = x.to(device), y.to(device)
            optimizer.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            if max_norm is not None:
                torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
            optimizer.step()
            if on_device:
                xm.mark_step()
                compiles.append(met.counter_value("UncachedCompile") or 0)
            losses.append(loss.detach())
        assert fallback_counts() == fallbacks_before
        runs.append(torch.stack([l.cpu() for l in losses]))
    return runs, cpu_model, xla_model, compiles


def check_same(runs, cpu_model, xla_model):
    torch.testing.assert_close(runs[1], runs[0], **TOLERANCE)
    for (name, p_cpu), p_xla in zip(cpu_model.state_dict().items(), xla_model.state_dict().values()):
        torch.testing.assert_close(p_xla.cpu(), p_cpu, **TOLERANCE, msg=name)


@pytest.mark.parametrize("optimizer", [
    lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.9),
    lambda p: torch.optim.Adam(p, lr=1e-3),
    lambda p: torch.optim.AdamW(p, lr=1e-3, weight_decay=0.01),
], ids=["sgd_momentum", "adam", "adamw"])
def test_an_mlp_trains_as_on_the_cpu(optimizer):
    g = torch.Generator().manual_seed(1)
    batches = [(torch.randn(16, 12, generator=g), torch.randint(0, 5, (16,), generator=g)) for _ in range(2)]
    runs, cpu_model, xla_model, compiles = train_both(mlp, optimizer, batches, F.cross_entropy, steps=5, max_norm=0.5)
    check_same(runs, cpu_model, xla_model)
    assert compiles[-1] == compiles[-2] == compiles[-3]  # a cache hit once the optimizer's state exists


def check_an_image_classifier_trains_as_on_the_cpu(make_model, seed, batch, side, lr, momentum):
    """Four SGD steps on random one-channel images of side x side, nll_loss."""
    g = torch.Generator().manual_seed(seed)
    batches = [(torch.randn(batch, 1, side, side, generator=g), torch.randint(0, 10, (batch,), generator=g))
               for _ in range(2)]
    runs, cpu_model, xla_model, compiles = train_both(
        make_model, lambda p: torch.optim.SGD(p, lr=lr, momentum=momentum), batches, F.nll_loss, steps=4)
    check_same(runs, cpu_model, xla_model)
    assert compiles[-1] == compiles[-2]


def test_torch_xlas_mnist_cnn_trains_as_on_the_cpu():
    check_an_image_classifier_trains_as_on_the_cpu(MnistCnn, seed=2, batch=8, side=28, lr=0.01, momentum=0.5)


def test_a_residual_cnn_with_in_place_activations_trains_as_on_the_cpu():
    check_an_image_classifier_trains_as_on_the_cpu(ResidualCnn, seed=4, batch=4, side=12, lr=0.05, momentum=0.9)


def test_a_small_transformer_trains_as_on_the_cpu():
    g = torch.Generator().manual_seed(3)
    batches = [(torch.randint(0, 40, (4, 6), generator=g), torch.randint(0, 40, (4, 6), generator=g))
               for _ in range(2)]

    def loss_fn(logits, target):
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), target.reshape(-1))

    # SGD: the key projection's bias gets a gradient of rounding noise only
    # (softmax ignores a constant), which Adam would scale up to lr.
    runs, cpu_model, xla_model, compiles = train_both(
        TinyTransformer, lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.9), batches, loss_fn, steps=4)
    check_same(runs, cpu_model, xla_model)
    assert compiles[-1] == compiles[-2]


def test_a_checkpoint_of_cpu_copies_round_trips(tmp_path):
    device = xm.xla_device()
    model = mlp().to(device)
    xm.save(model.state_dict(), tmp_path / "model.pt")
    loaded = torch.load(tmp_path / "model.pt")
    for (name, value), saved in zip(model.state_dict().items(), loaded.values()):
        assert saved.device.type == "cpu" and torch.equal(saved, value.cpu()), name
