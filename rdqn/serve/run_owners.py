"""Whose runs are whose: the owners of a registry's runs (`rdqn.serve.registry`).

Ownership: a run belongs to the owner that started or resumed it, an opaque token (the
dashboard's, `rdqn.dashboard.classroom`), until `RunRegistry.stop_owner` ends that. Every control of
the registry (`pause`, `step`, `unpause`, `stop`, `replace`, `delete`, `resume`) takes an
``owner``: it is checked (`NotOwner` if the run is another owner's), None means the caller may
control any run (the command line, the server's admin). A run nobody owns (its owner ended, a
server restart, the command line) may be resumed by any owner, but stopped or deleted only with
``owner=None``. `RunOwners` keeps who owns what and does these checks.
"""

from __future__ import annotations

__all__ = ["NotOwner", "RunOwners"]


class NotOwner(PermissionError):
    """A session asked to control a run that is not its own; the message says whose it is."""


class RunOwners:
    """Run id -> the owner token the run belongs to; a run nobody owns has no entry.

    Not thread-safe by itself: `RunRegistry` calls it under its lock.
    """

    def __init__(self) -> None:
        self._owners: dict[str, str] = {}

    def owner_of(self, run_id: str) -> str | None:
        """The owner run ``run_id`` belongs to (None: nobody's)."""
        return self._owners.get(run_id)

    def assign(self, run_id: str, owner: str | None) -> None:
        """Run ``run_id`` belongs to ``owner`` from now on (None: to nobody)."""
        if owner is not None:
            self._owners[run_id] = owner
        else:
            self._owners.pop(run_id, None)

    def forget(self, run_id: str) -> None:
        """Run ``run_id`` is gone (deleted): drop its owner, if any."""
        self._owners.pop(run_id, None)

    def release(self, owner: str) -> None:
        """``owner`` ended: its runs become nobody's."""
        self._owners = {run_id: who for run_id, who in self._owners.items() if who != owner}

    def may_control(self, run_id: str, owner: str | None) -> bool:
        """Whether ``owner`` may pause, stop, restart or delete run ``run_id``: None (the
        command line, the server's admin) any run, an owner only its own."""
        return owner is None or self.owner_of(run_id) == owner

    def check(self, run_id: str, owner: str | None, action: str) -> None:
        """`NotOwner` ("cannot <action> run <id>: it belongs to ...") unless ``owner`` may
        control run ``run_id`` (`may_control`)."""
        if not self.may_control(run_id, owner):
            whose = "another session" if self.owner_of(run_id) is not None else "no session"
            raise NotOwner(
                f"cannot {action} run {run_id}: it belongs to {whose}; only the session that "
                "started it, or the server's admin, may"
            )

    def check_resume(self, run_id: str, owner: str | None) -> None:
        """`NotOwner` if run ``run_id`` is another owner's; a run nobody owns may be resumed by
        any owner."""
        owned_by = self.owner_of(run_id)
        if owner is not None and owned_by is not None and owned_by != owner:
            raise NotOwner(f"cannot resume run {run_id}: it belongs to another session")
