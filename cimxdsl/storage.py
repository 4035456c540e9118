"""The `.cimx` format of a saved `CompiledModel`: a zip of `manifest.json` (format version, device,
options, notes, stage names, input and output names), the IR of every stage as text (`STAGE.mlir`)
and the calibration inputs (`calibration.npz`, which a static ADC range is calibrated on). No pickle."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

import numpy as np

from cimxdsl.device import DeviceConfig
from cimxdsl.models import CompiledModel, CompileError

FORMAT_VERSION = 1


def save(model: CompiledModel, path: str | Path) -> None:
    """Write `model` to the `.cimx` file `path`."""
    manifest = {
        "format": "cimxdsl-compiled-model",
        "version": FORMAT_VERSION,
        "device": model.device.to_dict(),
        "options": model.options,
        "notes": model.notes,
        "stages": list(model.stages),
        "name": model.name,
        "input_names": model.input_names,
        "output_names": model.output_names,
    }
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("manifest.json", json.dumps(manifest, indent=2))
        for stage in model.stages:
            archive.writestr(f"{stage}.mlir", model.mlir(stage))
        if model.calibration_inputs is not None:
            archive.writestr("calibration.npz", calibration_bytes(model.calibration_inputs))


def load(path: str | Path) -> CompiledModel:
    """Read a model written by `CompiledModel.save`."""
    try:
        with zipfile.ZipFile(path) as archive:
            manifest = json.loads(archive.read("manifest.json"))
            if manifest.get("format") != "cimxdsl-compiled-model":
                raise CompileError(f"'{path}' is not a compiled cimxdsl model")
            if manifest.get("version") != FORMAT_VERSION:
                raise CompileError(f"'{path}' has format version {manifest.get('version')}, expected {FORMAT_VERSION}")
            stages = {stage: archive.read(f"{stage}.mlir").decode() for stage in manifest["stages"]}
            calibration = archive.read("calibration.npz") if "calibration.npz" in archive.namelist() else None
    except (OSError, zipfile.BadZipFile, KeyError, json.JSONDecodeError) as e:
        raise CompileError(f"cannot read compiled model '{path}': {e}") from None
    device = DeviceConfig.from_dict(manifest["device"])
    names = {k: manifest[k] for k in ("name", "input_names", "output_names") if k in manifest}
    model = CompiledModel(stages, device, manifest["options"], manifest.get("notes", []), **names)
    model.calibration_inputs = None if calibration is None else calibration_from_bytes(calibration)
    return model


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
