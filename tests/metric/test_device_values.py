"""Accuracy and Perplexity read predictions where they are (``mx.metric.device_values``)."""

import numpy as np
import pytest

import rebind as mx
from rebind.metric import device_values


def _scores(ctx):
    rng = np.random.default_rng(0)
    scores = rng.random((12, 5)).astype(np.float32)
    labels = rng.integers(0, 5, 12).astype(np.float32)
    return scores, labels, mx.nd.array(scores, ctx=ctx), mx.nd.array(labels)


def test_predictions_are_read_without_a_copy_and_labels_follow_them(ctx):
    _, labels, pred, label = _scores(ctx)  # the label on cpu(0), as an iterator gives it
    xp, label_values, pred_values = device_values(label, pred)
    assert xp is ctx.backend.xp
    assert pred_values is pred._data  # the output itself: nothing copied
    assert ctx.backend.owns(label_values)
    np.testing.assert_array_equal(ctx.backend.to_host(label_values), labels)


def test_host_inputs_are_read_as_numpy():
    xp, label, pred = device_values([1, 0], np.array([[0.2, 0.8], [0.9, 0.1]]))
    assert xp is np and isinstance(label, np.ndarray) and isinstance(pred, np.ndarray)


def test_accuracy_and_perplexity_agree_with_their_host_computation(ctx):
    scores, labels, pred, label = _scores(ctx)
    accuracy = mx.metric.Accuracy()
    accuracy.update([label], [pred])
    expected = np.mean(np.argmax(scores, axis=1) == labels.astype(np.int32))
    assert accuracy.get()[1] == expected
    perplexity = mx.metric.Perplexity(ignore_label=0)
    probs = scores / scores.sum(axis=1, keepdims=True)
    perplexity.update([label], [mx.nd.array(probs, ctx=ctx)])
    kept = labels != 0
    picked = probs[np.arange(12), labels.astype(np.int64)][kept]
    np.testing.assert_allclose(
        perplexity.get()[1], np.exp(-np.log(picked.astype(np.float64)).mean()), rtol=1e-5
    )


@pytest.mark.parametrize("classes", [100, 10000])
def test_accuracy_over_many_classes_agrees_with_numpys_argmax(ctx, classes):
    # on a GPU a warp a row: ties and NaNs across its lanes pick NumPy's class
    rng = np.random.default_rng(classes)
    scores = rng.standard_normal((70, classes)).astype(np.float32)
    scores[0, 35] = scores[0, 7] = 9  # a tie: class 7
    scores[1, 40], scores[1, 9] = np.nan, np.nan  # the first NaN: class 9
    scores[2] = -np.inf  # all equal: class 0
    labels = rng.integers(0, classes, 70).astype(np.float32)
    labels[:3] = [7, 9, 0]
    labels[3:40] = np.argmax(scores[3:40], axis=1)  # about half right
    accuracy = mx.metric.Accuracy()
    accuracy.update([mx.nd.array(labels)], [mx.nd.array(scores, ctx=ctx)])
    expected = np.argmax(scores, axis=1) == labels.astype(np.int32)
    assert expected[:3].all() and 40 <= expected.sum() < 70
    assert accuracy.get()[1] == expected.mean()


def test_log_losses_and_loss_agree_with_their_host_computation(ctx):
    scores, labels, _, label = _scores(ctx)
    probs = scores / scores.sum(axis=1, keepdims=True)
    picked = probs[np.arange(12), labels.astype(np.int64)].astype(np.float64)
    for metric in (mx.metric.CrossEntropy(), mx.metric.NegativeLogLikelihood()):
        metric.update([label], [mx.nd.array(probs, ctx=ctx)])
        np.testing.assert_allclose(metric.get()[1], -np.log(picked + 1e-12).mean(), rtol=1e-5)
    loss = mx.metric.Loss()
    loss.update(None, [mx.nd.array(scores, ctx=ctx)])
    np.testing.assert_allclose(loss.get()[1], scores.astype(np.float64).mean(), rtol=1e-5)


def test_accuracy_over_batches_reads_and_resets_agrees_with_the_host(ctx):
    """On a GPU: few classes (one kernel a batch), many (argmax, then one kernel)."""
    rng = np.random.default_rng(3)
    batches = []
    for width in (5, 10, 100, 5, 100):
        scores = rng.standard_normal((16, width)).astype(np.float32)
        labels = rng.integers(0, width, 16).astype(np.float32)
        labels[:4] = scores[:4].argmax(axis=1)  # some right for sure
        batches.append((scores, labels))
    metric, seen, expected = mx.metric.Accuracy(), [], []
    right = [int((s.argmax(axis=1) == lab).sum()) for s, lab in batches]
    for k, (scores, labels) in enumerate(batches):
        metric.update([mx.nd.array(labels)], [mx.nd.array(scores, ctx=ctx)])
        if k == 2:
            seen.append(metric.get())  # read mid-way
            expected.append(("accuracy", sum(right[:3]) / 48))
            metric.reset_local()
    seen += [metric.get(), metric.get_global()]
    expected += [("accuracy", sum(right[3:]) / 32), ("accuracy", sum(right) / 80)]
    assert seen == expected
    assert metric.global_num_inst == 80 and metric.num_inst == 32
