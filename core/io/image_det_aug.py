"""ImageDetRecordIter's augmenter, step for step as MXNet 1.9.1's ``det_aug_default``.

``DefaultDetAugmenter`` follows ``DefaultImageDetAugmenter::Process``
(src/io/image_det_aug_default.cc): shorter-edge resize, HSL / contrast jitter,
mirror, random pad, random crop by one of ``num_crop_sampler`` samplers (with its
overlap / coverage constraints and ``crop_emit_mode``), then the resize of
``resize_mode`` (force, shrink, fit). Images are OpenCV BGR uint8 arrays; labels are
MXNet's flat vectors (header, then objects). Objects without area are dropped,
as MXNet's ImageDetLabel does. Without random parameters every step is
deterministic; random draws come from a NumPy generator per image (not MXNet's).
"""

import numpy as np

from .image_record_workers import _cv2

__all__ = ["DET_AUGMENT_FIELDS", "DefaultDetAugmenter", "DetLabel"]

_CROP_TUPLES = {
    "min_crop_scales": 0.0,
    "max_crop_scales": 1.0,
    "min_crop_aspect_ratios": 1.0,
    "max_crop_aspect_ratios": 1.0,
    "min_crop_overlaps": 0.0,
    "max_crop_overlaps": 1.0,
    "min_crop_sample_coverages": 0.0,
    "max_crop_sample_coverages": 1.0,
    "min_crop_object_coverages": 0.0,
    "max_crop_object_coverages": 1.0,
}
# name -> (kind, default), MXNet's DefaultImageDetAugmentParam
DET_AUGMENT_FIELDS = {
    "resize": ("int", -1),
    "rand_crop_prob": ("float", 0.0),
    **{name: ("floats", (value,)) for name, value in _CROP_TUPLES.items()},
    "num_crop_sampler": ("int", 1),
    "crop_emit_mode": ("str", "center"),
    "emit_overlap_thresh": ("float", 0.3),
    "max_crop_trials": ("floats", (25,)),
    "rand_pad_prob": ("float", 0.0),
    "max_pad_scale": ("float", 1.0),
    "max_random_hue": ("int", 0),
    "random_hue_prob": ("float", 0.0),
    "max_random_saturation": ("int", 0),
    "random_saturation_prob": ("float", 0.0),
    "max_random_illumination": ("int", 0),
    "random_illumination_prob": ("float", 0.0),
    "max_random_contrast": ("float", 0.0),
    "random_contrast_prob": ("float", 0.0),
    "rand_mirror_prob": ("float", 0.0),
    "fill_value": ("int", 127),
    "inter_method": ("int", 1),
    "resize_mode": ("str", "force"),
}
_INTER_METHODS = (0, 1, 2, 3, 4, 9, 10)


def _rect_area(box):
    return max(box[2], 0.0) * max(box[3], 0.0)


def _intersection(a, b):
    """Area of the overlap of two (x, y, w, h) rectangles."""
    w = min(a[0] + a[2], b[0] + b[2]) - max(a[0], b[0])
    h = min(a[1] + a[3], b[1] + b[3]) - max(a[1], b[1])
    return w * h if w > 0 and h > 0 else 0.0


class DetLabel:
    """A flat detection label as its header and an (objects, width) float32 array."""

    def __init__(self, raw, where):
        raw = np.asarray(raw, np.float32)
        header_width = int(raw[0]) if raw.size else 0
        width = int(raw[1]) if raw.size > 1 else 0
        if raw.size < 7 or header_width < 2 or width < 5 or (raw.size - header_width) % width:
            raise ValueError(
                f"ImageDetRecordIter: {where}: label {raw.tolist()} is no detection label: "
                "expected [header_width >= 2, object_width >= 5, ..., objects of that width] "
                "with at least 7 values"
            )
        self.header = raw[:header_width]
        objects = raw[header_width:].reshape(-1, width)
        self.objects = objects[(objects[:, 3] > objects[:, 1]) & (objects[:, 4] > objects[:, 2])]

    def to_array(self):
        return np.concatenate([self.header, self.objects.ravel()])

    def project(self, box):
        """Re-express the boxes in the frame of (x, y, w, h) ``box``, clipped to [0, 1]."""
        objs = self.objects.copy()
        x, y, w, h = (np.float32(v) for v in box)
        objs[:, 1] = np.maximum(0.0, (objs[:, 1] - x) / w)
        objs[:, 2] = np.maximum(0.0, (objs[:, 2] - y) / h)
        objs[:, 3] = np.minimum(1.0, (objs[:, 3] - x) / w)
        objs[:, 4] = np.minimum(1.0, (objs[:, 4] - y) / h)
        return objs

    def try_crop(self, box, limits, emit_mode, emit_thresh):
        """Apply crop ``box`` when some object meets ``limits``; False (unchanged) otherwise."""
        if len(self.objects) == 0:
            return True
        if not any(self._meets(obj, box, limits) for obj in self.objects):
            return False
        keep = []
        for obj in self.objects:
            gt = (obj[1], obj[2], obj[3] - obj[1], obj[4] - obj[2])
            if emit_mode == "center":
                cx, cy = (obj[1] + obj[3]) * 0.5, (obj[2] + obj[4]) * 0.5
                keep.append(box[0] <= cx < box[0] + box[2] and box[1] <= cy < box[1] + box[3])
            else:
                keep.append(_intersection(box, gt) / _rect_area(gt) > emit_thresh)
        if not any(keep):
            return False
        projected = self.project(box)
        self.objects = projected[np.array(keep)]
        return True

    @staticmethod
    def _meets(obj, box, limits):
        lo_iou, hi_iou, lo_sample, hi_sample, lo_object, hi_object = limits
        gt = (obj[1], obj[2], obj[3] - obj[1], obj[4] - obj[2])
        inter = _intersection(box, gt)
        if lo_iou > 0 or hi_iou < 1:
            iou = inter / (_rect_area(box) + _rect_area(gt) - inter) if inter > 0 else 0.0
            if not lo_iou <= iou <= hi_iou:
                return False
        if (lo_sample > 0 or hi_sample < 1) and not lo_sample <= inter / _rect_area(
            box
        ) <= hi_sample:
            return False
        if (lo_object > 0 or hi_object < 1) and not lo_object <= inter / _rect_area(
            gt
        ) <= hi_object:
            return False
        return True


class DefaultDetAugmenter:
    """MXNet's ``det_aug_default`` for one output ``data_shape`` (C, H, W)."""

    def __init__(self, params, data_shape):
        self.p = params
        self.height, self.width = data_shape[1], data_shape[2]
        if params.inter_method not in _INTER_METHODS:
            raise ValueError(
                f"ImageDetRecordIter: invalid inter_method={params.inter_method}: valid values "
                "are 0, 1, 2, 3, 4, 9, 10"
            )
        if params.resize_mode not in ("force", "shrink", "fit"):
            raise ValueError(
                f"ImageDetRecordIter: resize_mode must be 'force', 'shrink' or 'fit', "
                f"got {params.resize_mode!r}"
            )
        if params.crop_emit_mode not in ("center", "overlap"):
            raise ValueError(
                f"ImageDetRecordIter: crop_emit_mode must be 'center' or 'overlap', "
                f"got {params.crop_emit_mode!r}"
            )
        self.samplers = self._samplers()
        self.needs_rng = bool(
            params.rand_crop_prob > 0 or params.rand_pad_prob > 0 or params.rand_mirror_prob > 0
            or params.inter_method == 10 or params.random_hue_prob > 0
            or params.random_saturation_prob > 0 or params.random_illumination_prob > 0
            or params.random_contrast_prob > 0
        )  # fmt: skip

    def _samplers(self):
        """One row per crop sampler: scales, aspect ratios, limits, trials."""
        p, count = self.p, self.p.num_crop_sampler
        columns = {}
        for name in [*_CROP_TUPLES, "max_crop_trials"]:
            values = list(getattr(p, name))
            if count > 1 and len(values) == 1:
                values *= count
            if count >= 1 and len(values) != count:
                raise ValueError(
                    f"ImageDetRecordIter: {name} has {len(values)} values for "
                    f"num_crop_sampler={count}: give 1 or {count}"
                )
            columns[name] = values
        rows = [{name: values[i] for name, values in columns.items()} for i in range(max(count, 0))]
        for row in rows:
            if not 0 <= row["min_crop_scales"] < row["max_crop_scales"] <= 1:
                raise ValueError(
                    f"ImageDetRecordIter: crop scales must satisfy 0 <= min < max <= 1, got "
                    f"({row['min_crop_scales']}, {row['max_crop_scales']})"
                )
        return rows

    def _inter(self, old_w, old_h, new_w, new_h, rng):
        method = self.p.inter_method
        if method == 9:
            if new_w > old_w and new_h > old_h:
                return 2
            return 3 if new_w < old_w and new_h < old_h else 1
        return int(rng.integers(0, 5)) if method == 10 else method

    def _resize(self, image, new_w, new_h, rng):
        rows, cols = image.shape[:2]
        method = self._inter(cols, rows, new_w, new_h, rng)
        out = _cv2().resize(image, (int(new_w), int(new_h)), interpolation=method)
        return out[:, :, None] if out.ndim == 2 else out

    def process(self, image, raw_label, where, rng):
        """``(augmented image, label vector)`` of a decoded image and its raw label."""
        p = self.p
        if p.resize != -1:
            rows, cols = image.shape[:2]
            if rows > cols:
                image = self._resize(image, p.resize, p.resize * rows // cols, rng)
            else:
                image = self._resize(image, p.resize * cols // rows, p.resize, rng)
        label = DetLabel(raw_label, where)
        if rng is not None:
            image = self._random_steps(image, label, rng)
        image = self._final_resize(image, rng)
        return image, label.to_array()

    def _random_steps(self, image, label, rng):
        p = self.p
        if (
            p.random_hue_prob > 0
            or p.random_saturation_prob > 0
            or (p.random_illumination_prob > 0 or p.random_contrast_prob > 0)
        ):
            image = self._color(image, rng)
        if p.rand_mirror_prob > 0 and rng.random() < p.rand_mirror_prob:
            objs = label.objects.copy()
            objs[:, 1], objs[:, 3] = 1.0 - label.objects[:, 3], 1.0 - label.objects[:, 1]
            label.objects = objs
            image = image[:, ::-1].copy()
        if p.rand_pad_prob > 0 and p.max_pad_scale > 1 and rng.random() < p.rand_pad_prob:
            image = self._pad(image, label, rng)
        if p.rand_crop_prob > 0 and self.samplers and rng.random() < p.rand_crop_prob:
            image = self._crop(image, label, rng)
        return image

    def _color(self, image, rng):
        p = self.p
        h, s, lum = (
            int(rng.uniform(-1, 1) * m)
            for m in (p.max_random_hue, p.max_random_saturation, p.max_random_illumination)
        )
        c = rng.uniform(-1, 1) * p.max_random_contrast
        h = h if rng.random() < p.random_hue_prob else 0
        s = s if rng.random() < p.random_saturation_prob else 0
        lum = lum if rng.random() < p.random_illumination_prob else 0
        c = c if rng.random() < p.random_contrast_prob else 0
        cv2 = _cv2()
        if h or s or lum:
            hls = cv2.cvtColor(image, cv2.COLOR_BGR2HLS).astype(np.int32)
            hls += np.array([h, lum, s], np.int32)
            hls = np.clip(hls, 0, np.array([180, 255, 255])).astype(np.uint8)
            image = cv2.cvtColor(hls, cv2.COLOR_HLS2BGR)
        if abs(c) > 1e-3:
            image = np.clip(np.rint(image * (c + 1.0)), 0, 255).astype(np.uint8)
        return image

    def _pad(self, image, label, rng):
        scale = rng.uniform(1.0, self.p.max_pad_scale)
        if scale < 1.05:
            return image
        x0, y0 = rng.uniform(0, scale - 1), rng.uniform(0, scale - 1)
        box = (-x0, -y0, scale, scale)
        label.objects = label.project(box)
        rows, cols = image.shape[:2]
        left, top = int(x0 * cols), int(y0 * rows)
        right, bottom = int((scale - x0 - 1) * cols), int((scale - y0 - 1) * rows)
        fill = (self.p.fill_value,) * 4
        out = _cv2().copyMakeBorder(image, top, bottom, left, right, 16, value=fill)
        return out[:, :, None] if out.ndim == 2 else out

    def _crop_box(self, sampler, rng, aspect):
        scale = rng.uniform(sampler["min_crop_scales"], sampler["max_crop_scales"]) + 1e-12
        low = max(sampler["min_crop_aspect_ratios"] / aspect, scale * scale)
        high = min(sampler["max_crop_aspect_ratios"] / aspect, 1.0 / (scale * scale))
        ratio = np.sqrt(rng.uniform(low, high))
        w, h = min(1.0, scale * ratio), min(1.0, scale / ratio)
        return (rng.uniform(0, 1 - w), rng.uniform(0, 1 - h), w, h)

    def _crop(self, image, label, rng):
        rows, cols = image.shape[:2]
        for index in rng.permutation(len(self.samplers)):
            sampler = self.samplers[index]
            limits = [
                sampler[f"{e}_crop_{k}"]
                for k in ("overlaps", "sample_coverages", "object_coverages")
                for e in ("min", "max")
            ]
            for _ in range(int(sampler["max_crop_trials"])):
                box = self._crop_box(sampler, rng, cols / rows)
                if label.try_crop(box, limits, self.p.crop_emit_mode, self.p.emit_overlap_thresh):
                    left, top = int(box[0] * cols), int(box[1] * rows)
                    return image[top : top + int(box[3] * rows), left : left + int(box[2] * cols)]
        return image

    def _final_resize(self, image, rng):
        mode, rows, cols = self.p.resize_mode, image.shape[0], image.shape[1]
        if mode == "force":
            return self._resize(image, self.width, self.height, rng)
        if mode == "shrink" and rows <= self.height and cols <= self.width:
            return image
        ratio = min(np.float32(self.height) / rows, np.float32(self.width) / cols)
        return self._resize(image, int(ratio * cols), int(ratio * rows), rng)
