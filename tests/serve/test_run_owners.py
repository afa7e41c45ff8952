"""Tests for rdqn.serve.run_owners: who owns which run, and who may control it."""

from __future__ import annotations

import pytest

from rdqn.serve import registry
from rdqn.serve.run_owners import NotOwner, RunOwners


def test_a_run_belongs_to_the_owner_assigned_until_it_is_nobodys() -> None:
    owners = RunOwners()
    assert owners.owner_of("r1") is None
    owners.assign("r1", "alice")
    assert owners.owner_of("r1") == "alice"
    owners.assign("r1", "bob")  # resumed by another owner
    assert owners.owner_of("r1") == "bob"
    owners.assign("r1", None)  # resumed from the command line
    assert owners.owner_of("r1") is None
    owners.assign("r1", "alice")
    owners.forget("r1")
    owners.forget("r1")  # forgetting twice, or a run never owned, is fine
    assert owners.owner_of("r1") is None


def test_release_makes_one_owners_runs_nobodys() -> None:
    owners = RunOwners()
    owners.assign("r1", "alice")
    owners.assign("r2", "bob")
    owners.assign("r3", "alice")
    owners.release("alice")
    assert [owners.owner_of(r) for r in ("r1", "r2", "r3")] == [None, "bob", None]
    owners.release("nobody-known")
    assert owners.owner_of("r2") == "bob"


def test_only_the_owner_or_the_admin_may_control_a_run() -> None:
    owners = RunOwners()
    owners.assign("r1", "alice")
    assert owners.may_control("r1", "alice")
    assert owners.may_control("r1", None)
    assert not owners.may_control("r1", "bob")
    # A run nobody owns: only the admin.
    assert owners.may_control("r2", None)
    assert not owners.may_control("r2", "alice")


def test_check_names_the_action_the_run_and_whose_it_is() -> None:
    owners = RunOwners()
    owners.assign("r1", "alice")
    owners.check("r1", "alice", "pause")
    owners.check("r1", None, "stop")
    owners.check("r2", None, "delete")
    with pytest.raises(NotOwner) as another:
        owners.check("r1", "bob", "stop")
    assert str(another.value) == (
        "cannot stop run r1: it belongs to another session; only the session that started it, "
        "or the server's admin, may"
    )
    with pytest.raises(NotOwner) as nobody:
        owners.check("r2", "alice", "delete")
    assert str(nobody.value) == (
        "cannot delete run r2: it belongs to no session; only the session that started it, "
        "or the server's admin, may"
    )


def test_any_owner_may_resume_a_run_nobody_owns_but_not_anothers() -> None:
    owners = RunOwners()
    owners.assign("r1", "alice")
    owners.check_resume("r1", "alice")
    owners.check_resume("r1", None)
    owners.check_resume("r2", "bob")  # nobody's
    with pytest.raises(NotOwner) as err:
        owners.check_resume("r1", "bob")
    assert str(err.value) == "cannot resume run r1: it belongs to another session"


def test_not_owner_is_a_permission_error_still_importable_from_the_registry() -> None:
    assert issubclass(NotOwner, PermissionError)
    assert registry.NotOwner is NotOwner
    assert "NotOwner" in registry.__all__
