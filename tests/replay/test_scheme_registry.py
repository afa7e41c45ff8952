"""The scheme registry (`rdqn.replay.scheme_registry`): one entry per scheme, whose sampler
class, settings, bytes and draws are the ones the samplers themselves have."""

from __future__ import annotations

import dataclasses
import inspect

import pytest

from rdqn.config import ReplayConfig
from rdqn.replay import ProportionalSampler, UniformSampler
from rdqn.replay.scheme_registry import REGISTRY, scheme, scheme_of
from rdqn.schemes import SCHEMES


def test_the_registry_names_the_schemes_in_order() -> None:
    assert tuple(REGISTRY) == SCHEMES
    for name, entry in REGISTRY.items():
        assert entry.name == name == entry.sampler_class().name


@pytest.mark.parametrize("name", SCHEMES)
def test_the_settings_are_the_sampler_s_parameters_and_config_fields(name: str) -> None:
    """Every parameter of the sampler's constructor is a setting read off the replay config:
    a new parameter cannot be left at its default by the runs that ask for it."""
    entry = scheme(name)
    parameters = tuple(inspect.signature(entry.sampler_class()).parameters)
    assert entry.settings == parameters
    assert set(entry.settings) <= {f.name for f in dataclasses.fields(ReplayConfig)}


def test_build_passes_the_config_s_settings() -> None:
    replay = ReplayConfig(alpha=0.3, eps=0.01, is_normalization="batch", max_weight=5.0)
    proportional = scheme("proportional").build(replay)
    assert isinstance(proportional, ProportionalSampler)
    assert (proportional.alpha, proportional.eps) == (0.3, 0.01)
    assert (proportional.is_normalization, proportional.max_weight) == ("batch", 5.0)
    rank = scheme("rank").build(dataclasses.replace(replay, alpha=0.7))
    assert (rank.alpha, rank.is_normalization, rank.max_weight) == (0.7, "batch", 5.0)
    assert isinstance(scheme("uniform").build(replay), UniformSampler)


@pytest.mark.parametrize("name", SCHEMES)
@pytest.mark.parametrize("capacity", [1, 7, 64, 1000])
def test_the_byte_rule_is_the_attached_sampler_s(name: str, capacity: int) -> None:
    entry = scheme(name)
    sampler = entry.build(ReplayConfig())
    sampler.attach(capacity)
    assert entry.nbytes(capacity) == sampler.nbytes
    assert bool(entry.keeps) == (sampler.nbytes > 0)


@pytest.mark.parametrize("name", SCHEMES)
def test_a_sampler_is_of_its_scheme(name: str) -> None:
    assert scheme_of(scheme(name).build(ReplayConfig())) is REGISTRY[name]


def test_a_subclass_is_of_its_parent_s_scheme_and_a_stranger_of_none() -> None:
    class Watching(ProportionalSampler):
        pass

    assert scheme_of(Watching()) is REGISTRY["proportional"]
    assert scheme_of(object()) is None


@pytest.mark.parametrize("name", ["prioritised", "", None, 3])
def test_an_unknown_scheme_is_refused_naming_the_schemes(name: object) -> None:
    with pytest.raises(ValueError, match=r"scheme must be one of \('uniform', 'proportional'"):
        scheme(name)  # type: ignore[arg-type]
