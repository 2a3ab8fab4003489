"""The benchmark's LSTM language model in PyTorch (eager, CPU): nn.LSTM, same weights and SGD.

``nn.LSTM`` has MXNet's gate order (input, forget, cell, output) and its two
biases, so the parameters load unchanged. The loss is the summed
cross-entropy over the batch's positions divided by the batch size, whose
gradient is SoftmaxOutput's rescaled by 1/batch as Module's SGD does; SGD
with weight decay then matches MXNet's ``w -= lr * (grad / batch + wd * w)``.
"""

import _lstm_lm as lm
import numpy as np
import torch
import torch.nn.functional as F


class TorchLSTM:
    """Embedding, a 2-layer nn.LSTM and the output layer; ``step`` trains on one batch."""

    def __init__(self, params):
        self.embed = torch.nn.Embedding(lm.VOCAB, lm.EMBED)
        self.lstm = torch.nn.LSTM(lm.EMBED, lm.HIDDEN, num_layers=lm.LAYERS, batch_first=True)
        self.pred = torch.nn.Linear(lm.HIDDEN, lm.VOCAB)
        with torch.no_grad():
            self.embed.weight.copy_(torch.from_numpy(params["embed_weight"]))
            for layer in range(lm.LAYERS):
                prefix = f"lstm_l{layer}_"
                for ours, theirs in (("i2h", "ih"), ("h2h", "hh")):
                    getattr(self.lstm, f"weight_{theirs}_l{layer}").copy_(
                        torch.from_numpy(params[prefix + ours + "_weight"])
                    )
                    getattr(self.lstm, f"bias_{theirs}_l{layer}").copy_(
                        torch.from_numpy(params[prefix + ours + "_bias"])
                    )
            self.pred.weight.copy_(torch.from_numpy(params["pred_weight"]))
            self.pred.bias.copy_(torch.from_numpy(params["pred_bias"]))
        parameters = [*self.embed.parameters(), *self.lstm.parameters(), *self.pred.parameters()]
        self.optimizer = torch.optim.SGD(
            parameters, lr=lm.LEARNING_RATE, momentum=0.0, weight_decay=lm.WEIGHT_DECAY
        )

    def step(self, data, label):
        """Forward, backward and SGD on one ``(batch, T)`` batch; returns the softmax output."""
        ids = torch.from_numpy(data.astype(np.int64))
        target = torch.from_numpy(label.reshape(-1).astype(np.int64))
        self.optimizer.zero_grad(set_to_none=True)
        hidden, _ = self.lstm(self.embed(ids))
        logits = self.pred(hidden.reshape(-1, lm.HIDDEN))
        loss = F.cross_entropy(logits, target, reduction="sum") / data.shape[0]
        loss.backward()
        self.optimizer.step()
        return logits.detach()

    def prob(self, logits):
        return torch.softmax(logits, dim=1).numpy()
