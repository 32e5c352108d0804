"""Lab mode, fourth hardening round (issue 38, items 8 and 10): the engine side, with real SQLite, real
threads, a real Streamlit handler and a real server where a server is involved.

- 100 sign-in attempts sent at once from one address: no more password checks than the limit.
- A blocked address still lets a co-worker who signed in from it before through (after the name's wait).
- A password typed into the name field is stored nowhere as typed (audit log, attempt counts).
- A user deleted and created again under the same name does not inherit the old sessions (cookies).
- A v2 database upgrades in place and its open sessions keep working.
- ``clear_cache`` over the websocket: ignored in lab mode unless an admin signed in in that tab.
- The lab database's folder is not a readable root in lab mode; header errors quote no cell.
- ``vllm:`` judge specs go through the folder check.
- Media files (downloads) need a live session cookie on a real ``serve.py`` server.
"""
from __future__ import annotations

import json
import os
import sqlite3
import threading

import pytest
from argon2 import PasswordHasher

from berds_core.errors import InputError
from berds_core.lab.accounts import MAX_CLIENT_FAILURES, Accounts, LoginError
from berds_core.lab.store import Store

SECRET = "correct horse battery"


class CountingHasher(PasswordHasher):
    def __init__(self):
        super().__init__(time_cost=1, memory_cost=1024, parallelism=1)
        self.verified = 0
        self._lock = threading.Lock()

    def verify(self, *a, **k):
        with self._lock:
            self.verified += 1
        return super().verify(*a, **k)


def test_a_hundred_attempts_at_once_get_no_more_checks_than_the_limit(tmp_path):
    store = Store(tmp_path / "lab.db")
    hasher = CountingHasher()
    Accounts(store, hasher=hasher).add("alice", "annotator", SECRET)
    hasher.verified = 0
    start = threading.Barrier(100)
    outcomes = []

    def attempt(i):
        acc = Accounts(store, hasher=hasher, sleep=lambda s: None)  # the name's wait is not what is measured
        start.wait()
        try:
            acc.login(f"user{i}", "not the password at all", client="10.9.9.9")
            outcomes.append("ok")
        except LoginError as e:
            outcomes.append(str(e))

    threads = [threading.Thread(target=attempt, args=(i,)) for i in range(100)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert hasher.verified <= MAX_CLIENT_FAILURES  # counted before the check, atomically
    refused = [o for o in outcomes if "too many failed sign-ins" in o]
    assert len(outcomes) == 100 and len(refused) >= 100 - MAX_CLIENT_FAILURES
    rows = store.query("SELECT COUNT(*) FROM login_attempts WHERE ok = -1")[0][0]
    assert rows == 0  # every attempt that was checked is settled
    store.close()


def test_a_blocked_address_lets_a_known_co_worker_through_after_the_name_wait(tmp_path):
    store = Store(tmp_path / "lab.db")
    slept = []
    acc = Accounts(store, hasher=PasswordHasher(time_cost=1, memory_cost=1024, parallelism=1),
                   sleep=slept.append)
    acc.add("bob", "annotator", SECRET)
    acc.add("carol", "annotator", SECRET)
    acc.login("bob", SECRET, client="198.51.100.1")  # bob works behind the office NAT
    for i in range(MAX_CLIENT_FAILURES):  # someone else behind the same NAT guesses
        with pytest.raises(LoginError):
            acc.login(f"guess{i}", "nope nope nope", client="198.51.100.1")
    with pytest.raises(LoginError, match="too many failed sign-ins"):
        acc.login("carol", SECRET, client="198.51.100.1")  # never signed in from here: waits for the address
    token, user = acc.login("bob", SECRET, client="198.51.100.1")  # a known co-worker: checked, signed in
    assert user.name == "bob" and acc.session_user(token).name == "bob"
    for _ in range(4):  # guessing bob's password from the blocked address meets bob's own slow-down
        with pytest.raises(LoginError, match="wrong name or password"):
            acc.login("bob", "not bob's password", client="198.51.100.1")
    assert slept and slept[-1] > 0.5  # about 1 s: the first wait after the free failures
    store.close()


def test_a_password_typed_as_the_name_is_stored_nowhere(tmp_path):
    store = Store(tmp_path / "lab.db")
    acc = Accounts(store, hasher=PasswordHasher(time_cost=1, memory_cost=1024, parallelism=1), sleep=lambda s: None)
    acc.add("dana", "annotator", SECRET)
    typed = "my secret passphrase 42"
    for _ in range(2):
        with pytest.raises(LoginError):
            acc.login(typed, "", client="10.1.1.1")
    store.close()
    raw = (tmp_path / "lab.db").read_bytes() + b"".join(p.read_bytes() for p in tmp_path.glob("lab.db-*"))
    assert typed.encode() not in raw
    with Store(tmp_path / "lab.db") as s:
        actors = {a["actor"] for a in s.audit.rows() if a["action"] == "login"}
        keys = {r[0] for r in s.query("SELECT user FROM login_attempts")}
    assert len(actors) == 1 and next(iter(actors)).startswith("unknown-name:")  # grouped, not readable
    assert keys == actors


def test_a_recreated_user_does_not_inherit_old_sessions(tmp_path):
    store = Store(tmp_path / "lab.db")
    acc = Accounts(store, hasher=PasswordHasher(time_cost=1, memory_cost=1024, parallelism=1))
    acc.add("erin", "reviewer", SECRET)
    token, _ = acc.login("erin", SECRET, client="10.2.2.2")
    assert acc.session_user(token).name == "erin"
    con = sqlite3.connect(tmp_path / "lab.db")  # an operator removes the row by hand (sqlite3: no FK checks) ...
    con.execute("DELETE FROM users WHERE name = 'erin'")
    con.commit()
    con.close()
    acc.add("erin", "admin", SECRET + " new")  # ... and someone else gets the name later
    assert acc.session_user(token) is None  # the old cookie does not open the new account
    token2, _ = acc.login("erin", SECRET + " new", client="10.2.2.2")
    assert acc.session_user(token2).role == "admin"
    with store.transaction() as c:  # a row re-inserted by hand (no uid) opens no old session either
        c.execute("UPDATE users SET uid = NULL WHERE name = 'erin'")
    assert acc.session_user(token2) is None
    store.close()


def test_a_version_2_database_keeps_its_sessions_after_the_upgrade(tmp_path):
    from berds_core.lab.db import SCHEMA_V1, SCHEMA_V2

    path = tmp_path / "old.db"
    con = sqlite3.connect(path)
    con.executescript("CREATE TABLE schema_version (version INTEGER NOT NULL, applied_at TEXT NOT NULL);"
                      + SCHEMA_V1 + SCHEMA_V2 + "INSERT INTO schema_version VALUES (1, 'then');"
                      "INSERT INTO schema_version VALUES (2, 'then');")
    con.commit()
    con.close()
    hasher = PasswordHasher(time_cost=1, memory_cost=1024, parallelism=1)
    # a session opened by the version-2 code: written as it wrote it (no uid column yet)
    import hashlib
    import time

    con = sqlite3.connect(path)
    now = time.time()
    con.execute("INSERT INTO users (name, role, password_hash, active, created_at, updated_at) VALUES "
                "('fay', 'annotator', ?, 1, 'then', 'then')", (hasher.hash(SECRET),))
    con.execute("INSERT INTO sessions (token_hash, user, created_at, last_seen, expires_at) VALUES (?, 'fay', ?, ?, ?)",
                (hashlib.sha256(b"old-token").hexdigest(), now, now, now + 3600))
    con.commit()
    con.close()
    with Store(path) as s:
        assert s.schema_version == 6
        assert Accounts(s, hasher=hasher).session_user("old-token").name == "fay"


def test_clear_cache_from_the_websocket_needs_a_signed_in_admin(tmp_path, monkeypatch):
    import streamlit as st
    from streamlit.runtime.app_session import AppSession

    from studio_ui.guards import install

    db = tmp_path / "lab.db"
    with Store(db) as s:
        acc = Accounts(s, hasher=PasswordHasher(time_cost=1, memory_cost=1024, parallelism=1))
        acc.add("root1", "admin", SECRET)
        acc.add("ann1", "annotator", SECRET)
        admin_token, _ = acc.login("root1", SECRET)
        ann_token, _ = acc.login("ann1", SECRET)
    monkeypatch.setenv("BERDS_ANNOTATIONS_DB", str(db))
    monkeypatch.setenv("BERDS_AUTH", "lab")
    install()
    calls = []

    @st.cache_data
    def cached(x):
        calls.append(x)
        return x

    class FakeSession:  # the handler reads only this session's state
        def __init__(self, state):
            self._session_state = state

    def clear_from(state) -> bool:
        cached(1)
        n = len(calls)
        AppSession._handle_clear_cache_request(FakeSession(state))
        cached(1)
        return len(calls) > n  # recomputed: the cache was cleared

    assert not clear_from({})  # a visitor who has not signed in
    assert not clear_from({"lab_token": ann_token})  # an annotator
    assert clear_from({"lab_token": admin_token})  # the admin's own tab
    monkeypatch.setenv("BERDS_AUTH", "open")
    assert clear_from({})  # open mode: as Streamlit does


def test_the_lab_database_folder_is_no_readable_root_in_lab_mode(tmp_path, monkeypatch):
    from berds_core.files.safepaths import allowed_roots, resolve_user_path

    lab = tmp_path / "labdir"
    lab.mkdir()
    (lab / "labels-export.tsv").write_text("question\tid\tdocument\tperspective\tlabel\nQ\t1\tD\tP\t1\n")
    monkeypatch.setenv("BERDS_ANNOTATIONS_DB", str(lab / "lab.db"))
    monkeypatch.setenv("BERDS_DATA_ROOTS", str(tmp_path))  # a root above it does not open it either
    monkeypatch.setenv("BERDS_AUTH", "open")
    assert resolve_user_path(str(lab / "labels-export.tsv")) == (lab / "labels-export.tsv").resolve()
    monkeypatch.setenv("BERDS_AUTH", "lab")
    assert lab.resolve() not in allowed_roots()
    for text in (str(lab / "labels-export.tsv"), str(lab / "lab.db"), str(lab)):
        with pytest.raises(InputError, match="outside the folders this app may open"):
            resolve_user_path(text)


def test_header_errors_quote_no_cell(tmp_path):
    from berds_core.corpora.memory import load_corpus
    from berds_core.datasets import load_questions

    f = tmp_path / "noheader.csv"
    f.write_text("Secret question?,1,Secret passage,Secret view,1,ann2\n")
    for load in (load_questions, load_corpus):
        with pytest.raises(InputError) as e:
            load(str(f))
        assert "Secret" not in str(e.value) and "ann2" not in str(e.value)
        assert "6 cells" in str(e.value)


def test_vllm_judge_specs_go_through_the_folder_check(tmp_path, monkeypatch):
    from berds_core.judges import app_judge_spec

    monkeypatch.setenv("BERDS_DATA_ROOTS", str(tmp_path))
    for spec in ("vllm:/etc", "vllm:/etc+/root", "vllm:some/model+/etc/passwd"):
        with pytest.raises(InputError, match="outside the folders this app may open"):
            app_judge_spec(spec)
    (tmp_path / "m").mkdir()
    assert app_judge_spec(f"vllm:{tmp_path / 'm'}") == f"vllm:{(tmp_path / 'm').resolve()}"
    assert app_judge_spec("vllm:org/model") == "vllm:org/model" and app_judge_spec("vllm") == "vllm"


@pytest.mark.browser
@pytest.mark.slow
def test_media_downloads_need_a_session_on_a_real_server(tmp_path):
    """A download drawn for an admin is at /media/<hash> for a while: without the lab cookie it is 403. Streamlit's
    metrics: 403 to a visitor and to a signed-in annotator, served to an admin."""
    import urllib.error
    import urllib.request

    from browser_harness import ROOT, skip_reason, streamlit_server

    reason = skip_reason()
    if reason:
        pytest.skip(reason)
    db = tmp_path / "lab.db"
    with Store(db) as s:
        acc = Accounts(s, hasher=PasswordHasher(time_cost=1, memory_cost=1024, parallelism=1))
        acc.add("root1", "admin", SECRET)
        acc.add("ann1", "annotator", SECRET)
        token, _ = acc.login("root1", SECRET)
        ann_token, _ = acc.login("ann1", SECRET)
    with streamlit_server(ROOT / "serve.py", timeout=180,
                          env={"BERDS_ANNOTATIONS_DB": str(db), "BERDS_AUTH": "lab"}) as url:
        def get(path, cookie=None):
            req = urllib.request.Request(url + path, headers={"Cookie": cookie} if cookie else {})
            try:
                with urllib.request.urlopen(req, timeout=30) as r:
                    return r.status, r.read()
            except urllib.error.HTTPError as e:
                return e.code, e.read()

        status, body = get("/media/0123456789abcdef0123456789abcdef0123456789abcdef.csv")
        assert status == 403 and b"sign in" in body
        status, _ = get("/media/0123456789abcdef0123456789abcdef0123456789abcdef.csv", f"berds_session={token}")
        assert status == 404  # past the guard: Streamlit itself answers (no such file)
        assert get("/_stcore/health")[0] == 200  # nothing else is gated by it
        status, body = get("/_stcore/metrics")  # the lab's activity: not for visitors
        assert status == 403 and b"sign in" in body
        status, body = get("/_stcore/metrics", f"berds_session={ann_token}")  # nor for annotators
        assert status == 403 and b"reviewers and admins" in body
        status, _ = get("/_stcore/metrics", f"berds_session={token}")  # a lead's
        assert status == 200


def test_the_guard_covers_uploads_media_and_metrics_only():
    from berds_core.lab.session import _guarded

    def scope(path, method="GET"):
        return {"type": "http", "path": path, "method": method}

    assert _guarded(scope("/_stcore/metrics")) and _guarded(scope("/base/_stcore/metrics/"))
    assert _guarded(scope("/media/abc.csv")) and _guarded(scope("/_stcore/upload_file/x/y", "PUT"))
    assert not _guarded(scope("/_stcore/health")) and not _guarded(scope("/"))


def test_a_media_file_is_served_only_to_the_user_whose_tab_holds_it(tmp_path, monkeypatch):
    """The lab's guard in front of a server's ``/media`` route, over HTTP: a visitor gets 403, another signed-in
    user who has the URL 404 (as for no file), the user whose tab holds the export the file; with no owner
    lookup installed nobody gets it."""
    from starlette.applications import Starlette
    from starlette.middleware import Middleware
    from starlette.responses import PlainTextResponse
    from starlette.routing import Route
    from starlette.testclient import TestClient

    from berds_core.lab import session as lab_session

    db = tmp_path / "lab.db"
    with Store(db) as s:
        acc = Accounts(s, hasher=PasswordHasher(time_cost=1, memory_cost=1024, parallelism=1))
        acc.add("alice", "annotator", SECRET)
        acc.add("root1", "admin", SECRET)
        alice, _ = acc.login("alice", SECRET)
        root, _ = acc.login("root1", SECRET)
    monkeypatch.setenv("BERDS_ANNOTATIONS_DB", str(db))
    monkeypatch.setenv("BERDS_AUTH", "lab")
    fid = "0123456789abcdef0123456789abcdef0123456789abcdef01234567"

    async def media(request):
        return PlainTextResponse("ann1 labels of alice")

    app = Starlette(routes=[Route("/media/{file_id}", media)], middleware=lab_session.middleware())
    monkeypatch.setitem(lab_session._MEDIA, "owners", lambda file_id: {"alice"} if file_id == fid else set())
    with TestClient(app) as client:
        def get(path, token=None):
            client.cookies.clear()
            if token:
                client.cookies.set(lab_session.COOKIE, token)
            return client.get(path)

        assert get(f"/media/{fid}.csv").status_code == 403
        r = get(f"/media/{fid}.csv", root)  # an admin who has the URL: not their download
        assert r.status_code == 404 and "alice" not in r.text
        r = get(f"/media/{fid}.csv", alice)
        assert r.status_code == 200 and r.text == "ann1 labels of alice"
        assert client.head(f"/media/{fid}.csv").status_code == 200  # HEAD is checked the same way (alice's cookie)
        assert get(f"/media/{'f' * 56}.csv", alice).status_code == 404
        monkeypatch.setitem(lab_session._MEDIA, "owners", None)
        assert get(f"/media/{fid}.csv", alice).status_code == 404  # no lookup: closed, not open


def test_the_metrics_are_for_leads_only(tmp_path, monkeypatch):
    """The lab's guard in front of ``/_stcore/metrics`` over HTTP: a visitor and a signed-in annotator get 403, a
    reviewer and an admin the metrics."""
    from starlette.applications import Starlette
    from starlette.responses import PlainTextResponse
    from starlette.routing import Route
    from starlette.testclient import TestClient

    from berds_core.lab import session as lab_session

    db = tmp_path / "lab.db"
    with Store(db) as s:
        acc = Accounts(s, hasher=PasswordHasher(time_cost=1, memory_cost=1024, parallelism=1))
        tokens = {}
        for name, role in (("alice", "annotator"), ("rita", "reviewer"), ("root1", "admin")):
            acc.add(name, role, SECRET)
            tokens[name], _ = acc.login(name, SECRET)
    monkeypatch.setenv("BERDS_ANNOTATIONS_DB", str(db))
    monkeypatch.setenv("BERDS_AUTH", "lab")

    async def metrics(request):
        return PlainTextResponse("session_state_count 4")

    app = Starlette(routes=[Route("/_stcore/metrics", metrics)], middleware=lab_session.middleware())
    with TestClient(app) as client:
        def get(token=None):
            client.cookies.clear()
            if token:
                client.cookies.set(lab_session.COOKIE, token)
            return client.get("/_stcore/metrics")

        assert get().status_code == 403
        r = get(tokens["alice"])
        assert r.status_code == 403 and "session_state" not in r.text
        assert get(tokens["rita"]).text == get(tokens["root1"]).text == "session_state_count 4"


def test_media_owners_reads_which_tabs_hold_a_file_from_streamlits_media_manager(monkeypatch):
    """The lookup the app installs (``studio_ui.guards.media_owners``) against Streamlit's own media file manager:
    the tabs (sessions) whose elements point at the file, and the user each tab's last run recorded."""
    from types import SimpleNamespace

    import streamlit.runtime.media_file_manager as mfm
    from streamlit.runtime.memory_media_file_storage import MemoryMediaFileStorage

    from berds_core.lab.session import MEDIA_OWNER_KEY, media_file_id
    from studio_ui.guards import media_owners

    mgr = mfm.MediaFileManager(MemoryMediaFileStorage("/media"))
    urls = {}
    for sid, data in (("tab-a", b"alice's labels"), ("tab-b", b"bob's labels"), ("tab-c", b"alice's labels")):
        monkeypatch.setattr(mfm, "_get_session_id", lambda sid=sid: sid)
        urls[sid] = mgr.add(data, "text/csv", "coord-1", file_name="my-labels.csv", is_for_static_download=True)
    states = {"tab-a": {MEDIA_OWNER_KEY: "alice"}, "tab-b": {MEDIA_OWNER_KEY: "bob"}, "tab-c": {}}
    runtime = SimpleNamespace(media_file_mgr=mgr, _session_mgr=SimpleNamespace(
        get_session_info=lambda sid: SimpleNamespace(session=SimpleNamespace(_session_state=states[sid]))))
    assert urls["tab-a"] == urls["tab-c"] != urls["tab-b"]  # the same bytes, the same URL
    assert media_owners(media_file_id(urls["tab-a"]), runtime) == {"alice"}  # tab-c is signed out
    assert media_owners(media_file_id(urls["tab-b"]), runtime) == {"bob"}
    assert media_owners("nosuch", runtime) == set()


def test_a_new_database_folder_and_an_export_are_the_owners_alone(tmp_path):
    import stat

    from berds_core.cli import main

    db = tmp_path / "new" / "lab.db"
    assert main(["annotations", "demo", "--db", str(db), "--annotators", "a", "--n", "4", "--quiet"]) == 0
    assert stat.S_IMODE(db.parent.stat().st_mode) == 0o700 and stat.S_IMODE(db.stat().st_mode) == 0o600
    out = tmp_path / "labels.tsv"
    assert main(["annotations", "export", "--db", str(db), "--out", str(out), "--quiet"]) == 0
    assert stat.S_IMODE(out.stat().st_mode) == 0o600
