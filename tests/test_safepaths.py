"""Paths typed into the app resolve only under the allowed roots, before anything is read."""
import os

import pytest

from berds_core.errors import InputError
from berds_core.files.safepaths import allowed_roots, resolve_user_path
from web_servers import recording_server


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


# ---- models and server addresses typed into the app ----

def test_typed_models_hub_ids_pass_folders_only_under_a_root(roots, tmp_path, monkeypatch):
    from berds_core.judges import app_judge_spec
    from berds_core.files.safepaths import resolve_user_model

    assert resolve_user_model("mistralai/Mistral-7B-Instruct-v0.2") == "mistralai/Mistral-7B-Instruct-v0.2"
    assert resolve_user_model("gpt2") == "gpt2"
    (roots / "my-model").mkdir()
    assert resolve_user_model(str(roots / "my-model")) == str((roots / "my-model").resolve())
    # a folder that exists and one that does not, outside the roots: the same refusal, nothing opened
    answers = []
    for typed in ("/root/.cache", "/nonexistent-dir", "~/.ssh", "../../etc"):
        with pytest.raises(InputError) as e:
            app_judge_spec(f"hf:{typed}")
        answers.append(str(e.value).replace(typed, "PATH"))
    assert len(set(answers)) == 1 and "outside the folders" in answers[0]
    with pytest.raises(InputError, match="outside the folders"):
        app_judge_spec("hf:gpt2+/etc")  # the adapter too
    monkeypatch.chdir(tmp_path)
    (tmp_path / "beside").mkdir()
    with pytest.raises(InputError):
        resolve_user_model("beside")  # a "hub id" that is really a folder beside the app: a path, checked


def test_lab_mode_calls_only_the_operators_endpoints(monkeypatch):
    from berds_core.generators import try_generator
    from berds_core.judges import app_judge_spec

    monkeypatch.setenv("BERDS_AUTH", "lab")
    monkeypatch.delenv("BERDS_ALLOWED_ENDPOINTS", raising=False)
    with recording_server() as srv:
        base = srv.url + "/v1"
        gen, why = try_generator(f"openai:m@{base}")
        assert gen is None and "BERDS_ALLOWED_ENDPOINTS" in why
        for spec in (f"openai:m@{base}", f"berds-evaluator:{base}"):
            with pytest.raises(InputError, match="allowed endpoints"):
                app_judge_spec(spec)
        assert srv.requests == []  # refused without a single request
        monkeypatch.setenv("BERDS_ALLOWED_ENDPOINTS", f"https://api.example.org/v1, {base}")
        gen, why = try_generator(f"openai:m@{base}")
        assert why is None and srv.requests  # on the list: used
        assert app_judge_spec(f"openai:m@{base}/") == f"openai:m@{base}/"


def test_endpoint_matching(monkeypatch):
    from berds_core.net.endpoints import check_endpoint, is_allowed

    entries = ["http://127.0.0.1:8000/v1", "https://llm.lab.example/"]
    assert is_allowed("http://127.0.0.1:8000", entries) and is_allowed("http://127.0.0.1:8000/v1/", entries)
    assert is_allowed("HTTP://127.0.0.1:8000/v1", entries)
    assert is_allowed("https://llm.lab.example/any/path/v1", entries)  # a bare origin allows every path on it
    for url in ("http://127.0.0.1:8001/v1", "https://127.0.0.1:8000/v1", "http://127.0.0.1:8000/other/v1",
                "http://127.0.0.1:8000@evil.example/v1", "http://user:pw@127.0.0.1:8000/v1",
                "http://127.0.0.1:8000/v1?x=1", "http://127.0.0.1:8000/v1/../../x", "file:///etc/passwd",
                "http://llm.lab.example/"):
        assert not is_allowed(url, entries), url
    # open mode: unchanged while the operator sets no list; enforced once a list is set
    monkeypatch.delenv("BERDS_AUTH", raising=False)
    monkeypatch.delenv("BERDS_ALLOWED_ENDPOINTS", raising=False)
    assert check_endpoint("http://10.1.2.3:9000/v1") == "http://10.1.2.3:9000/v1"
    monkeypatch.setenv("BERDS_ALLOWED_ENDPOINTS", "http://127.0.0.1:8000/v1")
    with pytest.raises(InputError):
        check_endpoint("http://10.1.2.3:9000/v1")
