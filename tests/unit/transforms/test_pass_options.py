"""Enumerated pass options are typed `Literal[...]` and checked from that type: a value outside it
is refused with one message whether the pass is built from Python or read from a pipeline spec."""

import pytest
from xdsl.passes import PassPipeline
from xdsl.utils.exceptions import PassFailedException

from cimxdsl.device.settings import did_you_mean
from cimxdsl.transforms import get_all_passes
from cimxdsl.transforms.common.options import ChoicePass, choices

PASSES = {name: load() for name, load in get_all_passes().items()}
ENUMERATED = [(name, option, allowed) for name, cls in PASSES.items() for option, allowed in choices(cls).items()]


def test_the_pim_passes_type_their_enumerations():
    assert choices(PASSES["cinm-to-spatial"]) == {"packing": ("kernel", "im2col", "sdk")}
    assert choices(PASSES["spatial-mapping"]) == {"strategy": ("none", "greedy", "ga"), "pipeline": ("layer", "row")}
    assert choices(PASSES["pim"]) == {
        "packing": ("kernel", "im2col", "sdk"),
        "mapping": ("none", "greedy", "ga"),
        "pipelining": ("layer", "row"),
    }


@pytest.mark.parametrize("name", sorted({name for name, _, _ in ENUMERATED}))
def test_a_pass_with_enumerated_options_checks_them(name: str):
    assert issubclass(PASSES[name], ChoicePass), f"{name} has Literal options but does not check them"


@pytest.mark.parametrize(("name", "option", "allowed"), ENUMERATED, ids=[f"{n}.{o}" for n, o, _ in ENUMERATED])
def test_a_value_outside_the_type_is_refused_the_same_way_from_python_and_from_a_spec(name, option, allowed):
    cls = PASSES[name]
    spec_option = option.replace("_", "-")
    message = f"{name}: option '{spec_option}' must be one of {', '.join(allowed)}, got 'nonsense'"
    with pytest.raises(PassFailedException) as built:
        cls(**{option: "nonsense"})
    with pytest.raises(PassFailedException) as read:
        PassPipeline.parse_spec(get_all_passes(), f"{name}{{{spec_option}=nonsense}}")
    assert str(built.value) == str(read.value)
    assert str(built.value).removesuffix(did_you_mean("nonsense", allowed)) == message


@pytest.mark.parametrize(("name", "option", "allowed"), ENUMERATED, ids=[f"{n}.{o}" for n, o, _ in ENUMERATED])
def test_every_value_of_the_type_is_taken(name, option, allowed):
    cls = PASSES[name]
    for value in allowed:
        assert getattr(cls(**{option: value}), option) == value
        (read,) = PassPipeline.parse_spec(get_all_passes(), f"{name}{{{option.replace('_', '-')}={value}}}").passes
        assert getattr(read, option) == value


def test_a_list_where_one_value_is_expected_is_refused():
    with pytest.raises(PassFailedException, match=r"got 'kernel,im2col'( \(did you mean '\w+'\?\))?$"):
        PassPipeline.parse_spec(get_all_passes(), "cinm-to-spatial{packing=kernel,im2col}")
