"""`identity_cache`: one computation per attribute object (and per value of plain arguments)."""

from xdsl.dialects.builtin import TensorType, i32

from cimxdsl.dialects import utils
from cimxdsl.dialects.utils import identity_cache


def test_one_attribute_computed_once_per_object():
    calls = []

    @identity_cache
    def shape(t):
        calls.append(t)
        return t.get_shape()

    a, b = TensorType(i32, (2, 3)), TensorType(i32, (2, 3))
    assert shape(a) == (2, 3) and shape(a) == (2, 3)
    assert len(calls) == 1
    assert shape(b) == (2, 3)  # an equal attribute of its own: computed for it, with the same result
    assert [id(t) for t in calls] == [id(a), id(b)]


def test_plain_arguments_by_value():
    calls = []

    @identity_cache
    def reshaped(t, shape, columns):
        calls.append((t, shape, columns))
        return TensorType(t.element_type, (*shape, columns or 1))

    t = TensorType(i32, (4,))
    first = reshaped(t, (2, 2), None)
    again = reshaped(t, tuple([2, 2]), None)  # an equal tuple built anew: a hit
    assert again is first and len(calls) == 1
    assert reshaped(t, (2, 2), 3).get_shape() == (2, 2, 3)
    assert reshaped(TensorType(i32, (4,)), (2, 2), None) == first
    assert len(calls) == 3


def test_starts_again_when_full(monkeypatch):
    monkeypatch.setattr(utils, "IDENTITY_CACHE_SIZE", 2)
    calls = []

    @identity_cache
    def element(t):
        calls.append(t)
        return t.element_type

    types = [TensorType(i32, (n,)) for n in range(3)]
    for t in types:
        element(t)
    assert element(types[2]) == i32  # the newest entry survives the restart
    assert len(calls) == 3
    element(types[0])
    assert len(calls) == 4
