"""MXNet 1.9.1's recorded mx.image results (tests/recording/record_image.py)."""

import json
from functools import cache
from pathlib import Path

import numpy as np

DATA = Path(__file__).parent / "data"


@cache
def arrays():
    with np.load(DATA / "mxnet_image.npz") as npz:
        return {key: npz[key] for key in npz.files}


@cache
def meta():
    return json.loads((DATA / "mxnet_image.json").read_text())


def encoded(name):
    """The bytes of one recorded encoded image ('color_png', 'gray_jpg', ...)."""
    return arrays()[f"bytes.{name}"].tobytes()


def encoded_all():
    return {
        key[len("bytes.") :]: value.tobytes()
        for key, value in arrays().items()
        if key.startswith("bytes.")
    }
