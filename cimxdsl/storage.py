"""The `.cimx` format of a saved `CompiledModel` (`cimxdsl.models` writes and reads models through
it): a zip of `manifest.json` (format version, device, options, notes, stage names, input and output
names), the IR of every stage as text (`STAGE.mlir`), the calibration inputs (`calibration.npz`,
which a static ADC range is calibrated on) and the static ADC spans recorded on them
(`adc_spans.npz`, arrays by name). No pickle."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

import numpy as np

FORMAT_VERSION = 1


class ModelFileError(ValueError):
    """A file that is not a readable `.cimx` model."""


def write(
    path: str | Path,
    manifest: dict,
    stages: dict[str, str],
    calibration: list | None,
    adc_spans: dict[str, np.ndarray] | None = None,
) -> None:
    """Write the `.cimx` file `path`: the `manifest` (format and version added), each stage's IR text,
    the calibration samples and the named static ADC spans (if any)."""
    manifest = {"format": "cimxdsl-compiled-model", "version": FORMAT_VERSION, **manifest, "stages": list(stages)}
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("manifest.json", json.dumps(manifest, indent=2))
        for stage, text in stages.items():
            archive.writestr(f"{stage}.mlir", text)
        if calibration is not None:
            archive.writestr("calibration.npz", calibration_bytes(calibration))
        if adc_spans:
            buffer = io.BytesIO()
            np.savez(buffer, **adc_spans)
            archive.writestr("adc_spans.npz", buffer.getvalue())


def read(path: str | Path) -> tuple[dict, dict[str, str], list | None, dict[str, np.ndarray]]:
    """The manifest, the stages' IR texts, the calibration samples and the named static ADC spans
    of a file `write` wrote."""
    try:
        with zipfile.ZipFile(path) as archive:
            manifest = json.loads(archive.read("manifest.json"))
            if manifest.get("format") != "cimxdsl-compiled-model":
                raise ModelFileError(f"'{path}' is not a compiled cimxdsl model")
            if manifest.get("version") != FORMAT_VERSION:
                raise ModelFileError(
                    f"'{path}' has format version {manifest.get('version')}, expected {FORMAT_VERSION}"
                )
            stages = {stage: archive.read(f"{stage}.mlir").decode() for stage in manifest["stages"]}
            calibration = archive.read("calibration.npz") if "calibration.npz" in archive.namelist() else None
            spans = archive.read("adc_spans.npz") if "adc_spans.npz" in archive.namelist() else None
    except (OSError, zipfile.BadZipFile, KeyError, json.JSONDecodeError) as e:
        raise ModelFileError(f"cannot read compiled model '{path}': {e}") from None
    if spans is not None:
        with np.load(io.BytesIO(spans), allow_pickle=False) as arrays:
            spans = {name: arrays[name] for name in arrays.files}
    return manifest, stages, None if calibration is None else calibration_from_bytes(calibration), spans or {}


def calibration_bytes(samples: list) -> bytes:
    """Calibration samples (each a list of input arrays) as the bytes of an `.npz` file."""
    buffer = io.BytesIO()
    np.savez(buffer, **{f"sample{i}_input{j}": x for i, sample in enumerate(samples) for j, x in enumerate(sample)})
    return buffer.getvalue()


def calibration_from_bytes(data: bytes) -> list:
    """The samples `calibration_bytes` wrote, in order."""
    with np.load(io.BytesIO(data), allow_pickle=False) as arrays:
        keys = sorted(arrays.files, key=lambda k: tuple(int(n) for n in k.removeprefix("sample").split("_input")))
        samples: dict[int, list] = {}
        for key in keys:
            samples.setdefault(int(key.removeprefix("sample").split("_input")[0]), []).append(arrays[key])
    return [samples[i] for i in sorted(samples)]
