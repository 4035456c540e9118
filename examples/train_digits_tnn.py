"""Train a ternary neural network (TNN) on scikit-learn's 8x8 `digits` and export it as ONNX.

The network of `train_digits_bnn.py` with ternary weights (-1, 0, +1: 0 where |w| <= 0.7 · the
layer's mean |w|, exported as `Where(Abs(W) > Δ, Sign(W), 0)`) and ternary activations
(`Round(Clip(x, -1, 1))`), trained with the straight-through estimator.

    python examples/train_digits_tnn.py
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from train_digits_bnn import main

if __name__ == "__main__":
    main(ternary=True)
