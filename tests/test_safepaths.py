"""Paths typed into the app resolve only under the allowed roots, before anything is read."""
import os

import pytest

from berds_core.errors import InputError
from berds_core.safepaths import allowed_roots, resolve_user_path


@pytest.fixture()
def roots(tmp_path, monkeypatch):
    data = tmp_path / "data"
    data.mkdir()
    (data / "q.jsonl").write_text("{}\n")
    monkeypatch.setenv("BERDS_DATA_ROOTS", str(data))
    monkeypatch.setenv("BERDS_ANNOTATIONS_DB", str(tmp_path / "ann" / "berds.db"))
    return data


def test_inside_a_root(roots):
    assert resolve_user_path(str(roots / "q.jsonl")) == (roots / "q.jsonl").resolve()
    assert resolve_user_path("q.jsonl") == (roots / "q.jsonl").resolve()  # relative: first root
    # the annotations folder is allowed even before it exists (a new database goes there)
    ann = resolve_user_path(str(roots.parent / "ann" / "new.db"), must_exist=False)
    assert ann.name == "new.db" and not ann.exists() and not ann.parent.exists()


@pytest.mark.parametrize("typed", ["/etc/passwd", "../../etc/passwd", "/etc", "~/.bashrc"])
def test_outside_is_refused_without_reading(roots, typed):
    with pytest.raises(InputError) as e:
        resolve_user_path(typed, what="questions file")
    msg = str(e.value)
    assert msg.startswith("questions file: ") and "outside the folders this app may open" in msg
    assert "root:" not in msg and str(roots) not in msg  # no contents, no server folders listed


def test_symlink_out_of_a_root_is_refused(roots):
    link = roots / "escape"
    os.symlink("/etc", link)
    with pytest.raises(InputError, match="outside"):
        resolve_user_path(str(link / "passwd"))


def test_missing_and_empty(roots):
    with pytest.raises(InputError, match="does not exist"):
        resolve_user_path(str(roots / "nope.jsonl"))
    with pytest.raises(InputError, match="is empty"):
        resolve_user_path("  ")


def test_roots_order(roots):
    r = allowed_roots()
    assert r[0] == roots.resolve() and r[1].name == "ann" and r[2].name == "uploads"
