"""Checking a `rdqn.learn.agent.DQNAgent` state read back from a checkpoint before it is loaded.

A checkpoint is a file anyone with access to the folder can edit: `check_agent_state` refuses,
naming the first thing wrong, a state this agent's config could not have saved (weights of other
shapes or not finite, another optimizer or learning rate, negative second moments, steps past
the update count, a generator state that is not one), so nothing that is loaded reaches the
learner unchecked.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from torch import nn

from rdqn.validation import is_integer, is_real, shown

__all__ = ["check_agent_state", "explore_rng_state"]


def check_agent_state(agent: Any, state: Any) -> None:  # noqa: ANN401 (a DQNAgent)
    """Raise ``ValueError`` naming the first thing wrong with a :meth:`state_dict` read back
    from a checkpoint; changes nothing.

    Checked against this agent (built from the same config): the shapes and network kind;
    the online and target weights (the same names, shapes and dtypes, every value finite);
    the optimizer (the same parameter groups, holding the same parameters with the same
    hyperparameters, lr included; per-parameter state of the parameter's shape, finite,
    Adam's ``exp_avg_sq`` >= 0 and ``step`` a whole number from 0 to ``updates``); the
    update count (an integer >= 0); the exploration generator's state.
    """
    state = _mapping(state, "the agent state")
    for key in ("obs_dim", "n_actions", "config"):
        _key(state, key, "the agent state")
    config = state["config"]
    found = (
        state["obs_dim"],
        state["n_actions"],
        config.get("network") if isinstance(config, dict) else None,
        config.get("dueling") if isinstance(config, dict) else None,
    )
    expected = (agent.obs_dim, agent.n_actions, agent.config.network, agent.config.dueling)
    if found != expected:
        raise ValueError(
            f"state must match (obs_dim, n_actions, network, dueling) = {expected}, got {found}"
        )
    for part in ("online", "target"):
        module: nn.Module = getattr(agent, part)
        _check_tensors(_key(state, part, "the agent state"), module.state_dict(), part)
    updates = _key(state, "updates", "the agent state")
    if not is_integer(updates) or updates < 0:
        raise ValueError(f"updates must be an integer >= 0, got {shown(updates)}")
    _check_optimizer(agent, _key(state, "optimizer", "the agent state"), int(updates))
    try:
        np.random.PCG64().state = explore_rng_state(_key(state, "explore_rng", "agent"))
    except (KeyError, TypeError, ValueError, OverflowError) as err:
        raise ValueError(
            f"explore_rng is not a PCG64 generator state ({type(err).__name__}: {err})"
        ) from None


def _check_optimizer(agent: Any, state: Any, updates: int) -> None:  # noqa: ANN401
    """`check_agent_state` of the optimizer's state dict (``updates``: the agent's count)."""
    state = _mapping(state, "optimizer")
    fresh = agent.optimizer.state_dict()
    groups = _key(state, "param_groups", "optimizer")
    if not isinstance(groups, list) or len(groups) != len(fresh["param_groups"]):
        raise ValueError(
            f"optimizer param_groups must be a list of {len(fresh['param_groups'])} group(s) "
            f"(this agent's), got {_what(groups)}"
        )
    shapes: dict[int, torch.Tensor] = {}
    for g, (group, mine) in enumerate(zip(groups, fresh["param_groups"], strict=True)):
        group = _mapping(group, f"optimizer param_groups[{g}]")
        if set(group) != set(mine):
            raise ValueError(
                f"optimizer param_groups[{g}] must hold the keys {sorted(mine)}, got "
                f"{shown(sorted(map(str, group)), 200)}"
            )
        for key, value in mine.items():
            theirs = group[key]
            if not _same_setting(theirs, value):
                raise ValueError(
                    f"optimizer param_groups[{g}][{key!r}] is {shown(theirs)}; this agent's "
                    f"config gives {shown(value)}"
                )
        params = agent.optimizer.param_groups[g]["params"]
        shapes.update(zip(mine["params"], params, strict=True))
    entries = _key(state, "state", "optimizer")
    entries = _mapping(entries, "optimizer state")
    for index, entry in entries.items():
        if index not in shapes or not is_integer(index):
            raise ValueError(f"optimizer state names parameter {shown(index)}, which has none")
        param = shapes[index]
        entry = _mapping(entry, f"optimizer state[{index}]")
        for key, value in entry.items():
            where = f"optimizer state[{index}][{key!r}]"
            if key == "step":
                _check_step(where, value, updates)
            elif key in _MOMENTS:
                if value is None and key == "momentum_buffer":
                    continue
                _check_tensor(where, value, param.shape, param.dtype)
                if key in _NON_NEGATIVE_MOMENTS:
                    _require(where, value, value >= 0, ">= 0")
            else:
                raise ValueError(f"{where} is not optimizer state this agent keeps")


_MOMENTS = frozenset({"exp_avg", "exp_avg_sq", "max_exp_avg_sq", "momentum_buffer"})
_NON_NEGATIVE_MOMENTS = frozenset({"exp_avg_sq", "max_exp_avg_sq"})


def _what(value: Any) -> str:
    if isinstance(value, torch.Tensor):
        return f"a tensor of dtype {value.dtype} and shape {tuple(value.shape)}"
    if isinstance(value, list | tuple | dict):
        return f"a {type(value).__name__} of {len(value)}"
    return f"a {type(value).__name__}"


def _mapping(value: Any, what: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ValueError(f"{what} must be a dict, got {_what(value)}")
    return value


def _key(state: dict[Any, Any], key: str, what: str) -> Any:
    if key not in state:
        raise ValueError(f"{what} has no {key!r}")
    return state[key]


def _same_setting(theirs: Any, mine: Any) -> bool:
    """A hyperparameter equal to this agent's: the same type of value and the same value."""
    if isinstance(mine, tuple | list):
        return (
            isinstance(theirs, tuple | list)
            and len(theirs) == len(mine)
            and all(_same_setting(a, b) for a, b in zip(theirs, mine, strict=True))
        )
    if isinstance(mine, bool) or mine is None or isinstance(mine, str):
        return type(theirs) is type(mine) and theirs == mine
    if isinstance(mine, int | float):
        return is_real(theirs) and theirs == mine
    return bool(theirs == mine)


def _require(where: str, tensor: torch.Tensor, good: torch.Tensor, what: str) -> None:
    if not bool(good.all()):
        flat = (~good).reshape(-1).nonzero()[0].item()
        value = tensor.reshape(-1)[flat].item()
        raise ValueError(f"{where} has the value {value} at flat index {flat}; it must be {what}")


def _check_tensor(where: str, value: Any, shape: torch.Size, dtype: torch.dtype) -> None:
    if not isinstance(value, torch.Tensor) or value.shape != shape or value.dtype != dtype:
        raise ValueError(
            f"{where} must be a tensor of dtype {dtype} and shape {tuple(shape)}, got "
            f"{_what(value)}"
        )
    if value.is_floating_point() or value.is_complex():
        _require(where, value, torch.isfinite(value), "finite")


def _check_tensors(state: Any, mine: dict[str, torch.Tensor], part: str) -> None:
    """Weights with exactly this network's names, shapes and dtypes, every value finite."""
    state = _mapping(state, f"{part} weights")
    if set(state) != set(mine):
        missing = [name for name in mine if name not in state]
        extra = [name for name in state if name not in mine]
        raise ValueError(
            f"{part} weights must be this network's: missing {shown(missing, 120)}, "
            f"unexpected {shown(extra, 120)}"
        )
    for name, tensor in mine.items():
        _check_tensor(f"{part} weight {name!r}", state[name], tensor.shape, tensor.dtype)


def _check_step(where: str, value: Any, updates: int) -> None:
    """An optimizer's step count: a whole number from 0 to the agent's update count."""
    if isinstance(value, torch.Tensor):
        if value.numel() != 1 or value.is_complex():
            raise ValueError(f"{where} must be one number, got {_what(value)}")
        value = value.item()
    if not is_real(value) or value < 0 or value > updates or value != int(value):
        raise ValueError(
            f"{where} is {shown(value)}; it must be a whole number from 0 to the agent's "
            f"{updates:,} updates"
        )


def explore_rng_state(rng: Any) -> dict[str, Any]:
    """The bit generator state `DQNAgent.state_dict` wrote as ``explore_rng``."""
    return {
        "bit_generator": rng["bit_generator"],
        "state": {"state": int(rng["state"]), "inc": int(rng["inc"])},
        "has_uint32": rng["has_uint32"],
        "uinteger": rng["uinteger"],
    }
