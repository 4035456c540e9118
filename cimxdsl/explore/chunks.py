"""A data set larger than one batch: evaluated in chunks of `batch_size` inputs, in one process or
sharded across workers, with the same results whatever the sharding. In int8 mode the outputs are
also bitwise those of one batch (the quantization does not depend on the batch compiled for, and
the products are of integers, exact in any order); in exact mode a chunk's float products agree
with one batch's within float rounding (`cimxdsl.device.threads`).

The program is compiled for the chunk batch (and once more for a smaller last chunk). The chunks
run one after another on one device, which keeps the weights it programmed (`Device.start_chunk`
restarts its noise streams per chunk, so a chunk gives the same outputs wherever it runs). A shard
that does not begin with the first chunk first programs its device with a run whose results are
dropped, so that its chunks are counted as those of one process: the metrics of a data set are the
sums over its chunks (latency too: the chunks run one after another), whatever the sharding.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import NamedTuple

import numpy as np

from cimxdsl.device import Device, DeviceConfig
from cimxdsl.device.backend import ArrayBackend, array_backend


class Chunk(NamedTuple):
    """Inputs [start, stop) of the data set, its chunk `index`."""

    index: int
    start: int
    stop: int


def chunk_bounds(count: int, batch_size: int | None) -> list[Chunk]:
    """The chunks of `count` inputs: `batch_size` each, the last one possibly smaller (None: one
    chunk of all)."""
    if batch_size is not None and (not isinstance(batch_size, int) or batch_size < 1):
        raise ValueError(f"batch_size must be a positive integer, got {batch_size!r}")
    size = count if batch_size is None else min(batch_size, count)
    starts = range(0, count, max(size, 1))
    return [Chunk(i, start, min(start + size, count)) for i, start in enumerate(starts)]


def shards(chunks: Sequence[Chunk], parts: int) -> list[list[Chunk]]:
    """`chunks` split into at most `parts` contiguous runs of nearly equal length."""
    parts = max(1, min(parts, len(chunks)))
    edges = np.linspace(0, len(chunks), parts + 1).round().astype(int)
    return [list(chunks[a:b]) for a, b in pairwise(edges)]


@dataclass
class ChunksResult:
    """Outputs of some consecutive chunks (concatenated along the batch) and their reports."""

    outputs: list[np.ndarray]
    reports: list[dict]
    """The device report (`per_crossbar=False`) of each chunk."""

    @property
    def report(self) -> dict:
        """The chunks' reports summed (in chunk order, so that a sum does not depend on the shards)."""
        return sum_reports(self.reports)


def run_chunks(
    program: Callable[[int], object],
    inputs: np.ndarray,
    config: DeviceConfig,
    chunks: Sequence[Chunk],
    backend: ArrayBackend | None = None,
) -> ChunksResult:
    """Run `chunks` of `inputs` on one device of `config`; `program(batch)` is the compiled model
    (`CompiledModel`) for `batch` inputs. `backend`: the array backend its products run on (None:
    the compiled model's)."""
    if backend is None:
        first = program(chunks[0].stop - chunks[0].start)
        backend = array_backend(first.backend, first.array_device)
    device = Device(config, backend=backend)
    if chunks[0].index:  # program the weights as the chunks before would have
        run_chunk(program, inputs, device, chunks[0])
    outputs, reports = [], []
    for chunk in chunks:
        run = run_chunk(program, inputs, device, chunk)
        outputs.append(run.outputs)
        reports.append({**device.report(per_crossbar=False), "crossbars_used": device.crossbars_used()})
    return ChunksResult([np.concatenate(parts) for parts in zip(*outputs, strict=True)], reports)


def run_chunk(program: Callable[[int], object], inputs: np.ndarray, device: Device, chunk: Chunk):
    device.start_chunk(chunk.index)
    device.reset_metrics()
    return program(chunk.stop - chunk.start).run(inputs[chunk.start : chunk.stop], device=device)


def merge(results: Sequence[ChunksResult]) -> ChunksResult:
    """The result of consecutive runs of chunks, in order."""
    outputs = [np.concatenate(parts) for parts in zip(*(r.outputs for r in results), strict=True)]
    return ChunksResult(outputs, [report for r in results for report in r.reports])


def sum_reports(reports: Sequence[dict]) -> dict:
    """Device reports (`per_crossbar=False`) of runs one after another: every count, busy time,
    energy and the latency summed (and the most crossbars any of them used)."""
    first = reports[0]
    total = {key: sum(r["total"][key] for r in reports) for key in first["total"] if key != "energy_pj"}
    energy = {c: sum(r["total"]["energy_pj"][c] for r in reports) for c in first["total"]["energy_pj"]}
    latency = {key: sum(r[key] for r in reports) for key in ("latency_ns", "latency_cycles")}
    used = {"crossbars_used": max(r["crossbars_used"] for r in reports)} if "crossbars_used" in first else {}
    return {**first, **latency, **used, "total": {**total, "energy_pj": energy}}
