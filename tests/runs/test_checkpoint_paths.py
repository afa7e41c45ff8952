"""`rdqn.runs.checkpoint_paths`: a store's checkpoint folder, and paths stored relative to it."""

from pathlib import Path

from rdqn.runs.checkpoint_paths import CheckpointPaths


def test_a_file_in_the_home_is_stored_relative_and_read_under_the_home(tmp_path: Path) -> None:
    paths = CheckpointPaths(tmp_path / "home" / "rdqn.db")
    assert paths.folder == tmp_path / "home" / "checkpoints"
    assert paths.for_run("abc") == tmp_path / "home" / "checkpoints" / "abc.pt"
    assert paths.stored(paths.for_run("abc")) == "checkpoints/abc.pt"
    assert paths.read("checkpoints/abc.pt") == str(tmp_path / "home" / "checkpoints" / "abc.pt")


def test_a_copied_home_reads_its_own_files(tmp_path: Path) -> None:
    stored = CheckpointPaths(tmp_path / "a" / "rdqn.db").stored(
        tmp_path / "a" / "checkpoints" / "r.pt"
    )
    copy = CheckpointPaths(tmp_path / "b" / "rdqn.db")
    assert copy.read(stored) == str(tmp_path / "b" / "checkpoints" / "r.pt")


def test_a_file_elsewhere_is_stored_and_read_absolute(tmp_path: Path) -> None:
    paths = CheckpointPaths(tmp_path / "home" / "rdqn.db")
    elsewhere = tmp_path / "saved" / "r.pt"
    assert paths.stored(elsewhere) == str(elsewhere)
    assert paths.read(str(elsewhere)) == str(elsewhere)
    assert paths.read(None) is None


def test_a_relative_store_path_still_stores_relative_to_its_folder(
    tmp_path: Path, monkeypatch
) -> None:
    monkeypatch.chdir(tmp_path)
    paths = CheckpointPaths(Path("home") / "rdqn.db")
    assert paths.stored(Path("home/checkpoints/x.pt")) == "checkpoints/x.pt"
    assert paths.read("checkpoints/x.pt") == str(tmp_path / "home" / "checkpoints" / "x.pt")


def test_only_files_in_the_folder_are_the_stores_own(tmp_path: Path) -> None:
    paths = CheckpointPaths(tmp_path / "home" / "rdqn.db")
    assert paths.is_own(str(paths.for_run("r")))
    assert paths.is_own(str(tmp_path / "home" / "checkpoints" / "sub" / "r.pt"))
    assert not paths.is_own(str(tmp_path / "home" / "r.pt"))
    assert not paths.is_own(str(tmp_path / "home" / "checkpoints" / ".." / "r.pt"))


def test_a_change_of_directory_after_opening_changes_nothing(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    paths = CheckpointPaths(Path("home") / "rdqn.db")
    own = paths.for_run("r")
    monkeypatch.chdir("/")
    assert own == tmp_path / "home" / "checkpoints" / "r.pt"
    assert paths.for_run("r") == own
    assert paths.is_own(str(own))
    assert paths.stored(own) == "checkpoints/r.pt"
