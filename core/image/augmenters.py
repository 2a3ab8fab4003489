"""MXNet 1.9's image augmenters, the ``mx.image.*Aug`` classes.

``CreateAugmenter``, which builds MXNet's standard list of them, is in ``create``.

An augmenter is a callable from an HWC NDArray to an HWC NDArray. As in MXNet, the
colour augmenters expect float images (put ``CastAug`` first) and change their input
in place where MXNet's do; random choices come from Python's ``random`` and NumPy's
global ``np.random`` in MXNet's order, so a seeded program draws the same crops, flips
and jitter factors under rebind as under MXNet.
"""

import json
import random
import warnings

import numpy as np

from ..ndarray import NDArray
from ..ndarray import array as nd_array
from .image import (
    _get_interp_method,
    center_crop,
    color_normalize,
    imresize,
    random_crop,
    random_size_crop,
    resize_short,
)

__all__ = [
    "Augmenter",
    "BrightnessJitterAug",
    "CastAug",
    "CenterCropAug",
    "ColorJitterAug",
    "ColorNormalizeAug",
    "ContrastJitterAug",
    "ForceResizeAug",
    "HorizontalFlipAug",
    "HueJitterAug",
    "LightingAug",
    "RandomCropAug",
    "RandomGrayAug",
    "RandomOrderAug",
    "RandomSizedCropAug",
    "ResizeAug",
    "SaturationJitterAug",
    "SequentialAug",
]

_LUMA = (0.299, 0.587, 0.114)
_GRAY = ((0.21, 0.21, 0.21), (0.72, 0.72, 0.72), (0.07, 0.07, 0.07))
_YIQ = np.array([[0.299, 0.587, 0.114], [0.596, -0.274, -0.321], [0.211, -0.523, 0.311]])
_INV_YIQ = np.array([[1.0, 0.956, 0.621], [1.0, -0.272, -0.647], [1.0, -1.107, 1.705]])


def _const(src, values):
    """``values`` as a backend array of ``src``'s dtype on ``src``'s device."""
    return nd_array(np.asarray(values), ctx=src.context, dtype=src.dtype).data


def _like(src, data):
    return NDArray(data, src.context)


class Augmenter:
    """Base class of image augmenters; keeps its arguments for ``dumps``."""

    def __init__(self, **kwargs):
        self._kwargs = kwargs
        for key, value in self._kwargs.items():
            if isinstance(value, NDArray):
                value = value.asnumpy()
            if isinstance(value, np.ndarray):
                self._kwargs[key] = value.tolist()

    def dumps(self):
        """The augmenter as a JSON string: ``[class name in lower case, arguments]``."""
        return json.dumps([self.__class__.__name__.lower(), self._kwargs])

    def __call__(self, src):
        raise NotImplementedError("Must override implementation.")


class _ListAug(Augmenter):
    """An augmenter made of a list of others, ``ts``."""

    def __init__(self, ts):
        super().__init__()
        self.ts = ts

    def dumps(self):
        """``[name, [dumps of each augmenter]]`` (a list, not a string, as in MXNet)."""
        return [self.__class__.__name__.lower(), [t.dumps() for t in self.ts]]

    def _apply(self, src):
        for aug in self.ts:
            src = aug(src)
        return src


class SequentialAug(_ListAug):
    """Apply the augmenters ``ts`` one after another."""

    def __call__(self, src):
        return self._apply(src)


class RandomOrderAug(_ListAug):
    """Apply the augmenters ``ts`` in a random order (``ts`` is shuffled in place)."""

    def __call__(self, src):
        random.shuffle(self.ts)
        return self._apply(src)


class ResizeAug(Augmenter):
    """Resize the shorter edge to ``size``."""

    def __init__(self, size, interp=2):
        super().__init__(size=size, interp=interp)
        self.size = size
        self.interp = interp

    def __call__(self, src):
        return resize_short(src, self.size, self.interp)


class ForceResizeAug(Augmenter):
    """Resize to ``size`` (w, h), ignoring the aspect ratio."""

    def __init__(self, size, interp=2):
        super().__init__(size=size, interp=interp)
        self.size = size
        self.interp = interp

    def __call__(self, src):
        sizes = (src.shape[0], src.shape[1], self.size[1], self.size[0])
        return imresize(src, *self.size, interp=_get_interp_method(self.interp, sizes))


class RandomCropAug(Augmenter):
    """Crop a random ``size`` (w, h) region."""

    def __init__(self, size, interp=2):
        super().__init__(size=size, interp=interp)
        self.size = size
        self.interp = interp

    def __call__(self, src):
        return random_crop(src, self.size, self.interp)[0]


class RandomSizedCropAug(Augmenter):
    """Crop a region of random area and aspect ratio, resized to ``size`` (w, h)."""

    def __init__(self, size, area, ratio, interp=2, **kwargs):
        super().__init__(size=size, area=area, ratio=ratio, interp=interp)
        self.size = size
        if "min_area" in kwargs:
            warnings.warn(
                "`min_area` is deprecated. Please use `area` instead.", DeprecationWarning, 2
            )
            area = kwargs.pop("min_area")
        if kwargs:
            raise TypeError(f"RandomSizedCropAug: unexpected keyword arguments {sorted(kwargs)}")
        self.area = area
        self.ratio = ratio
        self.interp = interp

    def __call__(self, src):
        return random_size_crop(src, self.size, self.area, self.ratio, self.interp)[0]


class CenterCropAug(Augmenter):
    """Crop the central ``size`` (w, h) region."""

    def __init__(self, size, interp=2):
        super().__init__(size=size, interp=interp)
        self.size = size
        self.interp = interp

    def __call__(self, src):
        return center_crop(src, self.size, self.interp)[0]


class BrightnessJitterAug(Augmenter):
    """Scale all values by 1 + u, u uniform in [-brightness, brightness] (in place)."""

    def __init__(self, brightness):
        super().__init__(brightness=brightness)
        self.brightness = brightness

    def __call__(self, src):
        alpha = 1.0 + random.uniform(-self.brightness, self.brightness)
        src *= alpha
        return src


class ContrastJitterAug(Augmenter):
    """Blend with the mean luma by a random factor in [1 - contrast, 1 + contrast]."""

    def __init__(self, contrast):
        super().__init__(contrast=contrast)
        self.contrast = contrast
        self.coef = nd_array([[_LUMA]])

    def __call__(self, src):
        alpha = 1.0 + random.uniform(-self.contrast, self.contrast)
        xp = src.context.backend.xp
        luma = xp.sum(src.data * _const(src, _LUMA), dtype=src.data.dtype)
        shift = src.dtype(3.0 * (1.0 - alpha) / src.size) * luma
        src *= alpha
        src += float(shift)
        return src


class SaturationJitterAug(Augmenter):
    """Blend with the per-pixel luma by a random factor in [1 - s, 1 + s] (in place)."""

    def __init__(self, saturation):
        super().__init__(saturation=saturation)
        self.saturation = saturation
        self.coef = nd_array([[_LUMA]])

    def __call__(self, src):
        alpha = 1.0 + random.uniform(-self.saturation, self.saturation)
        xp = src.context.backend.xp
        gray = _like(src, xp.sum(src.data * _const(src, _LUMA), axis=2, keepdims=True))
        gray *= 1.0 - alpha
        src *= alpha
        src += gray
        return src


class HueJitterAug(Augmenter):
    """Rotate the hue by a random angle in [-hue, hue] * pi (linear YIQ approximation)."""

    def __init__(self, hue):
        super().__init__(hue=hue)
        self.hue = hue
        self.tyiq = _YIQ
        self.ityiq = _INV_YIQ

    def __call__(self, src):
        alpha = random.uniform(-self.hue, self.hue)
        u, w = np.cos(alpha * np.pi), np.sin(alpha * np.pi)
        rotation = np.array([[1.0, 0.0, 0.0], [0.0, u, -w], [0.0, w, u]])
        t = np.dot(np.dot(self.ityiq, rotation), self.tyiq).T
        return _like(src, src.data @ _const(src, t))


class ColorJitterAug(RandomOrderAug):
    """Brightness, contrast and saturation jitter (those > 0) in a random order."""

    def __init__(self, brightness, contrast, saturation):
        ts = []
        if brightness > 0:
            ts.append(BrightnessJitterAug(brightness))
        if contrast > 0:
            ts.append(ContrastJitterAug(contrast))
        if saturation > 0:
            ts.append(SaturationJitterAug(saturation))
        super().__init__(ts)


class LightingAug(Augmenter):
    """Add AlexNet-style PCA colour noise of level ``alphastd`` (in place)."""

    def __init__(self, alphastd, eigval, eigvec):
        super().__init__(alphastd=alphastd, eigval=eigval, eigvec=eigvec)
        self.alphastd = alphastd
        self.eigval = eigval
        self.eigvec = eigvec

    def __call__(self, src):
        alpha = np.random.normal(0, self.alphastd, size=(3,))
        rgb = np.dot(self.eigvec * alpha, self.eigval)
        src += rgb.astype(np.float32)
        return src


class ColorNormalizeAug(Augmenter):
    """Subtract ``mean`` and divide by ``std`` per channel (in place)."""

    def __init__(self, mean, std):
        super().__init__(mean=mean, std=std)
        self.mean = mean if mean is None or isinstance(mean, NDArray) else nd_array(mean)
        self.std = std if std is None or isinstance(std, NDArray) else nd_array(std)

    def __call__(self, src):
        mean, std = self.mean, self.std
        if mean is not None and mean.context != src.context:
            mean = mean.as_in_context(src.context)
        if std is not None and std.context != src.context:
            std = std.as_in_context(src.context)
        return color_normalize(src, mean, std)


class RandomGrayAug(Augmenter):
    """With probability ``p``, replace every channel by a gray level (3 channels kept)."""

    def __init__(self, p):
        super().__init__(p=p)
        self.p = p
        self.mat = nd_array(_GRAY)

    def __call__(self, src):
        if random.random() < self.p:
            src = _like(src, src.data @ _const(src, _GRAY))
        return src


class HorizontalFlipAug(Augmenter):
    """With probability ``p``, mirror the image left to right."""

    def __init__(self, p):
        super().__init__(p=p)
        self.p = p

    def __call__(self, src):
        if random.random() < self.p:
            xp = src.context.backend.xp
            src = _like(src, xp.ascontiguousarray(xp.flip(src.data, axis=1)))
        return src


class CastAug(Augmenter):
    """Convert to ``typ`` (float32 by default)."""

    def __init__(self, typ="float32"):
        super().__init__(type=typ)
        self.typ = typ

    def __call__(self, src):
        return src.astype(self.typ)
