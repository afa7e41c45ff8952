"""``rdqn experiment ... --resume``: going on with the results file of an interrupted experiment.

The trials the file holds as finished are kept and not run again; the others (failed ones
included) run. The file's settings (every option but the trial axes ``--sizes``, ``--games``,
``--schemes``, ``--arms`` and ``--seeds``) and each kept trial's config (`config_digest`, kept with
its result) must be the command's, and the command must plan every trial the file holds (the
same grid or a larger one): otherwise one `UsageError` line, before anything runs. A config field
added to rdqn since the file was written (its head's ``config`` lacks it) changes no trial that
holds the value such a config gets for it (its default: the older rdqn ran as that does).
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path
from typing import Any

from rdqn import config_paths
from rdqn.cli.usage import UsageError
from rdqn.config import RunConfig
from rdqn.validation import shown

__all__ = ["config_digest", "resumed_trials", "trial_fields"]


def trial_fields(trial: Any) -> dict[str, Any]:
    """A trial's fields but its config: what its result and failure records hold of it."""
    return {k: v for k, v in vars(trial).items() if k != "config"}


def config_digest(trial: Any, added: dict[str, Any] | None = None) -> str:  # noqa: ANN401
    """A short hash of a trial's config, kept with its result so --resume can check it; without
    the ``added`` fields (`_added_fields`) where the trial holds their values."""
    config = trial.config
    if added and all(config_paths.flatten(config).get(p) == v for p, v in added.items()):
        config = json.loads(json.dumps(config))
        for path in added:
            *parents, name = path.split(".")
            node = config
            for part in parents:
                node = node[part]
            del node[name]
    text = json.dumps(config, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _added_fields(written: Any) -> dict[str, Any]:  # noqa: ANN401
    """The fields a results file's config (``written``, its head's) lacks, with the values
    `RunConfig.from_dict` gives them: those the config gained since."""
    if not isinstance(written, dict):
        return {}
    try:
        filled = RunConfig.from_dict(written).leaves()
    except ValueError:  # not a RunConfig (another experiment's trials), or not this rdqn's
        return {}
    old = config_paths.flatten(written)
    return {path: value for path, value in filled.items() if path not in old}


_AXES = ("n", "game", "scheme", "arm", "seed")
"""The fields of a trial that tell it from the others of its experiment (the rest are settings)."""


def _shown_trial(fields: dict[str, Any]) -> str:
    return " ".join(f"{k}={fields[k]}" for k in _AXES if k in fields)


def resumed_trials(
    out: Path, head: dict[str, Any], trials: list[Any], quiet: bool
) -> tuple[list[dict[str, Any]], float, list[Any]]:
    """``--resume``: the finished results the file ``out`` holds, its wall seconds, and the
    trials still to run; `UsageError` (one line, before any work) when the file is not a results
    file of this experiment, was run with other settings, or holds trials the command does not
    plan or ran under another config. A missing file: nothing finished, every trial to run."""
    where = f"--resume: {out}"
    try:
        report = json.loads(out.read_text(encoding="utf-8"))
    except FileNotFoundError:
        print(f"rdqn: {where} does not exist yet; running every trial", file=sys.stderr)
        return [], 0.0, trials
    except OSError as err:
        raise UsageError(f"{where} cannot be read: {err.strerror or err}") from None
    except ValueError as err:
        raise UsageError(f"{where} is not JSON: {err}") from None
    experiment = head["experiment"]
    not_ours = f"{where} is not a results file of `rdqn experiment {experiment}`"
    if not isinstance(report, dict) or not isinstance(report.get("trials"), list):
        raise UsageError(not_ours)
    if report.get("experiment") != experiment:
        raise UsageError(f"{not_ours} (it holds {shown(report.get('experiment'))})")
    names = [name for name in trial_fields(trials[0]) if name in _AXES]
    finished = report["trials"]
    if not all(isinstance(r, dict) and all(k in r for k in names) for r in finished):
        raise UsageError(f"{not_ours} (a trial in it lacks {', '.join(names)})")

    settings = head["settings"]
    theirs = report.get("settings")
    if not isinstance(theirs, dict):  # written before --resume: the same values, at the top
        config = report.get("config")
        theirs = {k: report.get(k) for k in settings}
        if "steps" in settings and isinstance(config, dict):
            theirs["steps"] = config.get("train", {}).get("total_steps")
        theirs = {k: v for k, v in theirs.items() if v is not None or settings[k] is None}
    differ = [
        f"{k} {json.dumps(theirs[k])} there, {json.dumps(settings[k])} here"
        for k in settings
        if k in theirs and theirs[k] != settings[k]
    ]
    if differ:
        raise UsageError(
            f"{where} was run with other settings ({'; '.join(differ)}): give its options, "
            "or another --out to start afresh"
        )

    option = {"n": "--sizes", "game": "--games", "scheme": "--schemes", "arm": "--arms"}
    option["seed"] = "--seeds"
    options = [option[n] for n in names]
    axes = f"{', '.join(options[:-1])} and {options[-1]}"
    planned = {
        json.dumps({k: trial_fields(t)[k] for k in names}, sort_keys=True): t for t in trials
    }
    kept: dict[str, dict[str, Any]] = {}
    added = _added_fields(report.get("config"))
    for result in finished:
        key = json.dumps({k: result[k] for k in names}, sort_keys=True)
        trial = planned.get(key)
        if trial is None:
            raise UsageError(
                f"{where} holds a finished trial this command does not run "
                f"({_shown_trial(result)}): give the {axes} it was run with (or more)"
            )
        digest = result.get("config_digest")
        if digest is not None and digest not in (config_digest(trial), config_digest(trial, added)):
            raise UsageError(
                f"{where}: its trial {_shown_trial(result)} was run with another config than "
                "this command's (the presets changed since?): use another --out to start afresh"
            )
        kept[key] = result
    rest = [t for key, t in planned.items() if key not in kept]
    seconds = report.get("wall_seconds")
    if not quiet:
        print(
            f"rdqn: --resume: {len(kept)} of {len(trials)} trials finished in {out}; "
            f"running {len(rest)}",
            file=sys.stderr,
        )
    return list(kept.values()), float(seconds) if isinstance(seconds, int | float) else 0.0, rest
