"""Which fast paths the kernels take (`rdqn.replay.kernels.compiled`): the switch, the checks,
the cache kept apart per path, and both paths giving the same draws, probabilities and IS
weights."""

from __future__ import annotations

import os
import pickle
import platform
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import numba
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rdqn.replay.kernels import compiled, plain
from rdqn.replay.kernels.compiled import FAST_PATHS, PATH, KernelPath, agrees_with_libm, plain_asked
from rdqn.replay.kernels.vector_power import load_libmvec, widths_to_try
from tests.replay.kernels.twin_worker import run_scenario

REPO = Path(__file__).resolve().parents[3]
STRUCTURE = ",".join(name for name in FAST_PATHS if name != "power")
"""Every plain twin but `power`'s: the same pow as the fast path, so results agree bit for bit."""


def _python(code: str, **environ: str) -> str:
    """The last line ``code`` prints in a fresh process with ``environ`` added (and none of
    this process's own path or target choices: a run under ``NUMBA_CPU_NAME=generic`` still
    starts its host processes on the host)."""
    inherited = {"RDQN_PLAIN_KERNELS", "NUMBA_CPU_NAME", "NUMBA_CPU_FEATURES", "NUMBA_ENABLE_AVX"}
    env = {k: v for k, v in os.environ.items() if k not in inherited} | environ
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip().splitlines()[-1]


@pytest.mark.parametrize(
    ("value", "plain"),
    [
        (None, set()),
        ("", set()),
        ("0", set()),
        ("1", set(FAST_PATHS)),
        (" All ", set(FAST_PATHS)),
        ("power", {"power"}),
        ("move, open_gap,", {"move", "open_gap"}),
    ],
)
def test_the_switch_names_the_plain_twins(value: str | None, plain: set[str]) -> None:
    environ = {} if value is None else {"RDQN_PLAIN_KERNELS": value}
    assert plain_asked(environ) == plain


def test_an_unknown_name_is_refused_with_the_names_there_are() -> None:
    with pytest.raises(ValueError, match=r"no fast path named 'popcnt'; use 1 .* nrt, prefetch"):
        plain_asked({"RDQN_PLAIN_KERNELS": "power,popcnt"})


@pytest.mark.parametrize(
    ("plain", "width", "tag"),
    [
        (set(), 8, "fast-pow8"),
        (set(), 2, "fast-pow2"),
        ({"move"}, 4, "fast-pow4-plain_move"),
        ({"power", "nrt"}, 1, "fast-plain_nrt-plain_power"),
        (set(FAST_PATHS), 1, "plain"),
    ],
)
def test_the_tag_names_the_path(plain: set[str], width: int, tag: str) -> None:
    path = KernelPath(plain=frozenset(plain), vector_width=width)
    assert path.tag == tag
    assert path.code == KernelPath(plain=frozenset(plain), vector_width=width).code


@pytest.mark.skipif(
    os.environ.get("RDQN_PLAIN_KERNELS", "") not in ("", "0"), reason="plain twins asked for"
)
@pytest.mark.skipif(
    platform.machine() != "x86_64" or not load_libmvec(), reason="CI's machines: x86-64 glibc"
)
def test_on_x86_64_linux_every_fast_path_passes_its_check() -> None:
    """Where this fails, a numba or llvmlite change broke a fast path: `PATH.why` says which
    (the kernels are right, on its plain twin, but slower)."""
    assert PATH.why == {}
    assert PATH.vector_width == max(widths_to_try())
    assert compiled.open_gap is not plain.open_gap and compiled.power is not plain.power


def test_the_kernels_take_the_chosen_twins() -> None:
    for name in ("prefetch", "move", "open_gap", "prefix_position", "float_bits"):
        assert (getattr(compiled, name) is getattr(plain, name)) == (name in PATH.plain)
    assert (compiled.power is plain.power) == ("power" in PATH.plain)
    assert compiled.compiled_path() == PATH.code


def test_a_failing_check_takes_the_plain_twin_and_says_why(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def broken() -> bool:
        raise RuntimeError("LLVM ERROR: Cannot select")

    monkeypatch.setitem(compiled.CHECKS, "open_gap", broken)
    monkeypatch.setitem(compiled.CHECKS, "move", lambda: False)
    path = compiled.choose_path({})
    assert {"open_gap", "move"} <= path.plain
    assert path.why["open_gap"].startswith("did not compile or run (RuntimeError: LLVM ERROR")
    assert path.why["move"] == "gave other results than its plain twin"
    assert "plain_move-plain_open_gap" in path.tag


def test_the_checks_pass_on_the_plain_twins_results() -> None:
    """Each check holds its fast path to its twin's result: the twin passes its own check."""
    for name in ("prefix_position", "float_bits"):
        assert compiled.CHECKS[name]()
    values = np.array([0.0, 1.0, 2.0, np.inf, np.nan, 1e300, 3.5])
    out = np.empty_like(values)
    with np.errstate(all="ignore"):
        plain.power.py_func(values, -0.4, out)
    assert agrees_with_libm(out, values, -0.4)


def test_libms_pow_within_four_ulp_agrees_and_garbage_does_not() -> None:
    values = np.array([0.5, 3.0, 7.25, 1e-200, 0.0, np.inf])
    exact = values**0.6
    off = exact.copy()
    off[1:3] += 4 * np.spacing(exact[1:3])
    assert agrees_with_libm(off, values, 0.6)
    off[2] += np.spacing(exact[2])
    assert not agrees_with_libm(off, values, 0.6)  # 5 ulp
    zero_wrong = exact.copy()
    zero_wrong[4] = 1e-300
    assert not agrees_with_libm(zero_wrong, values, 0.6)
    assert not agrees_with_libm(np.full(6, 1.8e308), values, 0.6)  # a too-wide pow's garbage


def test_nrt_false_still_removes_the_reference_counts() -> None:
    """The fast path's one private numba option: numba must still accept it and leave the
    reference counts out (else it raises here, or the counts come back and cost time)."""

    def first(values: np.ndarray) -> float:
        return values[0]

    counted = numba.njit(cache=False)(first)
    uncounted = numba.njit(cache=False, _nrt=False)(first)
    assert counted(np.ones(3)) == uncounted(np.ones(3)) == 1.0
    llvm = {"counted": counted.inspect_llvm(), "uncounted": uncounted.inspect_llvm()}
    assert "NRT_" in next(iter(llvm["counted"].values()))
    assert "NRT_" not in next(iter(llvm["uncounted"].values()))


_SHOW_PATH = (
    "from rdqn.replay.kernels import compiled; "
    "print(compiled.PATH.tag, sorted(compiled.PATH.why), compiled.PATH.vector_width, "
    "compiled.compiled_path() == compiled.PATH.code)"
)


@pytest.mark.slow
def test_the_switch_and_the_target_choose_the_path_in_a_fresh_process(tmp_path: Path) -> None:
    """RDQN_PLAIN_KERNELS takes the twins it names; NUMBA_CPU_NAME=generic (code for any x86-64)
    leaves libmvec's SSE2 width, where the host's AVX-512 width would read garbage."""
    cache = {"NUMBA_CACHE_DIR": str(tmp_path)}
    everything = _python(_SHOW_PATH, RDQN_PLAIN_KERNELS="1", **cache)
    assert everything == f"plain {sorted(FAST_PATHS)} 1 True"
    some = _python(_SHOW_PATH, RDQN_PLAIN_KERNELS="power,move", **cache)
    assert some == "fast-plain_move-plain_power ['move', 'power'] 1 True"
    if platform.machine() == "x86_64" and load_libmvec():
        assert _python(_SHOW_PATH, NUMBA_CPU_NAME="generic", **cache) == "fast-pow2 [] 2 True"


_BREAK_THE_FAST_PATHS = "import sys; sys.modules['rdqn.replay.kernels.intrinsics'] = None; "
_DRAW_AND_SHOW = (
    "import numpy as np; from rdqn.replay import RankBasedSampler; "
    "from rdqn.replay.kernels import compiled; "
    "s = RankBasedSampler(alpha=0.7); s.attach(8); [s.on_add(i) for i in range(8)]; "
    "s.update_priorities(np.arange(8), np.arange(1.0, 9.0)); "
    "d = s.sample(8, 4, 0.5, np.random.default_rng(0)); "
    "print(compiled.PATH.why['move'].split(' (')[0], '|', "
    + _SHOW_PATH.split("print(")[1][:-1]
    + ", '|', d.indices.tolist(), d.weights.tolist())"
)


@pytest.mark.slow
def test_fast_paths_that_do_not_import_leave_the_plain_twins(tmp_path: Path) -> None:
    """Where numba or llvmlite changes so that the fast paths' module cannot import, every
    kernel takes its plain twin, says why, and the samplers draw as on the plain path."""
    cache = {"NUMBA_CACHE_DIR": str(tmp_path)}
    why, shown, broken = _python(_BREAK_THE_FAST_PATHS + _DRAW_AND_SHOW, **cache).split(" | ")
    assert why == "the fast paths did not import"
    assert shown == f"plain {sorted(FAST_PATHS)} 1 True"
    asked = _python(_DRAW_AND_SHOW, RDQN_PLAIN_KERNELS="1", **cache).split(" | ")
    assert asked[0] == "RDQN_PLAIN_KERNELS asks for it"
    assert asked[2] == broken


@pytest.mark.slow
def test_numbas_cache_keeps_each_path_and_each_target_apart(tmp_path: Path) -> None:
    """Processes on different paths, one cache: each loads only its own path's kernels
    (`compiled_path`, checked at import, would stop one that got another's). The cache is keyed
    by the CPU target too: libmvec's 8-wide call that the host compiled and cached stays right
    on the host and is compiled anew, and wrong, for the generic target."""
    cache = {"NUMBA_CACHE_DIR": str(tmp_path)}
    for switch in ("", "1", STRUCTURE, "", "1"):
        line = _python(_SHOW_PATH, RDQN_PLAIN_KERNELS=switch, **cache)
        assert line.endswith(" True"), line
    if platform.machine() == "x86_64" and "avx512f" in compiled.vector_power.host_features():
        check = "from rdqn.replay.kernels import compiled; print(compiled._check_power(8))"
        assert _python(check, **cache) == "True"
        assert _python(check, NUMBA_CPU_NAME="generic", **cache) == "False"
        assert _python(check, **cache) == "True"
        # numba's AVX switch takes AVX-512 away too, and the widths tried follow it
        assert _python(check, NUMBA_ENABLE_AVX="0", **cache) == "False"
        widths = (
            "from rdqn.replay.kernels.vector_power import widths_to_try; print(widths_to_try())"
        )
        assert _python(widths, NUMBA_ENABLE_AVX="0", **cache) == "[2]"


# ---------------------------------------------------------------- both paths, the same results
class Twin:
    """A process of tests.replay.kernels.twin_worker on a plain path."""

    def __init__(self, switch: str) -> None:
        env = os.environ | {"RDQN_PLAIN_KERNELS": switch}
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tests.replay.kernels.twin_worker"],
            cwd=REPO,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )

    def run(self, scenario: dict) -> tuple[str, list[np.ndarray]]:
        assert self.process.stdin is not None and self.process.stdout is not None
        pickle.dump(scenario, self.process.stdin)
        self.process.stdin.flush()
        return pickle.load(self.process.stdout)

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait(timeout=60)


@pytest.fixture(scope="module")
def twins() -> Iterator[dict[str, Twin]]:
    started = {"structure": Twin(STRUCTURE), "all": Twin("1")}
    yield started
    for twin in started.values():
        twin.close()


steps = st.lists(
    st.one_of(
        st.tuples(st.just("add"), st.integers(1, 90)),
        st.tuples(st.just("update"), st.integers(0, 999), st.integers(1, 70), st.booleans()),
        st.tuples(
            st.just("sample"),
            st.integers(0, 999),
            st.integers(1, 64),
            st.sampled_from([0.0, 0.4, 1.0]),
        ),
        st.tuples(st.just("find"), st.integers(0, 999), st.integers(1, 40)),
    ),
    min_size=1,
    max_size=14,
)
scenarios = st.fixed_dictionaries(
    {
        "scheme": st.sampled_from(["rank", "proportional"]),
        "capacity": st.integers(1, 400),
        "alpha": st.sampled_from([0.0, 0.6, 0.7, 1.0, 1.5]),
        "normalization": st.sampled_from(["global", "batch", "none"]),
        "max_weight": st.sampled_from([None, 2.0]),
        "steps": steps,
    }
)


@pytest.mark.slow
@pytest.mark.skipif(PATH.plain >= set(FAST_PATHS), reason="this process runs the plain twins")
@settings(deadline=None, max_examples=120, derandomize=True)
@given(scenarios)
def test_plain_twins_give_the_same_draws_probabilities_and_weights(
    twins: dict[str, Twin], scenario: dict
) -> None:
    """The twins of every fast path but `power`: the same slots, P(i) and IS weights bit for
    bit (and the same priorities, rank order, tree descents). All twins, libm's pow included:
    the same slots, order and descents; P(i) and IS weights, which take a power, within a few
    ulp (libmvec's 4-ulp contract of libm's pow, carried through the tree's sums, a division
    and the power of a ratio: a relative 2^-45 bounds it; 2.9 x 2^-52 was the most measured
    over 300 larger scenarios)."""
    ours = run_scenario(scenario)
    tag, same_pow = twins["structure"].run(scenario)
    assert tag.endswith("-plain_float_bits") or tag.startswith("fast-plain_nrt")
    assert len(same_pow) == len(ours)
    for mine, theirs in zip(ours, same_pow, strict=True):
        np.testing.assert_array_equal(mine, theirs)
    tag, libm = twins["all"].run(scenario)
    assert tag == "plain"
    for mine, theirs in zip(ours, libm, strict=True):
        if mine.dtype == np.float64:
            np.testing.assert_allclose(mine, theirs, rtol=2.0**-45, atol=0.0)
        else:
            np.testing.assert_array_equal(mine, theirs)
