"""Lab accounts: argon2 hashes, expiring sessions, rate-limited login, the `berds users` CLI."""
import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest
from argon2 import PasswordHasher

from berds_core.lab.accounts import (MAX_CLIENT_FAILURES, MIN_PASSWORD, NAME_FREE_FAILURES, NAME_MAX_DELAY, WINDOW,
                                 AccountError, Accounts, LoginError, client_address)
from berds_core.lab.store import Store

ROOT = Path(__file__).resolve().parents[1]
FAST = PasswordHasher(time_cost=1, memory_cost=1024, parallelism=1)  # same algorithm, cheap for tests
SECRET = "correct horse battery"


class Clock:
    def __init__(self, t=1_000_000.0):
        self.t = t
        self.slept = []

    def __call__(self):
        return self.t

    def sleep(self, seconds):  # a login that waits moves this clock instead of the test's time
        self.slept.append(seconds)
        self.t += seconds


@pytest.fixture()
def acc(tmp_path):
    store = Store(tmp_path / "lab.db")
    clock = Clock()
    yield Accounts(store, hasher=FAST, clock=clock, sleep=clock.sleep)
    store.close()


def test_password_stored_only_as_salted_argon2_hash(acc, tmp_path):
    acc.add("alice", "annotator", SECRET)
    acc.add("bob", "annotator", SECRET)
    hashes = [r[0] for r in acc.store.query("SELECT password_hash FROM users ORDER BY name")]
    assert all(h.startswith("$argon2id$") for h in hashes)
    assert hashes[0] != hashes[1]  # a random salt per hash: same password, different hashes
    acc.store.close()
    raw = (tmp_path / "lab.db").read_bytes() + b"".join(p.read_bytes() for p in tmp_path.glob("lab.db-*"))
    assert SECRET.encode() not in raw


def test_policy_names_roles_and_duplicates(acc):
    with pytest.raises(AccountError, match=f"at least {MIN_PASSWORD}"):
        acc.add("alice", "annotator", "short")
    with pytest.raises(AccountError, match="user name"):
        acc.add("alice.the.annotator", "annotator", "ALICE.THE.ANNOTATOR")
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
    stored = [r[0] for r in acc.store.query("SELECT token_hash FROM sessions")]
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


def test_wrong_passwords_slow_a_name_down_but_never_refuse_the_right_one(acc):
    acc.add("alice", "annotator", SECRET)
    clock = acc.clock
    for i in range(20):  # an attacker at 10.0.0.9 tries 20 passwords for alice
        with pytest.raises(LoginError, match="wrong name or password"):
            acc.login("alice", f"guess number {i}", client="10.0.0.9")
    waits = [w for w in clock.slept if w > 0]
    assert len(waits) == 20 - NAME_FREE_FAILURES  # the first ones are free, then every attempt waits ...
    assert waits == sorted(waits) and waits[0] == 1.0 and max(waits) == NAME_MAX_DELAY  # ... longer, up to the cap
    # the 21st attempt from that address waits: refused without checking the password
    n_attempts = acc.store.query("SELECT COUNT(*) FROM login_attempts")[0][0]
    with pytest.raises(LoginError, match="too many failed sign-ins from this address"):
        acc.login("alice", SECRET, client="10.0.0.9")
    assert acc.store.query("SELECT COUNT(*) FROM login_attempts")[0][0] == n_attempts  # not even tried
    assert acc.client_wait("10.0.0.9") > 0
    # alice herself, from her own address, signs in with the right password (after the name's wait)
    before = len(clock.slept)
    token, user = acc.login("alice", SECRET, client="10.0.0.5")
    assert user.name == "alice" and acc.session_user(token).name == "alice"
    assert clock.slept[before:] and clock.slept[-1] <= NAME_MAX_DELAY  # delayed, never refused
    # unknown names get the same answer as wrong passwords (no user enumeration)
    with pytest.raises(LoginError, match="wrong name or password"):
        acc.login("mallory", SECRET, client="10.0.0.7")
    audit = acc.store.audit.rows(refused_only=True)
    assert any(a["detail"] == "rate limited (address)" for a in audit)
    assert all(SECRET not in json.dumps(a) and "guess number" not in json.dumps(a) for a in acc.store.audit.rows())
    # the address may try again once its failures have left the window
    clock.t += WINDOW + 1
    assert acc.client_wait("10.0.0.9") == 0
    acc.login("alice", SECRET, client="10.0.0.9")


def test_a_success_does_not_reset_an_address(acc):
    """An attacker with an account of their own cannot clear their address's count by signing in."""
    acc.add("alice", "annotator", SECRET)
    acc.add("mallory", "annotator", SECRET)
    for i in range(MAX_CLIENT_FAILURES - 1):
        with pytest.raises(LoginError):
            acc.login("alice" if i % 2 else f"user{i}", "nope nope nope", client="10.0.0.66")
    acc.login("mallory", SECRET, client="10.0.0.66")  # success in between
    with pytest.raises(LoginError, match="wrong name"):
        acc.login("alice", "nope nope nope", client="10.0.0.66")  # the 20th failure
    with pytest.raises(LoginError, match="too many failed sign-ins"):
        acc.login("alice", SECRET, client="10.0.0.66")  # the 21st attempt for alice waits, right password or not
    assert acc.client_wait("10.0.0.66") > 0  # mallory's success cleared nothing
    # mallory has signed in from this address before: her own account is not locked by the address (a
    # co-worker behind the same NAT), it keeps its per-name slow-down, and it opens no door to alice's
    acc.login("mallory", SECRET, client="10.0.0.66")
    with pytest.raises(LoginError, match="too many failed sign-ins"):
        acc.login("alice", "nope nope nope", client="10.0.0.66")


def test_client_address_uses_only_the_proxy_header_the_operator_names(monkeypatch):
    monkeypatch.delenv("BERDS_PROXY_HEADER", raising=False)
    monkeypatch.delenv("BERDS_PROXY_HOPS", raising=False)
    headers = {"X-Forwarded-For": "6.6.6.6, 203.0.113.7", "X-Real-IP": "198.51.100.2"}
    # uvicorn's default (FORWARDED_ALLOW_IPS unset: `streamlit run app.py`) believed the client's own
    # X-Forwarded-For from a loopback connection: the connection is counted as this host, not as written
    monkeypatch.delenv("FORWARDED_ALLOW_IPS", raising=False)
    assert client_address("203.0.113.7", headers) == "127.0.0.1"
    monkeypatch.setenv("FORWARDED_ALLOW_IPS", "")  # serve.py: uvicorn trusts no forwarding header
    assert client_address(None, headers) == "127.0.0.1"  # localhost (Streamlit says None): still an address
    assert client_address("192.0.2.1", headers) == "192.0.2.1"  # headers ignored unless the operator names one
    monkeypatch.setenv("BERDS_PROXY_HEADER", "X-Forwarded-For")
    assert client_address(None, headers) == "203.0.113.7"  # the entry our proxy appended, not the client's own
    monkeypatch.setenv("BERDS_PROXY_HOPS", "2")
    assert client_address(None, headers) == "6.6.6.6"
    monkeypatch.setenv("BERDS_PROXY_HEADER", "X-Real-IP")
    assert client_address(None, headers) == "198.51.100.2"
    assert client_address("192.0.2.1", {}) == "192.0.2.1"  # header missing: the connection's address


class CountingHasher(PasswordHasher):
    def __init__(self):
        super().__init__(time_cost=1, memory_cost=1024, parallelism=1)
        self.calls = {"hash": 0, "verify": 0}

    def hash(self, *a, **k):
        self.calls["hash"] += 1
        return super().hash(*a, **k)

    def verify(self, *a, **k):
        self.calls["verify"] += 1
        return super().verify(*a, **k)


def test_known_and_unknown_names_cost_one_hash_each(tmp_path):
    store = Store(tmp_path / "lab.db")
    hasher = CountingHasher()
    Accounts(store, hasher=hasher).add("alice", "annotator", SECRET)
    for who in ("alice", "nobody", "alice", "nobody2"):
        for _ in range(2):  # a new Accounts per request, as the pages make them
            before = dict(hasher.calls)
            with pytest.raises(LoginError):
                Accounts(store, hasher=hasher).login(who, "wrong wrong wrong", client=f"10.1.{len(who)}.{_}")
            spent = {k: hasher.calls[k] - before[k] for k in before}
            assert spent["verify"] == 1 and spent["hash"] == 0, (who, spent)  # the dummy hash exists once
    store.close()


# The time a wrong password takes for a real name and for an unknown one is measured by bench/login_timing.py
# (a timing is never a unit test's assertion: it fails on a loaded machine); the test above checks the cause,
# one verification of the same cost for either name.


def test_sign_in_purges_ended_sessions(acc):
    acc.add("alice", "annotator", SECRET)
    old, _ = acc.login("alice", SECRET)
    gone, _ = acc.login("alice", SECRET)
    acc.logout(gone)
    acc.clock.t += 13 * 3600  # past the 12 h lifetime of `old`
    acc.login("alice", SECRET)
    hashes = [r[0] for r in acc.store.query("SELECT token_hash FROM sessions")]
    assert len(hashes) == 1 and acc.session_user(old) is None


def test_lab_database_is_private(tmp_path):
    db = tmp_path / "new.db"
    with Store(db) as s:
        Accounts(s, hasher=FAST).add("alice", "annotator", SECRET)
    for p in tmp_path.glob("new.db*"):
        assert p.stat().st_mode & 0o777 == 0o600, p
    old = tmp_path / "old.db"
    Store(old).close()
    os.chmod(old, 0o644)  # a database made before this rule
    with Store(old) as s:
        Accounts(s, hasher=FAST).add("bob", "annotator", SECRET)  # a hash goes in: owner only from now on
    assert old.stat().st_mode & 0o777 == 0o600


def test_password_policy_follows_nist(acc):
    from berds_core.lab.accounts import MAX_PASSWORD, check_password_policy

    check_password_policy("tea kettle on the windowsill", "alice")  # a passphrase: spaces and all lower case
    check_password_policy("Ünïcödé is fine here too", "alice")
    for bad, why in [("fourteen chars", "at least"), ("1234567890qwerty", "common passwords"),
                     ("passwordpassword", "too easy"), ("alicealicealice1", "too easy"),
                     ("x" * (MAX_PASSWORD + 1), "at most")]:
        with pytest.raises(AccountError, match=why) as e:
            check_password_policy(bad, "alice")
        assert bad not in str(e.value)
    with pytest.raises(AccountError, match="common passwords"):
        acc.add("carol", "annotator", "1234qwerasdfzxcv")


def test_disable_and_reset_end_sessions(acc):
    acc.add("alice", "annotator", SECRET)
    token, _ = acc.login("alice", SECRET)
    acc.disable("alice")
    assert acc.session_user(token) is None
    with pytest.raises(LoginError, match="wrong name or password"):  # the same answer as to a wrong password
        acc.login("alice", SECRET)
    with pytest.raises(LoginError, match="wrong name or password"):
        acc.login("alice", "not her password at all")
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
    assert out.returncode == 2 and f"at least {MIN_PASSWORD}" in out.stderr and "short" not in out.stderr.replace("at least", "")
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
