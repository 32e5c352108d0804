"""Lab accounts: users with roles, argon2 password hashes, sessions that expire, rate-limited login.

Everything lives in the annotation database (tables ``users``, ``sessions``,
``login_attempts``; their statements are the store's, :mod:`berds_core.lab.account_tables`), so one file is
one lab. This module decides; it holds no SQL.

- Passwords are stored only as argon2id hashes (``argon2-cffi``: a random salt
  per hash, memory-hard). They are never logged, printed, exported or put in
  an error message; :func:`check_password_policy` only says what is missing.
  The policy follows NIST SP 800-63B (rev. 4, single-factor passwords): length
  over composition rules -- at least ``MIN_PASSWORD`` characters, any
  characters, up to ``MAX_PASSWORD`` -- and a check against a list of common
  passwords (the 30,000 most common ones shipped by the ``zxcvbn`` package)
  and against guessable ones (the user name, repeats, sequences: ``zxcvbn``'s
  estimate below ``MIN_GUESS_SCORE``).
- A login returns a random session token (``secrets.token_urlsafe(32)``); the
  database keeps its SHA-256, never the token. A session ends after
  ``idle`` seconds without use or ``lifetime`` seconds after login, whichever
  comes first, at logout, or when the user is disabled or their password reset.
- Login timing does not tell which names exist: an unknown name is checked
  against a dummy hash computed once per process (and hasher settings), so
  both paths cost exactly one argon2 verification.
- Rate limits that never lock out the right person: a name's wrong passwords
  (within ``WINDOW`` seconds) make every later attempt for that name wait
  longer before its password is checked (``NAME_FREE_FAILURES`` free, then 1,
  2, 4 ... seconds, at most ``NAME_MAX_DELAY``) -- a correct password is
  delayed, never refused. Per client address (the real one: see
  :func:`client_address`), ``MAX_CLIENT_FAILURES`` wrong passwords within the
  window refuse further attempts from that address until the oldest leaves
  the window. A success resets neither count. The error never says whether
  the name exists. An attempt is counted *before* its password is checked,
  in the same transaction as the count (a "pending" row, ``ok = -1``, that
  counts as a failure until the check ends), so a hundred attempts sent at
  once get no more checks than the limit. A blocked address does not lock
  out co-workers behind the same NAT: a name that has signed in from that
  address before is still checked (with its per-name slow-down); other names
  wait for the address.
- Names that are not accounts (often a password typed into the name field)
  are never stored as typed: the audit log and the attempt counts keep a
  keyed hash of them (``unknown-name:<12 hex>``, HMAC-SHA256 with a random
  key kept in the database's settings), so repeated attempts still group.
- A session is bound to the user's ``uid``, a random id given when the row
  is created and never reused: a user deleted and created again under the
  same name does not inherit the old user's sessions (cookies).

Timing knobs come from the environment: ``BERDS_SESSION_IDLE_MIN`` (default
60) and ``BERDS_SESSION_HOURS`` (default 12).
"""
from __future__ import annotations

import hashlib
import hmac
import os
import secrets
import threading
import time
from dataclasses import dataclass
from functools import lru_cache

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError, VerifyMismatchError

from ..runtime.mode import lab_mode  # noqa: F401  (re-exported: pages ask the lab whether it is on)
from .store import Store, StoreError

ROLES = ("annotator", "reviewer", "admin")
MIN_PASSWORD = 15  # NIST SP 800-63B rev. 4: at least 15 characters for a password used alone
MAX_PASSWORD = 200  # NIST: allow at least 64; the login form takes 200
MIN_GUESS_SCORE = 2  # zxcvbn's 0-4 estimate: 0-1 are "too guessable" (repeats, sequences, common words)
NAME_FREE_FAILURES = 3  # wrong passwords for a name before its attempts start to wait
NAME_MAX_DELAY = 30.0  # seconds: the longest a name's attempt waits before its password is checked
MAX_CLIENT_FAILURES = 20  # wrong passwords from one client address within WINDOW, then it must wait
WINDOW = 15 * 60.0
ENV_PROXY_HEADER = "BERDS_PROXY_HEADER"
NAME_KEY_SETTING = "login_name_key"  # the HMAC key of names that are not accounts (never shown)
ENV_PROXY_HOPS = "BERDS_PROXY_HOPS"
NAME_CHARS = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-@")


class AccountError(ValueError):
    """A bad account request (unknown user, weak password, bad role...). Never contains a password."""


class LoginError(AccountError):
    """Login refused: wrong name or password, disabled account, or too many attempts."""


@dataclass(frozen=True)
class User:
    name: str
    role: str
    active: bool
    created_at: str
    last_login: str | None


def _env_float(name: str, default: float) -> float:
    try:
        return float(os.environ.get(name, default))
    except ValueError:
        return default


def session_limits() -> tuple[float, float]:
    """(idle seconds, lifetime seconds) of a session."""
    return _env_float("BERDS_SESSION_IDLE_MIN", 60) * 60, _env_float("BERDS_SESSION_HOURS", 12) * 3600


def check_name(name: str) -> str:
    name = str(name or "").strip()
    if not name or len(name) > 64 or not set(name) <= NAME_CHARS:
        raise AccountError("user names are 1-64 characters: letters, digits, '.', '_', '-', '@'")
    return name


@lru_cache(maxsize=1)
def common_passwords() -> frozenset[str]:
    """The common-password list (lower case): the ``zxcvbn`` package's 30,000 most common passwords."""
    from zxcvbn.frequency_lists import FREQUENCY_LISTS

    return frozenset(p.lower() for p in FREQUENCY_LISTS["passwords"])


def check_password_policy(password: str, name: str = "") -> None:
    """NIST SP 800-63B: long enough, not common, not guessable. Says what is wrong, never echoes it.

    No composition rules (no "one digit, one symbol"): any characters, spaces
    included; a passphrase of a few words is the intended kind of password.
    """
    if not isinstance(password, str) or len(password) < MIN_PASSWORD:
        raise AccountError(f"the password must have at least {MIN_PASSWORD} characters (a few words make a good one)")
    if len(password) > MAX_PASSWORD:
        raise AccountError(f"the password must have at most {MAX_PASSWORD} characters")
    folded = password.strip().lower()
    if name and folded == name.strip().lower():
        raise AccountError("the password must not be the user name")
    if folded in common_passwords() or "".join(folded.split()) in common_passwords():
        raise AccountError("this password is on the list of common passwords: choose another one")
    from zxcvbn import zxcvbn

    score = zxcvbn(password[:100], user_inputs=[name, "berds", "studio", "annotation"] if name else ["berds"])["score"]
    if score < MIN_GUESS_SCORE:
        raise AccountError("this password is too easy to guess (repeats, sequences, common words or the user name): "
                           "choose a longer or less predictable one")


_DUMMY_LOCK = threading.Lock()
_DUMMY_HASHES: dict[tuple, str] = {}


def dummy_hash(hasher: PasswordHasher) -> str:
    """A hash of a random password with ``hasher``'s settings, computed once per process and settings.

    An unknown name is checked against it, so a login costs one argon2
    verification whether the name exists or not.
    """
    key = (hasher.time_cost, hasher.memory_cost, hasher.parallelism, hasher.hash_len, hasher.salt_len,
           hasher.type)
    with _DUMMY_LOCK:
        got = _DUMMY_HASHES.get(key)
        if got is None:
            got = _DUMMY_HASHES[key] = hasher.hash(secrets.token_hex(16))
        return got


def client_address(peer: str | None, headers=None) -> str:
    """The client address a login is counted against.

    ``peer``: the address of the connection (Streamlit says None for
    localhost, so None counts as ``127.0.0.1``). Behind a reverse proxy every
    connection comes from the proxy: the operator names the header the proxy
    sets (``BERDS_PROXY_HEADER``, e.g. ``X-Forwarded-For`` or ``X-Real-IP``)
    and, for ``X-Forwarded-For``, how many proxies append to it
    (``BERDS_PROXY_HOPS``, default 1: the last entry is the one our proxy
    wrote; entries left of it are whatever the client sent). Without that
    setting the header is ignored: a client could write it itself.
    """
    peer = (peer or "").strip() or "127.0.0.1"
    name = os.environ.get(ENV_PROXY_HEADER, "").strip()
    if not name and _forwarding_trusted_by_default() and _header(headers, "x-forwarded-for"):
        # the server runs with uvicorn's default trust (``streamlit run app.py``, not serve.py): it took
        # the client's own X-Forwarded-For from a loopback connection, so ``peer`` is whatever the client
        # wrote. The connection itself came from this host: count it as this host, not as the header says.
        return "127.0.0.1"
    if not name or headers is None:
        return peer
    try:
        raw = headers.get(name) or headers.get(name.lower())
    except Exception:
        raw = None
    if not raw:
        return peer
    parts = [p.strip() for p in str(raw).split(",") if p.strip()]
    try:
        hops = max(1, int(os.environ.get(ENV_PROXY_HOPS, "1")))
    except ValueError:
        hops = 1
    if not parts:
        return peer
    return parts[-hops] if len(parts) >= hops else parts[0]


ENV_FORWARDED = "FORWARDED_ALLOW_IPS"  # uvicorn's own setting: the proxies whose X-Forwarded-For it believes


def _forwarding_trusted_by_default() -> bool:
    """Whether uvicorn runs with its default trust in X-Forwarded-For from loopback (the operator set
    neither ``FORWARDED_ALLOW_IPS`` nor started through ``serve.py``, which turns that trust off)."""
    return ENV_FORWARDED not in os.environ


def _header(headers, name: str):
    if headers is None:
        return None
    try:
        return headers.get(name) or headers.get(name.title()) or headers.get(name.upper())
    except Exception:
        return None


def _token_hash(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


class Accounts:
    """Users, sessions and login attempts of one annotation database."""

    def __init__(self, store: Store, *, hasher: PasswordHasher | None = None, clock=time.time, sleep=time.sleep):
        self.store = store
        self.hasher = hasher or PasswordHasher()
        self.clock = clock
        self.sleep = sleep  # how a name's attempt waits (tests pass one that moves their clock)

    # ---- users ----

    def add(self, name: str, role: str, password: str, *, by: str | None = "cli") -> User:
        name = check_name(name)
        if role not in ROLES:
            raise AccountError(f"role must be one of {', '.join(ROLES)}")
        check_password_policy(password, name)
        digest = self.hasher.hash(password)
        with self.store.batch():  # the user and its audit line: one transaction
            if not self.store.accounts.add_user(name, role, digest, secrets.token_hex(16)):
                raise AccountError(f"user {name!r} exists already (use reset to change the password)")
            self.store.audit.add(by, "admin", "users.add", name, allowed=True, detail=f"role={role}")
        self.store.restrict_permissions()  # password hashes inside: owner only (0600)
        return self.get(name)

    def get(self, name: str) -> User | None:
        r = self.store.accounts.user_row(name)
        if r is None:
            return None
        return User(r["name"], r["role"], bool(r["active"]), r["created_at"], r["last_login"])

    def list(self) -> list[User]:
        return [User(r["name"], r["role"], bool(r["active"]), r["created_at"], r["last_login"])
                for r in self.store.accounts.user_rows()]

    def names(self, role: str | None = None, *, active_only: bool = True) -> list[str]:
        return [u.name for u in self.list() if (role is None or u.role == role) and (u.active or not active_only)]

    def _require(self, name: str) -> None:
        if self.get(name) is None:
            raise AccountError(f"no user {name!r}")

    def disable(self, name: str, *, by: str | None = "cli") -> None:
        """Disable an account and end its sessions (its labels stay)."""
        self._require(name)
        with self.store.batch():
            self.store.accounts.set_user_active(name, False)
            self.store.audit.add(by, "admin", "users.disable", name, allowed=True)

    def enable(self, name: str, *, by: str | None = "cli") -> None:
        self._require(name)
        with self.store.batch():
            self.store.accounts.set_user_active(name, True)
            self.store.audit.add(by, "admin", "users.enable", name, allowed=True)

    def reset(self, name: str, password: str, *, role: str | None = None, by: str | None = "cli") -> None:
        """Set a new password (and optionally role); ends the user's sessions and clears their failed logins."""
        self._require(name)
        check_password_policy(password, name)
        if role is not None and role not in ROLES:
            raise AccountError(f"role must be one of {', '.join(ROLES)}")
        digest = self.hasher.hash(password)
        with self.store.batch():
            self.store.accounts.reset_password(name, digest, role)
            self.store.audit.add(by, "admin", "users.reset", name, allowed=True,
                                 detail=f"role={role}" if role else None)

    # ---- login and sessions ----

    def _failures(self, column: str, value: str, now: float) -> list[float]:
        """Times of the failed (or still being checked) attempts for ``column = value`` inside the window,
        oldest first (inside the caller's transaction when there is one).

        A success in between does not reset them: an attacker who owns one
        account cannot clear an address's count by signing in to it.
        """
        return self.store.accounts.login_failures(column, value, now - WINDOW)

    def _name_key(self, name: str) -> str:
        """How a name is stored in the audit log and the attempt counts: as typed for an account, else a keyed
        hash (a password typed into the name field is never stored)."""
        if self.get(name) is not None:
            return name
        key = self.store.settings.get(NAME_KEY_SETTING)
        if not key:
            key = secrets.token_hex(32)
            self.store.settings.set(NAME_KEY_SETTING, key, by="accounts")
        digest = hmac.new(bytes.fromhex(key), name.encode("utf-8"), hashlib.sha256).hexdigest()
        return f"unknown-name:{digest[:12]}"

    @staticmethod
    def _hold(fails: list[float], now: float) -> float:
        if len(fails) < NAME_FREE_FAILURES:
            return 0.0
        delay = min(NAME_MAX_DELAY, 2.0 ** (len(fails) - NAME_FREE_FAILURES))
        return max(0.0, fails[-1] + delay - now)

    def client_wait(self, client: str | None) -> float:
        """Seconds until ``client`` may try again (0: now): ``MAX_CLIENT_FAILURES`` wrong passwords
        in the window block it until enough of them have left the window."""
        if not client:
            return 0.0
        now = self.clock()
        fails = self._failures("client", client, now)
        if len(fails) < MAX_CLIENT_FAILURES:
            return 0.0
        return max(0.0, fails[len(fails) - MAX_CLIENT_FAILURES] + WINDOW - now)

    def retry_after(self, name: str, client: str | None = None) -> float:
        """Seconds until an attempt from ``client`` is checked at all (a name alone never blocks: 0)."""
        return self.client_wait(client)

    def _reserve(self, key: str, client: str | None) -> tuple[int | None, float, float]:
        """Count this attempt before its password is checked, atomically: ``(attempt id, 0, hold)``, or
        ``(None, seconds to wait, 0)`` when the address is blocked for this name.

        One write transaction (BEGIN IMMEDIATE) reads the address's failures (pending attempts included)
        and inserts this attempt as pending (``ok = -1``), so concurrent attempts see each other. A
        blocked address still lets through a name that has signed in from it before (a co-worker behind
        the same NAT), under the name's slow-down. ``hold``: how long the attempt waits before the check.
        """
        with self.store.batch():
            now = self.clock()
            if client:
                fails = self._failures("client", client, now)
                if len(fails) >= MAX_CLIENT_FAILURES:
                    if not self.store.accounts.signed_in_from(client, key):
                        return None, max(0.0, fails[len(fails) - MAX_CLIENT_FAILURES] + WINDOW - now), 0.0
            hold = self._hold(self._failures("user", key, now), now)
            # stamped with the time its password will be checked: the next attempt for the name waits from there
            attempt = self.store.accounts.add_login_attempt(key, client, now + hold)
        return attempt, 0.0, hold

    def _settle(self, attempt: int, ok: bool) -> None:
        self.store.accounts.settle_login_attempt(attempt, ok)

    def login(self, name: str, password: str, *, client: str | None = None) -> tuple[str, User]:
        """Check the password; returns ``(session token, user)`` or raises :class:`LoginError`."""
        name = str(name or "").strip()
        dummy = dummy_hash(self.hasher)  # before any branch: the first login pays for it whatever the name
        key = self._name_key(name) if name else ""  # a name that is no account is never stored as typed
        attempt, wait, hold = self._reserve(key, client)
        if attempt is None:
            self.store.audit.add(key or None, None, "login", None, allowed=False, detail="rate limited (address)")
            raise LoginError(f"too many failed sign-ins from this address: try again in "
                             f"{max(1, int(wait // 60) + 1)} minute(s)")
        ok = False
        try:
            if hold > 0:  # a name under attack: slower, never refused
                self.sleep(hold)
            row = self.store.accounts.password_row(name)
            try:  # one argon2 verification either way, so timing does not tell which names exist
                ok = self.hasher.verify(row["password_hash"] if row else dummy, password or "") and row is not None
            except (VerifyMismatchError, VerificationError, InvalidHashError):
                ok = False
        finally:
            self._settle(attempt, ok)  # also when interrupted: the attempt stays counted
        if not ok or not row["active"]:
            self.store.audit.add(key or None, None, "login", None, allowed=False,
                                 detail="disabled account" if ok else "wrong name or password")
            # the same answer for a disabled account: a refusal that named it only to the right password
            # would confirm a guessed password (the lead sees "disabled account" in the audit log)
            raise LoginError("wrong name or password")
        if self.hasher.check_needs_rehash(row["password_hash"]):
            self.store.accounts.rehash_password(name, self.hasher.hash(password))
        token = secrets.token_urlsafe(32)
        now = self.clock()
        _, lifetime = session_limits()
        self.store.accounts.open_session(_token_hash(token), name, now, now + lifetime, row["uid"])
        self.store.audit.add(name, None, "login", None, allowed=True)
        self.purge_sessions()  # ended sessions and old attempts go at each sign-in
        return token, self.get(name)

    def session_user(self, token: str | None) -> User | None:
        """The user of a live session, or None (unknown, expired, idle too long, revoked, user disabled).

        A live session's idle clock restarts (written at most once a minute).
        """
        if not token:
            return None
        h = _token_hash(token)
        r = self.store.accounts.session_row(h)
        if r is None:
            return None
        now = self.clock()
        idle, _ = session_limits()
        if r["revoked"] or now >= r["expires_at"] or now - r["last_seen"] >= idle:
            return None
        if not r["uid"] or r["uid"] != r["user_uid"]:  # another user row under the same name: not this session's
            return None
        if r["name"] is None or not r["active"]:  # the user row, read with the session
            return None
        user = User(r["name"], r["role"], bool(r["active"]), r["created_at"], r["last_login"])
        if now - r["last_seen"] > 60:
            self.store.accounts.touch_session(h, now)
        return user

    def logout(self, token: str | None) -> None:
        if token:
            self.store.accounts.revoke_session(_token_hash(token))

    def purge_sessions(self) -> int:
        """Delete ended sessions and old login attempts; returns the sessions removed."""
        now = self.clock()
        idle, _ = session_limits()
        return self.store.accounts.purge_sessions(now, now - idle, now - max(WINDOW, 7 * 86400))


__all__ = ["Accounts", "AccountError", "LoginError", "ROLES", "User", "check_password_policy", "client_address",
           "common_passwords", "dummy_hash", "lab_mode", "session_limits", "StoreError"]
