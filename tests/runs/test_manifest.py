"""Tests for rdqn.runs.manifest: environment info, memory probes, revision fallback, manifest."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from rdqn.runs import manifest as manifest_module
from rdqn.runs.manifest import (
    build_manifest,
    current_memory_bytes,
    environment_info,
    peak_memory_bytes,
    source_revision,
)
from rdqn.training.timings import PHASES, SAMPLE, Timings


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def manifest_args(**overrides: Any) -> dict[str, Any]:
    args: dict[str, Any] = {
        "seed": 7,
        "config": {"alpha": 0.6, "hidden": (128, 128), "lr": np.float64(1e-3)},
        "obs_shape": (4,),
        "n_actions": 2,
        "batch_size": 128,
        "window": 8,
        "parameter_bytes": 4 * 1000,
        "device": "cpu",
        "dtype": "float32",
        "learner": "autograd",
        "timings": None,
        "counters": {"updates": np.int64(3), "env_steps": 40, "episodes": 2},
        "environment": {"versions": {"python": "3.11"}, "source_revision": "abc"},
    }
    args.update(overrides)
    return args


# -- environment -------------------------------------------------------------------------------


def test_environment_info_keys_and_json() -> None:
    info = environment_info()
    assert set(info["versions"]) == {"python", "torch", "numpy", "gymnasium", "numba", "pandas"}
    assert info["versions"]["python"] == ".".join(map(str, sys.version_info[:3]))
    assert info["versions"]["torch"].startswith("2.")
    assert info["versions"]["numpy"] == np.__version__
    for key in (
        "platform",
        "machine",
        "cpu_count",
        "torch_backend",
        "torch_device_name",
        "torch_default_dtype",
        "torch_num_threads",
        "source_revision",
    ):
        assert key in info, key
    assert info["torch_backend"] in ("cpu", "cuda", "mps")
    assert info["torch_default_dtype"] == "float32"
    assert info["torch_num_threads"] >= 1
    assert isinstance(info["source_revision"], str) and info["source_revision"]
    assert json.loads(json.dumps(info)) == info


def test_missing_package_version_is_none(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(manifest_module, "_PACKAGES", ("torch", "surely-not-installed-pkg"))
    versions = environment_info()["versions"]
    assert versions["surely-not-installed-pkg"] is None
    assert versions["torch"] is not None


# -- source revision ---------------------------------------------------------------------------


def test_revision_outside_git_is_unknown(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path.parent))
    outside = tmp_path / "not-a-checkout"
    outside.mkdir()
    assert source_revision(outside) == "unknown"
    monkeypatch.setattr(manifest_module, "_PACKAGE_DIR", outside)
    assert environment_info()["source_revision"] == "unknown"


def test_revision_of_a_missing_directory_is_unknown(tmp_path: Path) -> None:
    assert source_revision(tmp_path / "gone") == "unknown"


class FakeGit:
    """Replaces subprocess.run: answers rev-parse and status like git would."""

    def __init__(self, head: str, status: str, fail: type[BaseException] | None = None) -> None:
        self.head, self.status, self.fail = head, status, fail
        self.calls: list[dict[str, Any]] = []

    def __call__(self, args: list[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
        self.calls.append({"args": args, **kwargs})
        if self.fail is not None:
            raise self.fail(args, 2.0) if self.fail is subprocess.TimeoutExpired else self.fail()
        out = self.head if args[1] == "rev-parse" else self.status
        return subprocess.CompletedProcess(args, 0, stdout=out, stderr="")


@pytest.mark.parametrize(
    ("status", "expected"),
    [
        ("", "0123abcd"),
        (" M rdqn/agent.py\n", "0123abcd+dirty"),
        ("?? rdqn/new.py\n", "0123abcd+dirty"),
    ],
)
def test_revision_clean_and_dirty(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, status: str, expected: str
) -> None:
    fake = FakeGit("0123abcd\n", status)
    monkeypatch.setattr(manifest_module.subprocess, "run", fake)
    assert source_revision(tmp_path) == expected
    assert [c["args"][1] for c in fake.calls] == ["rev-parse", "status"]
    for call in fake.calls:
        assert call["timeout"] == 2.0
        assert call["cwd"] == tmp_path
        assert call["env"]["GIT_OPTIONAL_LOCKS"] == "0"


@pytest.mark.parametrize("error", [FileNotFoundError, subprocess.TimeoutExpired, PermissionError])
def test_revision_when_git_is_missing_or_hangs(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, error: type[BaseException]
) -> None:
    monkeypatch.setattr(manifest_module.subprocess, "run", FakeGit("", "", fail=error))
    assert source_revision(tmp_path) == "unknown"


# -- memory ------------------------------------------------------------------------------------


def test_memory_probes() -> None:
    peak = peak_memory_bytes()
    assert isinstance(peak, int)
    current = current_memory_bytes()
    if sys.platform.startswith("linux"):
        assert current is not None and 10 * 2**20 < current <= peak * 1.01
        assert peak > 10 * 2**20  # bytes, not kilobytes: this process holds torch


# -- manifest ----------------------------------------------------------------------------------


def test_build_manifest_fields_and_json() -> None:
    clock = FakeClock()
    timings = Timings(clock=clock)
    with timings.measure(SAMPLE):
        clock.now += 0.5
    manifest = build_manifest(**manifest_args(timings=timings))
    assert json.loads(json.dumps(manifest, allow_nan=False)) == manifest
    assert manifest["seed"] == 7
    assert manifest["config"] == {"alpha": 0.6, "hidden": [128, 128], "lr": 1e-3}
    assert manifest["inputs"] == {
        "obs_shape": [4],
        "n_actions": 2,
        "batch_size": 128,
        "window": 8,
        "batch_obs_shape": [128, 8, 4],
    }
    assert (manifest["device"], manifest["dtype"]) == ("cpu", "float32")
    assert manifest["environment"]["source_revision"] == "abc"
    assert manifest["counters"] == {"updates": 3, "env_steps": 40, "episodes": 2}
    assert manifest["timings"]["seconds"] == dict.fromkeys(PHASES, 0.0) | {SAMPLE: 0.5}
    assert manifest["timings"]["counts"] == {SAMPLE: 1}
    # Peak process memory and parameter bytes are separate fields, never mixed.
    assert manifest["parameter_bytes"] == 4000
    assert manifest["peak_memory_bytes"] == pytest.approx(peak_memory_bytes(), rel=0.5)
    assert manifest["peak_memory_bytes"] > manifest["parameter_bytes"]
    assert manifest["framework_peak_allocated_bytes"] is None
    assert "current_memory_bytes" in manifest


def test_build_manifest_collects_environment_by_default() -> None:
    manifest = build_manifest(**manifest_args(environment=None))
    assert set(manifest["environment"]) >= {"versions", "source_revision", "torch_backend"}
    assert manifest["timings"] is None
    json.dumps(manifest)


def test_build_manifest_rejects_non_json_config() -> None:
    with pytest.raises(TypeError, match=r"manifest\['config'\]\['bad'\] has non-JSON type"):
        build_manifest(**manifest_args(config={"bad": object()}))
