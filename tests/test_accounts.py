"""Lab accounts: argon2 hashes, expiring sessions, rate-limited login, the `berds users` CLI."""
import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest
from argon2 import PasswordHasher

from berds_core.accounts import MAX_FAILURES, WINDOW, AccountError, Accounts, LoginError
from berds_core.store import Store

ROOT = Path(__file__).resolve().parents[1]
FAST = PasswordHasher(time_cost=1, memory_cost=1024, parallelism=1)  # same algorithm, cheap for tests
SECRET = "correct horse battery"


class Clock:
    def __init__(self, t=1_000_000.0):
        self.t = t

    def __call__(self):
        return self.t


@pytest.fixture()
def acc(tmp_path):
    store = Store(tmp_path / "lab.db")
    yield Accounts(store, hasher=FAST, clock=Clock())
    store.close()


def test_password_stored_only_as_salted_argon2_hash(acc, tmp_path):
    acc.add("alice", "annotator", SECRET)
    acc.add("bob", "annotator", SECRET)
    hashes = [r[0] for r in acc.store._read("SELECT password_hash FROM users ORDER BY name")]
    assert all(h.startswith("$argon2id$") for h in hashes)
    assert hashes[0] != hashes[1]  # a random salt per hash: same password, different hashes
    acc.store.close()
    raw = (tmp_path / "lab.db").read_bytes() + b"".join(p.read_bytes() for p in tmp_path.glob("lab.db-*"))
    assert SECRET.encode() not in raw


def test_policy_names_roles_and_duplicates(acc):
    with pytest.raises(AccountError, match="at least 8"):
        acc.add("alice", "annotator", "short")
    with pytest.raises(AccountError, match="user name"):
        acc.add("alice123", "annotator", "ALICE123")
    with pytest.raises(AccountError, match="role"):
        acc.add("alice", "boss", SECRET)
    with pytest.raises(AccountError, match="letters"):
        acc.add("<script>", "annotator", SECRET)
    acc.add("alice", "annotator", SECRET)
    with pytest.raises(AccountError, match="exists"):
        acc.add("alice", "admin", SECRET)
    try:
        acc.add("carol", "annotator", "tiny")
    except AccountError as e:
        assert "tiny" not in str(e)  # an error never echoes the password


def test_login_session_and_logout(acc):
    acc.add("alice", "reviewer", SECRET)
    token, user = acc.login("alice", SECRET, client="127.0.0.1")
    assert user.role == "reviewer" and len(token) >= 40
    assert acc.session_user(token).name == "alice"
    stored = [r[0] for r in acc.store._read("SELECT token_hash FROM sessions")]
    assert token not in stored and len(stored[0]) == 64  # only the token's SHA-256 is kept
    assert acc.session_user("forged-token") is None
    acc.logout(token)
    assert acc.session_user(token) is None


def test_sessions_expire_idle_and_absolute(acc, monkeypatch):
    monkeypatch.setenv("BERDS_SESSION_IDLE_MIN", "30")
    monkeypatch.setenv("BERDS_SESSION_HOURS", "2")
    acc.add("alice", "annotator", SECRET)
    token, _ = acc.login("alice", SECRET)
    clock = acc.clock
    clock.t += 29 * 60
    assert acc.session_user(token) is not None  # used within 30 min: idle clock restarts
    clock.t += 29 * 60
    assert acc.session_user(token) is not None
    clock.t += 31 * 60
    assert acc.session_user(token) is None  # 31 min idle
    token, _ = acc.login("alice", SECRET)
    for _ in range(5):  # busy all the time, but the session is 2 h at most
        clock.t += 25 * 60
        acc.session_user(token)
    assert acc.session_user(token) is None


def test_wrong_passwords_are_rate_limited(acc):
    acc.add("alice", "annotator", SECRET)
    for _ in range(MAX_FAILURES):
        with pytest.raises(LoginError, match="wrong name or password"):
            acc.login("alice", "not the password", client="10.0.0.9")
    # blocked now, even with the right password, without checking it
    with pytest.raises(LoginError, match="too many"):
        acc.login("alice", SECRET, client="10.0.0.9")
    rows = acc.store._read("SELECT COUNT(*) FROM login_attempts")[0][0]
    assert rows == MAX_FAILURES  # the refused attempt was not even tried
    acc.clock.t += WINDOW + 1
    token, _ = acc.login("alice", SECRET)
    assert acc.session_user(token).name == "alice"
    # unknown names get the same answer as wrong passwords (no user enumeration)
    with pytest.raises(LoginError, match="wrong name or password"):
        acc.login("mallory", SECRET)
    audit = acc.store.audit_log(refused_only=True)
    assert any(a["detail"] == "rate limited" for a in audit)
    assert all(SECRET not in json.dumps(a) and "not the password" not in json.dumps(a) for a in acc.store.audit_log())


def test_disable_and_reset_end_sessions(acc):
    acc.add("alice", "annotator", SECRET)
    token, _ = acc.login("alice", SECRET)
    acc.disable("alice")
    assert acc.session_user(token) is None
    with pytest.raises(LoginError):
        acc.login("alice", SECRET)
    acc.enable("alice")
    token, _ = acc.login("alice", SECRET)
    acc.reset("alice", "a brand new secret", role="reviewer")
    assert acc.session_user(token) is None
    with pytest.raises(LoginError):
        acc.login("alice", SECRET)
    _, user = acc.login("alice", "a brand new secret")
    assert user.role == "reviewer"
    assert [u.name for u in acc.list()] == ["alice"] and acc.names("reviewer") == ["alice"]


def test_nothing_secret_in_logs(acc, caplog):
    caplog.set_level(logging.DEBUG)
    acc.add("alice", "annotator", SECRET)
    acc.login("alice", SECRET)
    with pytest.raises(LoginError):
        acc.login("alice", "wrong password!")
    text = caplog.text
    assert SECRET not in text and "wrong password!" not in text and "$argon2" not in text


# ---- the CLI, as a real process: passwords from stdin, never from argv, never printed ----

def _cli(*argv, stdin=""):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-m", "berds_core", "users", *argv], input=stdin, capture_output=True,
                          text=True, env=env, cwd=str(ROOT), timeout=120)


def test_users_cli_add_list_disable_reset(tmp_path):
    db = str(tmp_path / "lab.db")
    out = _cli("add", "alice", "--role", "admin", "--db", db, "--json", stdin=SECRET + "\n")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == {"db": db, "user": "alice", "role": "admin", "active": True}
    assert SECRET not in out.stdout + out.stderr
    out = _cli("add", "bob", "--role", "annotator", "--db", db, "--password-stdin", stdin="short\n")
    assert out.returncode == 2 and "at least 8" in out.stderr and "short" not in out.stderr.replace("at least", "")
    assert len(out.stderr.strip().splitlines()) == 1
    out = _cli("add", "bob", "--role", "annotator", "--db", db, "--password-stdin", stdin="")
    assert out.returncode == 2 and "no password" in out.stderr
    listed = json.loads(_cli("list", "--db", db, "--json").stdout)
    assert [u["name"] for u in listed["users"]] == ["alice"]
    assert "$argon2" not in json.dumps(listed) and "password" not in json.dumps(listed)
    assert _cli("disable", "alice", "--db", db).returncode == 0
    store = Store(db)
    assert Accounts(store).get("alice").active is False
    store.close()
    out = _cli("reset", "alice", "--db", db, "--json", stdin="another long secret\n")
    assert out.returncode == 0 and "another long secret" not in out.stdout + out.stderr
    out = _cli("reset", "nobody", "--db", db, stdin="another long secret\n")
    assert out.returncode == 2 and "no user" in out.stderr
    # no option takes a password on the command line
    out = _cli("add", "carol", "--role", "annotator", "--password", SECRET, "--db", db)
    assert out.returncode == 2 and "unrecognized arguments" in out.stderr
    audit = json.loads(_cli("audit", "--db", db, "--json").stdout)["events"]
    assert [a["action"] for a in audit] == ["users.add", "users.disable", "users.reset"]
    # the database's bytes never hold a password
    raw = b"".join(p.read_bytes() for p in tmp_path.glob("lab.db*"))
    assert SECRET.encode() not in raw and b"another long secret" not in raw


def test_users_cli_missing_database_is_not_created(tmp_path):
    db = tmp_path / "nowhere" / "lab.db"
    out = _cli("list", "--db", str(db))
    assert out.returncode == 2 and "no annotation database" in out.stderr
    assert not db.parent.exists()
