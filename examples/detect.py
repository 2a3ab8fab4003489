"""Train a tiny SSD-style detector on generated shapes, read with ImageDetRecordIter.

The script draws rectangles (class 0) and circles (class 1) of random colours and
sizes on noise, packs them with MXNet's detection label layout
(``[2, 5, class, xmin, ymin, xmax, ymax, ...]``, coordinates in [0, 1]) into
``train.rec`` / ``val.rec``, and reads them back with ``mx.io.ImageDetRecordIter``
(random mirror for training). The network is three small convolutions over a
8x8 feature map with ``MultiBoxPrior`` anchors; ``MultiBoxTarget`` matches the
anchors to the boxes for a softmax class loss and a smooth-L1 box loss, and
``MultiBoxDetection`` decodes and suppresses the predictions. Training is
``Module.fit``; the result is the VOC mean average precision at IoU 0.5 (every
point of the precision / recall curve) on the validation images.

    python examples/detect.py [--num-epochs 8] [--num-train 600] [--batch-size 32]

With the defaults it reaches a validation mAP above 0.95 (0.967 measured) in about
20 seconds on two busy cores (6 s of CPU time). Needs OpenCV (the ``image`` extra).
The script is plain MXNet 1.9: with ``import mxnet as mx`` it runs unchanged.
"""

import argparse
import os
import tempfile

import numpy as np

import rebind as mx

SIZE = 32
MAX_OBJECTS = 2
CLASSES = ("rectangle", "circle")
NUM_CLASSES = len(CLASSES)


def draw_example(rs):
    """One HWC uint8 image and its detection label (header [2, 5], then objects)."""
    import cv2

    image = rs.randint(0, 70, size=(SIZE, SIZE, 3)).astype(np.uint8)
    label, taken = [2.0, 5.0], []
    for _ in range(rs.randint(1, MAX_OBJECTS + 1)):
        kind, side = rs.randint(len(CLASSES)), rs.randint(10, 16)
        x0, y0 = rs.randint(0, SIZE - side), rs.randint(0, SIZE - side)
        if any(abs(x0 - x) < side and abs(y0 - y) < side for x, y in taken):
            continue  # keep objects apart: one anchor cell each
        taken.append((x0, y0))
        color = tuple(int(c) for c in rs.randint(120, 256, size=3))
        if kind == 0:
            cv2.rectangle(image, (x0, y0), (x0 + side - 1, y0 + side - 1), color, -1)
        else:
            center = (x0 + side // 2, y0 + side // 2)
            cv2.circle(image, center, side // 2, color, -1)
        label += [kind, x0 / SIZE, y0 / SIZE, (x0 + side) / SIZE, (y0 + side) / SIZE]
    return image, np.array(label, np.float32)


def write_records(folder, counts, seed=0):
    """``{name: .rec path}`` of generated images with packed detection labels."""
    rs, paths = np.random.RandomState(seed), {}
    for name, count in counts.items():
        rec, idx = os.path.join(folder, f"{name}.rec"), os.path.join(folder, f"{name}.idx")
        writer = mx.recordio.MXIndexedRecordIO(idx, rec, "w")
        for key in range(count):
            image, label = draw_example(rs)
            header = mx.recordio.IRHeader(len(label), label, key, 0)
            writer.write_idx(key, mx.recordio.pack_img(header, image, quality=1, img_fmt=".png"))
        writer.close()
        paths[name] = rec
    return paths


def record_iter(path, batch_size, train):
    """ImageDetRecordIter over ``path``, labels padded to MAX_OBJECTS objects."""
    return mx.io.ImageDetRecordIter(
        path_imgrec=path,
        data_shape=(3, SIZE, SIZE),
        batch_size=batch_size,
        label_pad_width=2 + 5 * MAX_OBJECTS,
        label_name="label",
        scale=1.0 / 255,
        shuffle=train,
        rand_mirror_prob=0.5 if train else 0.0,
        preprocess_threads=1,
        verbose=False,
    )


def build_ssd(num_classes=NUM_CLASSES):
    """Three convolutions, one 8x8 anchor map; training losses plus the decoded detections."""
    data, label = mx.sym.Variable("data"), mx.sym.Variable("label")
    # ImageDetRecordIter rows: [C, H, W, length, 2, 5, objects...]; keep the objects
    gt = mx.sym.reshape(mx.sym.slice_axis(label, axis=1, begin=6, end=None), shape=(0, -1, 5))
    net = data
    for number, filters in enumerate((16, 32, 48), start=1):
        net = mx.sym.Convolution(
            net, kernel=(3, 3), pad=(1, 1), num_filter=filters, name=f"conv{number}"
        )
        net = mx.sym.Activation(net, act_type="relu")
        if number < 3:
            net = mx.sym.Pooling(net, pool_type="max", kernel=(2, 2), stride=(2, 2))
    anchors = mx.sym.contrib.MultiBoxPrior(net, sizes=(0.35, 0.5), ratios=(1.0,), name="anchors")
    per_cell = 2
    cls = mx.sym.Convolution(
        net, kernel=(3, 3), pad=(1, 1), num_filter=per_cell * (num_classes + 1), name="cls"
    )
    cls = mx.sym.reshape(mx.sym.transpose(cls, axes=(0, 2, 3, 1)), shape=(0, -1, num_classes + 1))
    cls_preds = mx.sym.transpose(cls, axes=(0, 2, 1))
    loc = mx.sym.Convolution(net, kernel=(3, 3), pad=(1, 1), num_filter=per_cell * 4, name="loc")
    loc_preds = mx.sym.Flatten(mx.sym.transpose(loc, axes=(0, 2, 3, 1)))
    loc_target, loc_mask, cls_target = mx.sym.contrib.MultiBoxTarget(
        anchors, gt, cls_preds, overlap_threshold=0.5, negative_mining_ratio=3, name="target"
    )
    cls_prob = mx.sym.SoftmaxOutput(
        cls_preds, cls_target, ignore_label=-1, use_ignore=True, multi_output=True,
        normalization="valid", name="cls_prob",
    )  # fmt: skip
    loc_loss = mx.sym.MakeLoss(
        mx.sym.smooth_l1(loc_mask * (loc_preds - loc_target), scalar=1.0),
        normalization="valid", name="loc_loss",
    )  # fmt: skip
    detections = mx.sym.contrib.MultiBoxDetection(
        cls_prob, loc_preds, anchors, nms_threshold=0.45, name="detection"
    )
    return mx.sym.Group(
        [cls_prob, loc_loss, mx.sym.BlockGrad(cls_target), mx.sym.BlockGrad(detections)]
    )


class AnchorAccuracy(mx.metric.EvalMetric):
    """Accuracy of the anchor classes MultiBoxTarget assigned (ignored anchors left out)."""

    def __init__(self):
        super().__init__("anchor-acc")

    def update(self, labels, preds):
        prob, target = preds[0].asnumpy(), preds[2].asnumpy()
        kept = target >= 0
        self.sum_metric += float((prob.argmax(axis=1) == target)[kept].sum())
        self.num_inst += int(kept.sum())


def iou(box, boxes):
    """IoU of one [x1, y1, x2, y2] box with each row of ``boxes``."""
    w = np.clip(np.minimum(box[2], boxes[:, 2]) - np.maximum(box[0], boxes[:, 0]), 0, None)
    h = np.clip(np.minimum(box[3], boxes[:, 3]) - np.maximum(box[1], boxes[:, 1]), 0, None)
    area = (box[2] - box[0]) * (box[3] - box[1])
    areas = (boxes[:, 2] - boxes[:, 0]) * (boxes[:, 3] - boxes[:, 1])
    return w * h / (area + areas - w * h)


def average_precision(scored_hits, num_truths):
    """VOC AP (all points) of ``(score, is_true_positive)`` pairs."""
    if not num_truths:
        return 0.0
    hits = np.array([hit for _, hit in sorted(scored_hits, key=lambda x: -x[0])], np.float64)
    tp = np.cumsum(hits)
    recall = np.concatenate([[0.0], tp / num_truths, [1.0]])
    precision = np.concatenate([[0.0], tp / np.maximum(np.arange(1, len(hits) + 1), 1), [0.0]])
    for i in range(len(precision) - 2, -1, -1):
        precision[i] = max(precision[i], precision[i + 1])
    steps = np.where(recall[1:] != recall[:-1])[0]
    return float(np.sum((recall[steps + 1] - recall[steps]) * precision[steps + 1]))


def mean_average_precision(module, data_iter, num_classes=NUM_CLASSES, threshold=0.5):
    """VOC mAP at IoU ``threshold`` of the module's detections over ``data_iter``."""
    scored = {c: [] for c in range(num_classes)}
    truths = dict.fromkeys(range(num_classes), 0)
    data_iter.reset()
    for batch in data_iter:
        module.forward(batch, is_train=False)
        detections = module.get_outputs()[3].asnumpy()
        raw = batch.label[0].asnumpy()
        labels = raw[:, 6:].reshape(len(raw), -1, 5)
        for row in range(len(raw) - batch.pad):
            gt = labels[row][labels[row][:, 0] >= 0]
            for c in range(num_classes):
                mine = gt[gt[:, 0] == c, 1:]
                truths[c] += len(mine)
                used = np.zeros(len(mine), bool)
                found = detections[row][detections[row][:, 0] == c]
                for det in found[np.argsort(-found[:, 1])]:
                    overlaps = iou(det[2:], mine) if len(mine) else np.zeros(0)
                    best = int(np.argmax(overlaps)) if len(mine) else -1
                    hit = best >= 0 and overlaps[best] >= threshold and not used[best]
                    if hit:
                        used[best] = True
                    scored[c].append((det[1], hit))
    return float(np.mean([average_precision(scored[c], truths[c]) for c in range(num_classes)]))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--num-epochs", type=int, default=8)
    parser.add_argument("--num-train", type=int, default=600)
    parser.add_argument("--num-val", type=int, default=200)
    parser.add_argument("--batch-size", type=int, default=32)
    args = parser.parse_args()
    mx.random.seed(1)
    np.random.seed(1)
    with tempfile.TemporaryDirectory() as folder:
        paths = write_records(folder, {"train": args.num_train, "val": args.num_val})
        train = record_iter(paths["train"], args.batch_size, train=True)
        val = record_iter(paths["val"], args.batch_size, train=False)
        print(f"train: {train.provide_data[0]}, labels {train.provide_label[0]}")
        module = mx.mod.Module(
            build_ssd(), data_names=["data"], label_names=["label"], context=mx.cpu()
        )
        module.fit(
            train,
            eval_metric=AnchorAccuracy(),
            optimizer="adam",
            optimizer_params={"learning_rate": 0.003},
            initializer=mx.init.Xavier(magnitude=2),
            num_epoch=args.num_epochs,
        )
        print(f"Validation mAP: {mean_average_precision(module, val):.4f}")


if __name__ == "__main__":
    main()
