"""The array library the crossbar products run on: NumPy (the default), PyTorch or CuPy, on the
host or a GPU, through the Python array API standard (`array-api-compat`; Data APIs Consortium,
"Python array API standard", 2023.12).

`array_backend(name, device)` resolves a backend name (`BACKENDS`) and a device string ("cpu",
"cuda", "cuda:1") into an `ArrayBackend`: the namespace the kernels of `cimxdsl.device.crossbar`
are written against, and the moves between NumPy and that device. Programmed tiles are moved once
and stay on the device (`resident`); inputs move there once per product, results come back to
NumPy for the host's operations (docs/device-model.md, "Array backends").

`array_api_strict` (the standard's reference implementation, nothing beyond it) is accepted too:
the tests run the kernels on it to prove that they use only the standard.
"""

from __future__ import annotations

import importlib
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cache

import numpy as np

from cimxdsl.device.config import DeviceConfigError

BACKENDS = ("numpy", "torch", "cupy", "array_api_strict")
"""The array libraries a device's products can run on."""

GPU_CHUNK_BYTES = 1 << 28
"""The bound on the analog intermediates of one chunk of a product on a GPU: large chunks keep
the kernels few (a CPU keeps a chunk within its caches: `crossbar.CHUNK_BYTES`)."""


class ArrayBackendError(DeviceConfigError):
    """A backend or array device that cannot be used; the message is one line naming it."""

    def __init__(self, message: str):
        ValueError.__init__(self, "array backend: " + " ".join(str(message).split()))


@dataclass(eq=False)
class ArrayBackend:
    """An array namespace on one device, with the moves between it and NumPy."""

    name: str
    device: str
    xp: object
    """The array API namespace (`array_api_compat`'s wrapper of the library)."""
    handle: object = None
    """The library's own device object (`torch.device`, `cupy.cuda.Device`), None for the host."""
    chunk_bytes: int | None = None
    """The bound on a chunk's analog intermediates (None: the CPU's `crossbar.CHUNK_BYTES`)."""
    _resident: dict[tuple, tuple[weakref.ref, object]] = field(default_factory=dict, repr=False)
    resident_bytes: int = 0
    """The bytes of the arrays `resident` holds on the device."""
    _dtypes: dict = field(default_factory=dict, repr=False)
    _scalars: dict = field(default_factory=dict, repr=False)

    @property
    def is_numpy(self) -> bool:
        return self.name == "numpy"

    def __repr__(self) -> str:
        return f"ArrayBackend({self.name!r}, {self.device!r})"

    def asarray(self, a):
        """`a` (NumPy or a scalar sequence) on the device; NumPy's own array for NumPy."""
        if self.is_numpy:
            return np.asarray(a)
        if self.name == "cupy":
            with self.handle:
                return self.xp.asarray(np.asarray(a))
        if self.name == "torch":  # (from a writable copy of a read-only array: PyTorch warns of the other)
            a = np.ascontiguousarray(a)
            return self.xp.asarray(a if a.flags.writeable else a.copy(), device=self.handle)
        return self.xp.asarray(np.asarray(a))

    def to_numpy(self, a) -> np.ndarray:
        """`a` (an array of this backend, or NumPy) as a NumPy array on the host."""
        if isinstance(a, np.ndarray) or self.is_numpy:
            return np.asarray(a)
        if self.name == "torch":
            return a.detach().cpu().numpy()
        if self.name == "cupy":
            return a.get()
        return np.from_dlpack(a)

    def resident(self, a: np.ndarray, dtype=None):
        """`a` (as `dtype`, if given) moved to the device once and kept there while `a` lives
        (programmed weights); the free memory is checked first (an `ArrayBackendError` naming the
        bytes needed and found). `a` itself on NumPy."""
        dtype = a.dtype if dtype is None else np.dtype(dtype)
        if self.is_numpy:
            return a.astype(dtype, copy=False)
        key = (id(a), dtype.str)
        held = self._resident.get(key)
        if held is not None and held[0]() is a:
            return held[1]
        size = a.size * dtype.itemsize
        self.reserve(size)
        moved = self.asarray(a.astype(dtype, copy=False))
        try:
            ref = weakref.ref(a, lambda _: self._release(key, size))
        except TypeError:  # (an array that takes no weak reference is moved every time)
            return moved
        self._resident[key] = (ref, moved)
        self.resident_bytes += size
        return moved

    def _release(self, key: tuple, size: int) -> None:
        if self._resident.pop(key, None) is not None:
            self.resident_bytes -= size

    def reserve(self, nbytes: int) -> None:
        """Check that the device has `nbytes` free for resident weights (a GPU; the host is not checked)."""
        free = self.free_bytes()
        if free is not None and nbytes > free:
            raise ArrayBackendError(
                f"device {self.device} ({self.name}) is too small for the model's resident weights: "
                f"{self.resident_bytes + nbytes} bytes needed ({nbytes} more), {free} bytes free"
            )

    def dtype(self, dtype):
        """The namespace's dtype of NumPy dtype `dtype`."""
        found = self._dtypes.get(dtype)
        if found is None:
            found = self._dtypes[dtype] = getattr(self.xp, np.dtype(dtype).name)
        return found

    def full(self, shape: tuple[int, ...], value, dtype):
        """An array of `shape` filled with `value`, of NumPy dtype `dtype`, on the device."""
        if self.name == "torch":
            return self.xp.full(shape, value, dtype=self.dtype(dtype), device=self.handle)
        if self.name == "cupy":
            with self.handle:
                return self.xp.full(shape, value, dtype=self.dtype(dtype))
        return self.xp.full(shape, value, dtype=self.dtype(dtype))

    def scalar(self, value: int | float | bool, like: np.dtype):
        """Python scalar `value` as a 0-d array on the device, of the dtype NumPy gives `value` beside
        an array of dtype `like` (made once per value and dtype: a library may otherwise move it
        from host memory at each operation)."""
        dtype = np.result_type(like, value)
        key = (type(value), value, dtype)
        found = self._scalars.get(key)
        if found is None:
            found = self._scalars[key] = self.asarray(np.asarray(value, dtype))
        return found

    def moved(self, a):
        """An operand of an operation on this backend: an array of another backend or NumPy moved
        here (a read-only NumPy array, as a constant of a program, once: `resident`); a Python
        scalar as it is."""
        if isinstance(a, int | float | bool):
            return a
        if isinstance(a, np.ndarray | np.generic):
            if self.is_numpy:
                return a
            a = np.asarray(a)
            return self.asarray(a) if a.flags.writeable else self.resident(a)
        other = backend_of(a)
        return a if other is self else self.asarray(other.to_numpy(a))

    @property
    def on_host(self) -> bool:
        """Whether the arrays live in host memory (the CPU)."""
        return self.device == "cpu"

    @contextmanager
    def running(self) -> Iterator[None]:
        """Run the block's kernels on this backend's device: CuPy's current device set to it, or
        PyTorch's CPU intra-op threads set to one (its pool of busy-waiting threads, beside the
        host's work or on cores other work uses, made products 30× slower on a shared 2-core
        machine)."""
        if self.name == "cupy":
            with self.handle:
                yield
            return
        if self.name != "torch" or not self.on_host:
            yield
            return
        torch = _module("torch")
        before = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            yield
        finally:
            torch.set_num_threads(before)

    def free_bytes(self) -> int | None:
        """The free memory of a GPU device, None on the host."""
        if self.name == "torch" and self.handle.type == "cuda":
            return int(_module("torch").cuda.mem_get_info(self.handle)[0])
        if self.name == "cupy":
            return int(self.handle.mem_info[0])
        return None


def _numpy_namespace():
    """NumPy's own namespace where it follows the standard (2.1 on: no wrapper in the way), else
    `array_api_compat`'s wrapper."""
    major, minor = (int(part) for part in np.__version__.split(".")[:2])
    return np if (major, minor) >= (2, 1) else importlib.import_module("array_api_compat.numpy")


NUMPY = ArrayBackend("numpy", "cpu", _numpy_namespace())


def array_backend(name: str | ArrayBackend | None = "numpy", device: str | None = None) -> ArrayBackend:
    """The `ArrayBackend` of backend `name` (`BACKENDS`; None: NumPy) on `device` ("cpu", "cuda",
    "cuda:N"; None: the backend's default, a GPU for CuPy, the host otherwise). One backend object
    per (name, device) in a process, so that resident weights are shared."""
    if isinstance(name, ArrayBackend):
        return name
    return _backend(name or "numpy", device)


@cache
def _backend(name: str, device: str | None) -> ArrayBackend:
    """One object per backend and resolved device ("cuda" and "cuda:0" are the same device)."""
    found = _resolved(name, device)
    return _BY_DEVICE.setdefault((found.name, found.device), found)


_BY_DEVICE: dict[tuple[str, str], ArrayBackend] = {}


def _resolved(name: str, device: str | None) -> ArrayBackend:
    if name not in BACKENDS:
        raise ArrayBackendError(f"unknown backend '{name}' (backends: {', '.join(BACKENDS)})")
    kind, index = _device_string(name, device)
    if name == "numpy" or name == "array_api_strict":
        if kind != "cpu":
            raise ArrayBackendError(f"backend '{name}' runs on the host only (device 'cpu'), got device '{device}'")
        if name == "numpy":
            return NUMPY
        return ArrayBackend(name, "cpu", _module("array_api_strict"), chunk_bytes=None)
    library = _module(name, f"backend '{name}' needs {name} installed (pip install 'cimxdsl[{_extra(name)}]')")
    if name == "torch":
        if kind == "cpu":
            return ArrayBackend(name, "cpu", _compat(name), library.device("cpu"))
        count = library.cuda.device_count() if library.cuda.is_available() else 0
        index = _gpu_index(name, device, index, count)
        return ArrayBackend(name, f"cuda:{index}", _compat(name), library.device("cuda", index), GPU_CHUNK_BYTES)
    if kind == "cpu":
        raise ArrayBackendError(f"backend 'cupy' runs on a GPU only, got device '{device}' (use backend 'numpy')")
    try:
        count = library.cuda.runtime.getDeviceCount()
    except Exception:  # CUDARuntimeError without a driver or a GPU
        count = 0
    index = _gpu_index(name, device, index, count)
    return ArrayBackend(name, f"cuda:{index}", _compat(name), library.cuda.Device(index), GPU_CHUNK_BYTES)


def _compat(name: str):
    """`array_api_compat`'s namespace of library `name`."""
    return importlib.import_module(f"array_api_compat.{name}")


def _device_string(name: str, device: str | None) -> tuple[str, int | None]:
    """("cpu" | "cuda", the GPU index or None) of a device string."""
    if device is None:
        return ("cuda" if name == "cupy" else "cpu"), None
    text = str(device).strip().lower()
    kind, _, index = text.partition(":")
    if kind == "cpu" and not index:
        return "cpu", None
    if kind in ("cuda", "gpu") and (not index or index.isdigit()):
        return "cuda", int(index) if index else None
    raise ArrayBackendError(f"unknown array device '{device}' (devices: cpu, cuda, cuda:N)")


def _gpu_index(name: str, device: str | None, index: int | None, count: int) -> int:
    if count == 0:
        raise ArrayBackendError(f"backend '{name}' found no CUDA GPU for device '{device or 'cuda'}'")
    index = 0 if index is None else index
    if index >= count:
        raise ArrayBackendError(
            f"device 'cuda:{index}' does not exist: backend '{name}' found {count} CUDA GPU"
            f"{'s' if count > 1 else ''} (cuda:0..cuda:{count - 1})"
        )
    return index


def _extra(name: str) -> str:
    return "gpu" if name == "cupy" else name


def _module(name: str, missing: str | None = None):
    try:
        return importlib.import_module(name)
    except ImportError:
        raise ArrayBackendError(missing or f"backend '{name}' needs {name} installed") from None


def backend_of(a) -> ArrayBackend:
    """The backend array `a` lives on: NumPy for NumPy arrays and scalars."""
    library = _LIBRARIES.get(type(a))
    if library is None:
        library = _LIBRARIES[type(a)] = type(a).__module__.partition(".")[0]
    if library == "torch":
        return array_backend("torch", str(a.device))
    if library == "cupy":
        return array_backend("cupy", f"cuda:{a.device.id}")
    if library == "array_api_strict":
        return array_backend("array_api_strict")
    return NUMPY


_LIBRARIES: dict[type, str] = {}
"""The library of each array type met (its module's first part)."""


def on_backend(value) -> ArrayBackend | None:
    """The backend of an array of another library than NumPy; None for NumPy's and for scalars."""
    if type(value) is np.ndarray or isinstance(value, int | float | bool | np.generic):
        return None
    backend = backend_of(value)
    return None if backend is NUMPY else backend


def to_host(value):
    """`value` on the host: an array of another backend moved to NumPy, anything else as it is."""
    backend = on_backend(value)
    return value if backend is None else backend.to_numpy(value)


def numpy_dtype_of(a) -> np.dtype:
    """The NumPy dtype of the elements of array `a` of any backend."""
    dtype = a.dtype
    return dtype if isinstance(dtype, np.dtype) else np.dtype(str(dtype).rpartition(".")[2])


def namespace_of(a) -> object:
    """The array API namespace of `a` (`array_api_compat`'s)."""
    if isinstance(a, np.ndarray):
        return NUMPY.xp
    return importlib.import_module("array_api_compat").array_namespace(a)
