"""The compile flows, each in one call: an ONNX model imported (`source`, `calibration`), the passes of
a named pipeline of `cimxdsl.transforms` run in order, then what the back end (`cimxdsl.backend`)
reads from their IR. `memristor`: `compile_memristor` (the `memristor` pipeline, a `CompiledModel`);
`pim`: `compile_pim` and `compile_to_pim` (the `pim` pipeline, a `PimModel`)."""
