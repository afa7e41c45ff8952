"""`power`, x ** a over an array through glibc's libmvec: within libmvec's 4-ulp contract of
libm's pow (1 ulp measured) at every vector width the compiled code can take, IEEE special values
as libm's, remainders of every length, in place; the width follows the CPU and numba's target
(`widths_to_try`); and the samplers' kernels really call the chosen one."""

from __future__ import annotations

import math

import numba
import numpy as np
import pytest

from rdqn.replay import ProportionalSampler, RankBasedSampler
from rdqn.replay.kernels.compiled import PATH
from rdqn.replay.kernels.vector_power import (
    host_features,
    make_power,
    target_features,
    vector_width,
    widths_to_try,
)

WIDTHS = [1, *widths_to_try()]
"""Every width the code numba compiles here can take (1: libm's scalar pow)."""
_KERNELS = {}


def _power_kernel(width: int):  # noqa: ANN202
    if width not in _KERNELS:
        power = make_power(width)

        @numba.njit(cache=False)
        def kernel(values: np.ndarray, exponent: float, out: np.ndarray) -> None:
            power(values, exponent, out)

        _KERNELS[width] = kernel
    return _KERNELS[width]


def _libm(values: np.ndarray, exponent: float) -> np.ndarray:
    """Python's float ** float, which is libm's pow (NumPy's power may be vectorized); IEEE's
    0 ** -a = inf and nan ** 0 = 1, where Python raises or we skip."""
    out = []
    for value in values.tolist():
        if exponent == 0.0:
            out.append(1.0)
        elif value == 0.0 and exponent < 0.0:
            out.append(math.inf)
        else:
            out.append(math.pow(value, exponent) if value == value else math.nan)
    return np.array(out)


def test_the_kernels_take_the_widest_width_that_passes_its_check() -> None:
    """CI and the development machines are x86-64 Linux with glibc's libmvec: there the check
    passes at the widest width (`rdqn.replay.kernels.compiled`; under NUMBA_CPU_NAME=generic,
    2)."""

    if "power" in PATH.plain:
        assert PATH.vector_width == 1
    else:
        assert PATH.vector_width == max(WIDTHS) > 1


@pytest.mark.parametrize(
    ("features", "found", "machine", "width"),
    [
        ("+sse2,+avx,+avx2,+avx512f,+avx512dq", True, "x86_64", 8),
        ("+sse2,+avx,+avx2,-avx512f", True, "x86_64", 4),
        ("+sse2,-avx,-avx2,-avx512f", True, "x86_64", 2),
        ("+avx2,+avx512f", False, "x86_64", 1),  # no libmvec: libm's scalar pow
        ("+neon", True, "aarch64", 1),
        ("", True, "x86_64", 2),
    ],
)
def test_vector_width_follows_the_targets_features(
    features: str, found: bool, machine: str, width: int
) -> None:
    assert vector_width(features, found, machine) == width


HOST = "+sse2,+avx2,-avx512f,+fma"


@pytest.mark.parametrize(
    ("environ", "features"),
    [
        ({}, HOST),  # numba compiles for this CPU
        ({"NUMBA_CPU_NAME": "host"}, HOST),
        ({"NUMBA_CPU_NAME": "generic"}, ""),  # any x86-64: the baseline only
        ({"NUMBA_CPU_NAME": "skylake-avx512"}, ""),  # a named CPU: its features unknown here
        ({"NUMBA_CPU_FEATURES": "+avx2,+avx512f"}, "+avx2"),  # given, and on this CPU
        ({"NUMBA_CPU_NAME": "generic", "NUMBA_CPU_FEATURES": "+sse2,+fma"}, "+sse2,+fma"),
    ],
)
def test_the_target_features_come_from_numbas_documented_settings(
    environ: dict[str, str], features: str
) -> None:
    assert target_features(environ, HOST, "skylake") == features


@pytest.mark.parametrize(
    ("environ", "cpu", "features"),
    [
        ({"NUMBA_ENABLE_AVX": "0"}, "skylake", "+sse2,-avx512f,+fma"),  # AVX switched off
        ({"NUMBA_ENABLE_AVX": "1"}, "ivybridge", HOST),  # switched on where it is off by default
        ({}, "sandybridge", "+sse2,-avx512f,+fma"),  # off by default there
        ({}, "nocona", "+sse2,-avx512f,+fma"),
    ],
)
def test_numbas_avx_switch_takes_the_avx_features_away(
    environ: dict[str, str], cpu: str, features: str
) -> None:
    assert target_features(environ, HOST, cpu) == features
    assert vector_width(target_features(environ, HOST, cpu), True, "x86_64") == (
        4 if "+avx2" in features else 2
    )


def test_widths_to_try_for_the_generic_target_and_for_this_cpu() -> None:
    generic = widths_to_try({"NUMBA_CPU_NAME": "generic"})
    assert generic in ([2], [])  # [] without libmvec
    host = widths_to_try({})
    assert host == sorted(host, reverse=True) and set(generic) <= set(host)
    if host:
        assert host[0] == vector_width(host_features(), True, "x86_64")


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("exponent", [0.6, -0.4, 0.7, -0.28, 1.0, 0.0, 2.5, -1.0])
def test_within_libmvecs_contract_of_libms_pow(width: int, exponent: float) -> None:
    values = np.exp(np.random.default_rng(7).uniform(-40.0, 40.0, 20_003))
    out = np.empty_like(values)
    _power_kernel(width)(values, exponent, out)
    expected = _libm(values, exponent)
    ulps = np.abs(out - expected) / np.spacing(np.abs(expected))
    assert ulps.max() <= 4.0
    if width == 1:
        np.testing.assert_array_equal(out, expected)


@pytest.mark.parametrize("width", WIDTHS)
def test_every_remainder_length(width: int) -> None:
    for length in range(0, 3 * width + 2):
        values = np.arange(1.0, length + 1.0)
        out = np.full(length, -7.0)
        _power_kernel(width)(values, 0.5, out)
        np.testing.assert_allclose(out, np.sqrt(values), rtol=4e-16)


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("exponent", [0.6, -0.4, 0.0, 1.0])
def test_special_values_as_libm(width: int, exponent: float) -> None:
    specials = np.array([0.0, -0.0, np.inf, np.nan, 1.0, 5e-324, 1e-300, 1e300, 4.0, 9.0])
    specials = np.tile(specials, 2)  # both through the vector calls and the remainder
    out = np.empty_like(specials)
    _power_kernel(width)(specials, exponent, out)
    expected = _libm(specials, exponent)
    np.testing.assert_allclose(out, expected, rtol=4 * 2.0**-52, equal_nan=True)
    assert np.array_equal(np.isinf(out), np.isinf(expected))


@pytest.mark.parametrize("width", WIDTHS)
def test_in_place(width: int) -> None:
    values = np.linspace(0.1, 9.0, 37)
    expected = _libm(values, -0.4)
    _power_kernel(width)(values, -0.4, values)
    np.testing.assert_allclose(values, expected, rtol=4 * 2.0**-52)


def test_only_float64_vectors_and_a_float64_exponent() -> None:
    kernel = _power_kernel(max(WIDTHS))
    with pytest.raises(numba.core.errors.TypingError):
        kernel(np.ones(4), 2, np.ones(4))  # an integer exponent
    with pytest.raises(numba.core.errors.TypingError):
        kernel(np.ones(4, np.float32), 2.0, np.ones(4, np.float32))


def test_the_samplers_take_their_powers_from_it() -> None:
    """Masses, P(i) and IS weights equal the chosen `power`'s results bit for bit."""
    vector = _power_kernel(PATH.vector_width)
    rng = np.random.default_rng(3)
    n = 512
    proportional = ProportionalSampler(alpha=0.6, eps=1e-6)
    proportional.attach(n)
    for slot in range(n):
        proportional.on_add(slot)
    magnitudes = rng.random(n) * 5
    proportional.update_priorities(np.arange(n), magnitudes)
    masses = np.empty(n)
    vector(magnitudes + 1e-6, 0.6, masses)
    np.testing.assert_array_equal(proportional.tree.leaves(n), masses)
    # libm's pow differs from libmvec's in some of these (so the test tells the two apart)
    assert np.array_equal(masses, _libm(magnitudes + 1e-6, 0.6)) == (PATH.vector_width == 1)

    draw = proportional.sample(n, 128, 0.4, rng)
    p_min = proportional.tree.min_nodes[1] / proportional.tree.total
    weights = np.empty(128)
    vector(draw.probabilities / p_min, -0.4, weights)
    np.testing.assert_array_equal(draw.weights, weights)

    rank = RankBasedSampler(alpha=0.7)
    rank.attach(n)
    for slot in range(n):
        rank.on_add(slot)
    rank.update_priorities(np.arange(n), magnitudes)
    draw = rank.sample(n, 128, 0.4, rng)
    ranks = np.argsort(rank.order)[draw.indices] + 1.0
    probabilities = np.empty(128)
    vector(ranks, -0.7, probabilities)
    total = np.sum(np.arange(1.0, n + 1) ** -0.7)
    np.testing.assert_allclose(draw.probabilities, probabilities / total, rtol=1e-13)
    p_min = n**-0.7 / rank._rank_cdf[n - 1]  # rank n's, by the samplers' one weight formula
    vector(np.maximum(draw.probabilities / p_min, 1.0), -0.4, weights)
    np.testing.assert_array_equal(draw.weights, weights)
