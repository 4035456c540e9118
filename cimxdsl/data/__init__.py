"""The bundled demo: a small CNN trained on scikit-learn's 8x8 `digits` and its data splits
(`examples/train_digits_cnn.py` rebuilds them), shipped as package data."""

from importlib.resources import files
from pathlib import Path


def bundled(name: str) -> Path:
    """The path of a bundled file (installed packages are directories, so it is a real file)."""
    return Path(str(files(__name__).joinpath(name)))


DIGITS_MODEL = bundled("digits_cnn.onnx")
DIGITS_TEST = bundled("digits_test.npz")
"""360 held-out images (`inputs`, `labels`) and, as `calibration`, 64 training images."""
DIGITS_TRAIN = bundled("digits_train.npz")
"""300 training images (`inputs`, `labels`) and the same 64 as `calibration`."""
