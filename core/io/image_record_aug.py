"""ImageRecordIter's augmentation and normalisation, step for step as MXNet 1.9.1's C++ does it.

``DefaultAugmenter`` follows ``DefaultImageAugmenter::Process``
(src/io/image_aug_default.cc): resize of the shorter edge, an affine warp for
rotation / shear / random scale and aspect ratio, padding, one of the three
crops (random resized, fixed crop size, or the data_shape crop: centred unless
``rand_crop``), then brightness / contrast / saturation in random order, HSL
jitter and PCA lighting noise. Images are OpenCV's BGR (or gray / BGRA)
uint8 arrays throughout. ``Normalizer`` follows ``ProcessImage``
(src/io/iter_image_recordio_2.cc): RGB(A) channel order, CHW layout,
``(pixel - mean) * scale / std`` in float32, and the mirror.

Without random parameters every step is deterministic and matches MXNet
(checked against recorded batches). Random draws come from a NumPy generator
per image, seeded from ``seed_aug`` (else ``seed``) and the image's place in the
stream: reproducible, but not MXNet's draws.
"""

import math

import numpy as np

from .image_record_workers import _cv2

__all__ = ["AUGMENT_FIELDS", "NORMALIZE_FIELDS", "DefaultAugmenter", "Normalizer"]

# name -> (kind, default), MXNet's DefaultImageAugmentParam
AUGMENT_FIELDS = {
    "resize": ("int", -1),
    "rand_crop": ("bool", False),
    "random_resized_crop": ("bool", False),
    "max_rotate_angle": ("int", 0),
    "max_aspect_ratio": ("float", 0.0),
    "min_aspect_ratio": ("float", None),
    "max_shear_ratio": ("float", 0.0),
    "max_crop_size": ("int", -1),
    "min_crop_size": ("int", -1),
    "max_random_scale": ("float", 1.0),
    "min_random_scale": ("float", 1.0),
    "max_random_area": ("float", 1.0),
    "min_random_area": ("float", 1.0),
    "max_img_size": ("float", 1e10),
    "min_img_size": ("float", 0.0),
    "brightness": ("float", 0.0),
    "contrast": ("float", 0.0),
    "saturation": ("float", 0.0),
    "pca_noise": ("float", 0.0),
    "random_h": ("int", 0),
    "random_s": ("int", 0),
    "random_l": ("int", 0),
    "rotate": ("int", -1),
    "rotate_list": ("str", ""),
    "fill_value": ("int", 255),
    "inter_method": ("int", 1),
    "pad": ("int", 0),
}
# MXNet's ImageNormalizeParam (seed is the iterator's)
NORMALIZE_FIELDS = {
    "mirror": ("bool", False),
    "rand_mirror": ("bool", False),
    "mean_img": ("str", ""),
    **{f"mean_{c}": ("float", 0.0) for c in "rgba"},
    **{f"std_{c}": ("float", 1.0) for c in "rgba"},
    "scale": ("float", 1.0),
    "max_random_contrast": ("float", 0.0),
    "max_random_illumination": ("float", 0.0),
}
_INTER_METHODS = (0, 1, 2, 3, 4, 9, 10)
# AlexNet's PCA lighting: eigenvalue-scaled eigenvectors of ImageNet's RGB covariance
_EIGVEC = np.array(
    [
        [55.46 * -0.5675, 4.794 * 0.7192, 1.148 * 0.4009],
        [55.46 * -0.5808, 4.794 * -0.0045, 1.148 * -0.8140],
        [55.46 * -0.5836, 4.794 * -0.6948, 1.148 * 0.4203],
    ],
    np.float32,
)


class DefaultAugmenter:
    """MXNet's default image augmenter for one output ``data_shape`` (C, H, W)."""

    def __init__(self, params, data_shape):
        self.p = params
        self.height, self.width = data_shape[1], data_shape[2]
        if params.inter_method not in _INTER_METHODS:
            raise ValueError(
                f"ImageRecordIter: invalid inter_method={params.inter_method}: valid values "
                "are 0 (nearest), 1 (bilinear), 2 (cubic), 3 (area), 4 (lanczos4), 9 (auto), "
                "10 (random)"
            )
        self.rotate_list = [int(v) for v in params.rotate_list.split(",") if v.strip()]
        if params.min_aspect_ratio is None:
            self.aspect = (1 - params.max_aspect_ratio, 1 + params.max_aspect_ratio)
        else:
            self.aspect = (params.min_aspect_ratio, params.max_aspect_ratio)
        self.warps = self._warps()
        self.needs_rng = self.warps or self._random_crops() or self._random_colors()

    def _warps(self):
        p = self.p
        return bool(
            p.max_rotate_angle > 0
            or p.max_shear_ratio > 0
            or p.rotate > 0
            or self.rotate_list
            or p.max_random_scale != 1
            or p.min_random_scale != 1
            or (not p.random_resized_crop and self.aspect != (1, 1))
            or p.max_img_size != 1e10
            or p.min_img_size != 0
        )

    def _random_crops(self):
        p = self.p
        return bool(p.rand_crop or p.random_resized_crop or p.inter_method == 10)

    def _random_colors(self):
        p = self.p
        return bool(
            p.brightness
            or p.contrast
            or p.saturation
            or p.pca_noise
            or p.random_h
            or p.random_s
            or p.random_l
        )

    def _inter(self, old_w, old_h, new_w, new_h, rng):
        method = self.p.inter_method
        if method == 9:
            if new_w > old_w and new_h > old_h:
                return 2
            return 3 if new_w < old_w and new_h < old_h else 1
        if method == 10:
            return int(rng.integers(0, 5))
        return method

    def process(self, image, rng):
        """The augmented image (uint8, HWC, still BGR) of the decoded ``image``."""
        image = self._resize_short(image, rng)
        if self.warps:
            image = self._affine(image, rng)
        if self.p.pad > 0:
            image = _keep_channels(self._border(image, self.p.pad), image)
        image = self._crop(image, rng)
        if self.p.brightness > 0 or self.p.contrast > 0 or self.p.saturation > 0:
            image = self._color_jitter(image, rng)
        if self.p.random_h or self.p.random_s or self.p.random_l:
            image = self._hsl_jitter(image, rng)
        if self.p.pca_noise > 0:
            image = self._pca_noise(image, rng)
        return image

    def _resize(self, image, width, height, method):
        return _keep_channels(
            _cv2().resize(image, (int(width), int(height)), interpolation=method), image
        )

    def _border(self, image, pad):
        fill = (self.p.fill_value,) * 4
        return _cv2().copyMakeBorder(image, pad, pad, pad, pad, _cv2().BORDER_CONSTANT, value=fill)

    def _resize_short(self, image, rng):
        size = self.p.resize
        if size == -1:
            return image
        rows, cols = image.shape[:2]
        if rows > cols:
            new_h, new_w = size * rows // cols, size
        else:
            new_h, new_w = size, size * cols // rows
        return self._resize(image, new_w, new_h, self._inter(cols, rows, new_w, new_h, rng))

    def _affine(self, image, rng):
        p = self.p
        shear = rng.random() * p.max_shear_ratio * 2 - p.max_shear_ratio
        angle = int(rng.integers(-p.max_rotate_angle, p.max_rotate_angle + 1))
        if p.rotate > 0:
            angle = p.rotate
        if self.rotate_list:
            angle = self.rotate_list[int(rng.integers(0, len(self.rotate_list)))]
        cos, sin = math.cos(math.radians(angle)), math.sin(math.radians(angle))
        scale = ratio = 1.0
        if not p.random_resized_crop:
            scale = rng.random() * (p.max_random_scale - p.min_random_scale) + p.min_random_scale
            ratio = rng.random() * (self.aspect[1] - self.aspect[0]) + self.aspect[0]
        hs = 2 * scale / (1 + ratio)
        ws = ratio * hs
        rows, cols = image.shape[:2]
        new_w = max(p.min_img_size, min(p.max_img_size, scale * cols))
        new_h = max(p.min_img_size, min(p.max_img_size, scale * rows))
        top = [hs * cos - shear * sin * ws, hs * sin + shear * cos * ws, 0]
        m = np.array([top, [-sin * ws, cos * ws, 0]], np.float32)
        m[0, 2] = (new_w - (m[0, 0] * cols + m[0, 1] * rows)) / 2
        m[1, 2] = (new_h - (m[1, 0] * cols + m[1, 1] * rows)) / 2
        method = self._inter(cols, rows, new_w, new_h, rng)
        fill = (self.p.fill_value,) * 4
        warped = _cv2().warpAffine(
            image,
            m,
            (int(new_w), int(new_h)),
            flags=method,
            borderMode=_cv2().BORDER_CONSTANT,
            borderValue=fill,
        )
        return _keep_channels(warped, image)

    def _crop(self, image, rng):
        p = self.p
        if p.random_resized_crop:
            cropped = self._random_resized_crop(image, rng)
            if cropped is not None:
                return cropped
        elif p.max_crop_size != -1 or p.min_crop_size != -1:
            return self._sized_crop(image, rng)
        return self._shape_crop(image, rng)

    def _random_resized_crop(self, image, rng):
        p = self.p
        if (
            p.rand_crop
            or p.min_random_scale != 1
            or p.max_random_scale != 1
            or (p.min_crop_size != -1 or p.max_crop_size != -1)
        ):
            raise ValueError(
                "ImageRecordIter: random_resized_crop=True conflicts with min_random_scale, "
                "max_random_scale, min_crop_size, max_crop_size and rand_crop"
            )
        if (p.min_random_area, p.max_random_area) == (1, 1) and self.aspect == (1, 1):
            return None
        if not 0 < self.aspect[0] <= self.aspect[1] or p.min_random_area > p.max_random_area:
            raise ValueError(
                "ImageRecordIter: random_resized_crop needs 0 < min_aspect_ratio <= "
                "max_aspect_ratio and min_random_area <= max_random_area"
            )
        rows, cols = image.shape[:2]
        for _ in range(10):
            target = rows * cols * rng.uniform(p.min_random_area, p.max_random_area)
            ratio = rng.uniform(*self.aspect)
            h, w = round(math.sqrt(target / ratio)), round(math.sqrt(target * ratio))
            if rng.random() > 0.5:
                h, w = w, h
            if h <= rows and w <= cols:
                y, x = int(rng.integers(0, rows - h + 1)), int(rng.integers(0, cols - w + 1))
                method = self._inter(w, h, self.width, self.height, rng)
                return self._resize(image[y : y + h, x : x + w], self.width, self.height, method)
        return None

    def _sized_crop(self, image, rng):
        p = self.p
        rows, cols = image.shape[:2]
        if not (
            cols >= p.max_crop_size
            and rows >= p.max_crop_size
            and p.max_crop_size >= p.min_crop_size
        ):
            raise ValueError(
                f"ImageRecordIter: an image of {rows}x{cols} is smaller than "
                f"max_crop_size={p.max_crop_size} (or max_crop_size < min_crop_size)"
            )
        size = p.min_crop_size
        if p.max_crop_size != p.min_crop_size:
            size = int(rng.integers(p.min_crop_size, p.max_crop_size + 1))
        y, x = self._corner(rows - size, cols - size, rng)
        method = self._inter(size, size, self.width, self.height, rng)
        return self._resize(image[y : y + size, x : x + size], self.width, self.height, method)

    def _corner(self, spare_y, spare_x, rng):
        if self.p.rand_crop:
            return int(rng.integers(0, spare_y + 1)), int(rng.integers(0, spare_x + 1))
        return spare_y // 2, spare_x // 2

    def _shape_crop(self, image, rng):
        rows, cols = image.shape[:2]
        method = self._inter(cols, rows, self.width, self.height, rng)
        f32 = np.float32
        if rows < self.height:
            new_cols = int(f32(self.height) / f32(rows) * f32(cols))
            image = self._resize(image, new_cols, self.height, method)
            rows, cols = image.shape[:2]
        if cols < self.width:
            new_rows = int(f32(self.width) / f32(cols) * f32(rows))
            image = self._resize(image, self.width, new_rows, method)
            rows, cols = image.shape[:2]
        if rows < self.height or cols < self.width:
            raise ValueError(
                f"ImageRecordIter: image of {rows}x{cols} is smaller than data_shape's "
                f"{self.height}x{self.width} after resizing"
            )
        y, x = self._corner(rows - self.height, cols - self.width, rng)
        return image[y : y + self.height, x : x + self.width]

    def _color_jitter(self, image, rng):
        cv2 = _cv2()
        p = self.p
        alphas = [
            1.0 + rng.uniform(-v, v) if v > 0 else 1.0
            for v in (p.brightness, p.contrast, p.saturation)
        ]
        work = image.astype(np.float32)
        for step in rng.permutation(3):
            if step == 0:
                work = _saturate(work * alphas[0])
            elif step == 1:
                # MXNet converts its BGR pixels with RGB2GRAY; kept for the same weights
                gray = cv2.cvtColor(work.astype(np.uint8), cv2.COLOR_RGB2GRAY)
                work = _saturate(work * alphas[1] + (1 - alphas[1]) * float(gray.mean()))
            else:
                gray = cv2.cvtColor(work.astype(np.uint8), cv2.COLOR_RGB2GRAY)
                gray = gray[:, :, None].astype(np.float32)
                work = _saturate(work * alphas[2] + gray * (1 - alphas[2]))
        return work.astype(np.uint8)

    def _hsl_jitter(self, image, rng):
        cv2 = _cv2()
        p = self.p
        draws = [(rng.random() + 4 * rng.random()) / 5 for _ in range(3)]
        shift = [
            int(d * v * 2 - v)
            for d, v in zip(draws, (p.random_h, p.random_s, p.random_l), strict=True)
        ]
        hls = cv2.cvtColor(image, cv2.COLOR_BGR2HLS).astype(np.int32)
        hls += np.array([shift[0], shift[2], shift[1]], np.int32)
        hls = np.clip(hls, 0, np.array([180, 255, 255])).astype(np.uint8)
        return cv2.cvtColor(hls, cv2.COLOR_HLS2BGR)

    def _pca_noise(self, image, rng):
        alpha = rng.normal(0, self.p.pca_noise, size=3).astype(np.float32)
        rgb = _EIGVEC @ alpha
        shifted = np.trunc(image.astype(np.float32) + rgb[::-1])
        return np.clip(shifted, 0, 255).astype(np.uint8)


def _saturate(values):
    return np.clip(np.rint(values), 0, 255)


def _keep_channels(result, source):
    """OpenCV drops the channel axis of one-channel images; put it back."""
    return result[:, :, None] if result.ndim == 2 and source.ndim == 3 else result


class Normalizer:
    """Write an augmented BGR image into one CHW row of the batch (MXNet's ProcessImage)."""

    def __init__(self, params, dtype, channels, mean_image=None):
        self.p = params
        self.dtype = np.dtype(dtype)
        self.channels = channels
        self.mean_image = mean_image
        self.order = [2, 1, 0, 3][:channels] if channels > 1 else [0]
        self.mean = np.array([getattr(params, f"mean_{c}") for c in "rgba"][:channels], np.float32)
        self.std = np.array([getattr(params, f"std_{c}") for c in "rgba"][:channels], np.float32)
        self.needs_rng = bool(
            params.rand_mirror or params.max_random_contrast or params.max_random_illumination
        )

    def write(self, image, out, rng):
        """Fill ``out`` (C, H, W) from ``image`` (H, W, C), mirrored when asked."""
        p = self.p
        mirrored = bool(p.mirror or (p.rand_mirror and rng.random() < 0.5))
        pixels = image[:, :, self.order].transpose(2, 0, 1)
        if self.dtype == np.uint8:
            out[...] = pixels[:, :, ::-1] if mirrored else pixels
            return
        mean = self._mean()
        if self.dtype == np.int8:
            # std::round: halves away from zero
            rounded = (np.sign(mean) * np.floor(np.abs(mean) + 0.5)).astype(np.int16)
            shifted = np.clip(pixels.astype(np.int16) - rounded, -128, 127)
            out[...] = shifted[:, :, ::-1] if mirrored else shifted
            return
        contrast, illumination = self._lighting(rng)
        mult = np.float32(contrast) / self.std
        bias = np.float32(illumination) / self.std
        values = (pixels.astype(np.float32) - mean) * mult[:, None, None]
        if illumination:
            values += bias[:, None, None]
        out[...] = values[:, :, ::-1] if mirrored else values

    def _mean(self):
        if self.mean_image is not None:
            return self.mean_image
        return self.mean[:, None, None]

    def _lighting(self, rng):
        p = self.p
        f32 = np.float32
        contrast, illumination = f32(p.scale), f32(0)
        if p.max_random_contrast or p.max_random_illumination:
            c, i = f32(p.max_random_contrast), f32(p.max_random_illumination)
            contrast = (f32(rng.random()) * c * 2 - c + 1) * f32(p.scale)
            illumination = (f32(rng.random()) * i * 2 - i) * f32(p.scale)
        return contrast, illumination
