"""Worker of ``benchmarks/gpu.py``: the same training written as a PyTorch eager loop.

    python benchmarks/_gpu_torch.py MODEL DEVICE SIZE BATCHES EPOCHS

(see ``_gpu_models``). On ``cuda:0`` (``cpu`` with DEVICE cpu): the model in
``torch.nn.functional`` ops (the LSTM: embedding, ``torch.nn.LSTM`` with two
layers of 200, which is cuDNN on the GPU, and a linear layer), its weights
copied from the same NumPy arrays as the other implementations. The data set
is copied once into pinned host memory; each step moves its batch with
``.to('cuda', non_blocking=True)``. The loss is the summed cross-entropy over
the batch's positions divided by the batch size, whose gradient is
SoftmaxOutput's (softmax - onehot) rescaled by 1/batch as Module's SGD does;
``torch.optim.SGD`` with the same momentum and weight decay, for the weights
only as Module's optimizer (torch's default implementation for the device).
Per batch the accuracy is counted on the device and read with ``.item()``: one
synchronisation per batch (rebind's metric keeps its sums on the device until
the metric is read, see ``rebind.metric_sums``).
TF32 is switched off for matrix products and cuDNN: every implementation
computes in plain float32.
"""

import sys
import time

import _common

THREADS = _common.configure_threads()

import _gpu_models as models  # noqa: E402
import _lstm_lm as lm  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

torch.set_num_threads(THREADS)
torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False


def classifier(model, p, x):
    """The logits of an MLP (``fc1``..``fcL``, relu) or of LeNet."""
    if model == "lenet":
        x = torch.tanh(F.conv2d(x, p["conv1_weight"], p["conv1_bias"]))
        x = F.max_pool2d(x, 2, 2)
        x = torch.tanh(F.conv2d(x, p["conv2_weight"], p["conv2_bias"]))
        x = F.max_pool2d(x, 2, 2).flatten(1)
        x = torch.tanh(F.linear(x, p["fc1_weight"], p["fc1_bias"]))
        return F.linear(x, p["fc2_weight"], p["fc2_bias"])
    layers = sum(1 for name in p if name.endswith("_weight"))
    for index in range(1, layers + 1):
        x = F.linear(x, p[f"fc{index}_weight"], p[f"fc{index}_bias"])
        if index < layers:
            x = F.relu(x)
    return x


def lstm_module(p, device):
    """``nn.LSTM`` (MXNet's gate order and two biases) loaded with the ``lstm_l*`` weights."""
    lstm = torch.nn.LSTM(lm.EMBED, lm.HIDDEN, num_layers=lm.LAYERS, batch_first=True)
    lstm = lstm.to(device)
    with torch.no_grad():
        for layer in range(lm.LAYERS):
            for ours, theirs in (("i2h", "ih"), ("h2h", "hh")):
                for kind in ("weight", "bias"):
                    target = getattr(lstm, f"{kind}_{theirs}_l{layer}")
                    target.copy_(p.pop(f"lstm_l{layer}_{ours}_{kind}"))
    lstm.flatten_parameters()
    return lstm


def build(model, params, device):
    """(forward(x) -> logits of shape (positions, classes), {name: parameter to train})."""
    p = {name: torch.from_numpy(value).to(device) for name, value in params.items()}
    lstm = lstm_module(p, device) if model == "lstm" else None  # takes the lstm_l* out of p
    for value in p.values():
        value.requires_grad_()
    if lstm is None:
        return (lambda x: classifier(model, p, x)), dict(p)

    def forward(ids):
        hidden, _ = lstm(F.embedding(ids, p["embed_weight"]))
        return F.linear(hidden.reshape(-1, lm.HIDDEN), p["pred_weight"], p["pred_bias"])

    return forward, {**p, **dict(lstm.named_parameters())}


def decays(name):
    """Module's optimizer decays ``*_weight`` only (nn.LSTM's are ``weight_ih_l0``, ...)."""
    return name.endswith("_weight") or name.startswith("weight_")


def fit(model, device, size, batches, epochs):
    """Train 1 + ``epochs`` epochs; samples/s of each epoch after the first."""
    dev = torch.device("cuda:0" if device == "gpu" else "cpu")
    batch, opt = models.BATCH[model], models.optimizer_params(model)
    data, labels = models.dataset(model, batches, size)
    host_data, host_labels = torch.from_numpy(data), torch.from_numpy(labels)
    if dev.type == "cuda":
        host_data, host_labels = host_data.pin_memory(), host_labels.pin_memory()
    forward, parameters = build(model, models.initial_params(model, size), dev)
    # torch's momentum is buf = momentum * buf + (g + wd * w); w -= lr * buf, where MXNet's
    # is mom = momentum * mom - lr * (g + wd * w); w += mom: with a constant rate the same
    # updates (lr enters at another place), and the same work
    groups = [
        {"params": [v for k, v in parameters.items() if decays(k)], "weight_decay": opt["wd"]},
        {"params": [v for k, v in parameters.items() if not decays(k)], "weight_decay": 0.0},
    ]
    optimizer = torch.optim.SGD(groups, lr=opt["learning_rate"], momentum=opt["momentum"])
    stamps, started = [], time.perf_counter()
    for _ in range(1 + epochs):
        correct = seen = 0
        for start in range(0, batches * batch, batch):
            x = host_data[start : start + batch].to(dev, non_blocking=True)
            target = host_labels[start : start + batch].to(dev, non_blocking=True)
            target = target.reshape(-1).long()
            if model == "lstm":
                x = x.long()
            optimizer.zero_grad(set_to_none=True)
            logits = forward(x)
            loss = F.cross_entropy(logits, target, reduction="sum") / batch
            loss.backward()
            optimizer.step()
            correct += int((logits.detach().argmax(dim=1) == target).sum().item())
            seen += target.numel()
        stamps.append(time.perf_counter())
    result = models.summary(batches * batch, stamps, correct, seen, parameters.values())
    result["warmup_s"] = stamps[0] - started
    if dev.type == "cuda":
        result["transfer"] = "pinned host tensor, .to('cuda', non_blocking=True)"
        result["torch_max_allocated_mib"] = torch.cuda.max_memory_allocated(dev) / 2**20
        result["torch_reserved_mib"] = torch.cuda.memory_reserved(dev) / 2**20
    else:
        result["transfer"] = "host tensor (no copy)"
    return result


def main(argv):
    model, device, size, batches, epochs = models.parse_job(argv)
    if device == "gpu" and not torch.cuda.is_available():
        raise SystemExit("PyTorch sees no CUDA device")
    result = fit(model, device, size, batches, epochs)
    cudnn = torch.backends.cudnn.version() if device == "gpu" else None
    result["version"] = f"PyTorch {torch.__version__}" + (f" (cuDNN {cudnn})" if cudnn else "")
    models.print_result(result)


if __name__ == "__main__":
    main(sys.argv[1:])
