"""Built-in metric values against formulas written out here in NumPy (every backend)."""

import math

import numpy as np
import pytest

import rebind as mx

SEED = 20240607


@pytest.fixture
def rng():
    print(f"random seed {SEED}")
    return np.random.default_rng(SEED)


def nd(values, ctx):
    values = np.asarray(values, dtype=np.float32)
    return mx.nd.array(values, ctx=ctx, dtype=np.float32)


def softmax_rows(rng, n, k):
    scores = rng.random((n, k)).astype(np.float32) + 0.05
    return scores / scores.sum(axis=1, keepdims=True)


def test_accuracy_and_topk(rng, ctx):
    scores = [softmax_rows(rng, 10, 5) for _ in range(2)]
    labels = [rng.integers(0, 5, 10).astype(np.float32) for _ in range(2)]
    acc, top3 = mx.metric.Accuracy(), mx.metric.TopKAccuracy(top_k=3)
    for s, y in zip(scores, labels, strict=True):
        acc.update([nd(y, ctx)], [nd(s, ctx)])
        top3.update([nd(y, ctx)], [nd(s, ctx)])
    hits = sum(int((s.argmax(1) == y).sum()) for s, y in zip(scores, labels, strict=True))
    in_top = 0
    for s, y in zip(scores, labels, strict=True):
        ranks = (s > s[np.arange(10), y.astype(int)][:, None]).sum(axis=1)
        in_top += int((ranks < 3).sum())
    assert acc.get() == ("accuracy", hits / 20)
    assert top3.get() == ("top_k_accuracy_3", in_top / 20)


def test_accuracy_on_class_axis_2(rng, ctx):
    scores = rng.random((4, 3, 6)).astype(np.float32)
    labels = rng.integers(0, 6, (4, 3)).astype(np.float32)
    metric = mx.metric.Accuracy(axis=2)
    metric.update([nd(labels, ctx)], [nd(scores, ctx)])
    assert metric.get()[1] == pytest.approx(np.mean(scores.argmax(axis=2) == labels))


def _f1(tp, fp, fn):
    return 2 * tp / (2 * tp + fp + fn) if tp else 0.0


def _mcc(tp, fp, fn, tn):
    return (tp * tn - fp * fn) / math.sqrt((tp + fp) * (tp + fn) * (tn + fp) * (tn + fn))


def _counts(labels, scores):
    pred = np.argmax(scores, axis=1)
    return [
        int(np.sum((pred == 1) & (labels == 1))),
        int(np.sum((pred == 1) & (labels == 0))),
        int(np.sum((pred == 0) & (labels == 1))),
        int(np.sum((pred == 0) & (labels == 0))),
    ]


def test_f1_and_mcc_micro_pool_counts_macro_averages_batches(rng, ctx):
    batches = [
        (rng.integers(0, 2, 16).astype(np.float32), softmax_rows(rng, 16, 2)) for _ in range(3)
    ]
    metrics = {
        (cls, avg): getattr(mx.metric, cls)(average=avg)
        for cls in ("F1", "MCC")
        for avg in ("micro", "macro")
    }
    for labels, scores in batches:
        for metric in metrics.values():
            metric.update([nd(labels, ctx)], [nd(scores, ctx)])
    per_batch = [_counts(y, s) for y, s in batches]
    pooled = np.sum(per_batch, axis=0)
    assert metrics["F1", "micro"].get()[1] == pytest.approx(_f1(*pooled[:3]))
    assert metrics["MCC", "micro"].get()[1] == pytest.approx(_mcc(*pooled))
    assert metrics["F1", "macro"].get()[1] == pytest.approx(
        np.mean([_f1(*c[:3]) for c in per_batch])
    )
    assert metrics["MCC", "macro"].get()[1] == pytest.approx(np.mean([_mcc(*c) for c in per_batch]))
    # MXNet: the macro global value is also a mean over batches
    assert metrics["F1", "macro"].get_global() == metrics["F1", "macro"].get()


def test_f1_refuses_more_than_two_classes(ctx):
    with pytest.raises(ValueError, match="binary"):
        mx.metric.F1().update([nd([0, 1, 2], ctx)], [nd(np.eye(3), ctx)])


def test_perplexity_with_ignored_label(rng, ctx):
    probs = softmax_rows(rng, 12, 4)
    labels = rng.integers(0, 4, 12).astype(np.float32)
    metric = mx.metric.Perplexity(ignore_label=2)
    metric.update([nd(labels, ctx)], [nd(probs, ctx)])
    kept = labels != 2
    chosen = probs[np.arange(12), labels.astype(int)][kept]
    assert metric.get()[1] == pytest.approx(np.exp(-np.log(chosen).mean()), rel=1e-5)
    plain = mx.metric.Perplexity(ignore_label=None)
    plain.update([nd(labels, ctx)], [nd(probs, ctx)])
    chosen = probs[np.arange(12), labels.astype(int)]
    assert plain.get()[1] == pytest.approx(np.exp(-np.log(chosen).mean()), rel=1e-5)


def test_regression_errors(rng, ctx):
    labels = [rng.normal(size=(5,)), rng.normal(size=(5,))]
    preds = [rng.normal(size=(5, 1)), rng.normal(size=(5, 1))]
    metrics = [mx.metric.MAE(), mx.metric.MSE(), mx.metric.RMSE()]
    for y, p in zip(labels, preds, strict=True):
        for metric in metrics:
            metric.update([nd(y, ctx)], [nd(p, ctx)])
    diffs = [
        y.astype(np.float32) - p[:, 0].astype(np.float32)
        for y, p in zip(labels, preds, strict=True)
    ]
    expected = [
        np.mean([np.abs(d).mean() for d in diffs]),
        np.mean([(d**2).mean() for d in diffs]),
        np.mean([np.sqrt((d**2).mean()) for d in diffs]),
    ]
    for metric, value in zip(metrics, expected, strict=True):
        assert metric.get()[1] == pytest.approx(value, rel=1e-5)


def test_cross_entropy_and_nll(rng, ctx):
    probs = softmax_rows(rng, 8, 3)
    labels = rng.integers(0, 3, 8).astype(np.float32)
    expected = -np.mean(np.log(probs[np.arange(8), labels.astype(int)] + 1e-12))
    for metric in (mx.metric.CrossEntropy(), mx.metric.NegativeLogLikelihood()):
        metric.update([nd(labels, ctx)], [nd(probs, ctx)])
        assert metric.get()[1] == pytest.approx(expected, rel=1e-5)


def test_pearson_macro_and_micro(rng, ctx):
    batches = [(rng.normal(size=7), rng.normal(size=7)) for _ in range(3)]
    macro = mx.metric.PearsonCorrelation()
    micro = mx.metric.PearsonCorrelation(average="micro")
    for y, p in batches:
        for metric in (macro, micro):
            metric.update([nd(y, ctx)], [nd(p, ctx)])
    f32 = [
        (y.astype(np.float32).astype(float), p.astype(np.float32).astype(float)) for y, p in batches
    ]
    per_batch = [np.corrcoef(y, p)[0, 1] for y, p in f32]
    assert macro.get()[1] == pytest.approx(np.mean(per_batch))
    # micro uses MXNet's batched running update, close to the pooled correlation
    all_y = np.concatenate([y for y, _ in f32])
    all_p = np.concatenate([p for _, p in f32])
    assert micro.get()[1] == pytest.approx(np.corrcoef(all_y, all_p)[0, 1], abs=0.1)
    assert micro.get_global() == ("pearsonr", 0.0)  # MXNet never fills its global sum


def test_pearson_micro_single_batch_is_exact(rng, ctx):
    y, p = rng.normal(size=9), rng.normal(size=9)
    micro = mx.metric.PearsonCorrelation(average="micro")
    micro.update([nd(y, ctx)], [nd(p, ctx)])
    f32 = y.astype(np.float32).astype(float), p.astype(np.float32).astype(float)
    assert micro.get()[1] == pytest.approx(np.corrcoef(*f32)[0, 1])


def _multiclass_mcc(true, pred, k):
    confusion = np.zeros((k, k))
    for t, q in zip(true, pred, strict=True):
        confusion[t, q] += 1
    s = confusion.sum()
    t_k, p_k = confusion.sum(axis=1), confusion.sum(axis=0)
    c = np.trace(confusion)
    return (c * s - t_k @ p_k) / math.sqrt((s**2 - p_k @ p_k) * (s**2 - t_k @ t_k))


def test_pcc_grows_and_matches_multiclass_mcc(rng, ctx):
    metric = mx.metric.PCC()
    trues, preds = [], []
    for _ in range(2):
        scores = softmax_rows(rng, 20, 5)
        labels = rng.integers(0, 5, 20)
        metric.update([nd(labels, ctx)], [nd(scores, ctx)])
        trues.append(labels)
        preds.append(scores.argmax(axis=1))
    assert metric.k == 5
    expected = _multiclass_mcc(np.concatenate(trues), np.concatenate(preds), 5)
    assert metric.get()[1] == pytest.approx(expected)
    assert metric.get_global()[1] == pytest.approx(expected)


def test_loss_is_mean_of_outputs_and_ignores_labels(rng, ctx):
    outs = [rng.random((3, 2)), rng.random(4)]
    metric = mx.metric.create("loss")
    metric.update(None, [nd(o, ctx) for o in outs])
    metric.update([], nd(outs[1], ctx))
    total = outs[0].astype(np.float32).sum() + 2 * outs[1].astype(np.float32).sum()
    assert metric.get()[1] == pytest.approx(total / 14, rel=1e-6)
    assert mx.metric.create("torch").name == "torch"
    assert mx.metric.create("caffe").name == "caffe"
