"""Frontends: ONNX (and PyTorch through ONNX) to standard MLIR, and post-training quantization."""
