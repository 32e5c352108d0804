"""Lab accounts: users with roles, argon2 password hashes, sessions that expire, rate-limited login.

Everything lives in the annotation database (tables ``users``, ``sessions``,
``login_attempts``; see :mod:`berds_core.store`), so one file is one lab.

- Passwords are stored only as argon2id hashes (``argon2-cffi``: a random salt
  per hash, memory-hard). They are never logged, printed, exported or put in
  an error message; :func:`check_password_policy` only says what is missing.
- A login returns a random session token (``secrets.token_urlsafe(32)``); the
  database keeps its SHA-256, never the token. A session ends after
  ``idle`` seconds without use or ``lifetime`` seconds after login, whichever
  comes first, at logout, or when the user is disabled or their password reset.
- Rate limit: after ``MAX_FAILURES`` wrong passwords for one name (or
  ``MAX_CLIENT_FAILURES`` from one client) within ``WINDOW`` seconds, further
  attempts are refused without checking the password until the window has
  passed. The error never says whether the name exists.

Timing knobs come from the environment: ``BERDS_SESSION_IDLE_MIN`` (default
60) and ``BERDS_SESSION_HOURS`` (default 12).
"""
from __future__ import annotations

import hashlib
import os
import secrets
import time
from dataclasses import dataclass

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError, VerifyMismatchError

from .store import Store, StoreError, _now

ROLES = ("annotator", "reviewer", "admin")
MIN_PASSWORD = 8
MAX_FAILURES = 5
MAX_CLIENT_FAILURES = 20
WINDOW = 15 * 60.0
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


def check_password_policy(password: str, name: str = "") -> None:
    """At least ``MIN_PASSWORD`` characters, not the user name. Says what is wrong, never echoes it."""
    if not isinstance(password, str) or len(password) < MIN_PASSWORD:
        raise AccountError(f"the password must have at least {MIN_PASSWORD} characters")
    if name and password.strip().lower() == name.strip().lower():
        raise AccountError("the password must not be the user name")


def _token_hash(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


class Accounts:
    """Users, sessions and login attempts of one annotation database."""

    def __init__(self, store: Store, *, hasher: PasswordHasher | None = None, clock=time.time):
        self.store = store
        self.hasher = hasher or PasswordHasher()
        self.clock = clock
        self._dummy = None  # a hash to verify against for unknown names (same time as a real check)

    # ---- users ----

    def add(self, name: str, role: str, password: str, *, by: str | None = "cli") -> User:
        name = check_name(name)
        if role not in ROLES:
            raise AccountError(f"role must be one of {', '.join(ROLES)}")
        check_password_policy(password, name)
        digest = self.hasher.hash(password)
        now = _now()
        with self.store._tx() as c:
            if c.execute("SELECT 1 FROM users WHERE name = ?", (name,)).fetchone():
                raise AccountError(f"user {name!r} exists already (use reset to change the password)")
            c.execute("INSERT INTO users (name, role, password_hash, active, created_at, updated_at) VALUES (?, ?, ?, 1, ?, ?)",
                      (name, role, digest, now, now))
            self.store.audit(by, "admin", "users.add", name, allowed=True, detail=f"role={role}")
        return self.get(name)

    def get(self, name: str) -> User | None:
        rows = self.store._read("SELECT name, role, active, created_at, last_login FROM users WHERE name = ?", (name,))
        if not rows:
            return None
        r = rows[0]
        return User(r["name"], r["role"], bool(r["active"]), r["created_at"], r["last_login"])

    def list(self) -> list[User]:
        rows = self.store._read("SELECT name, role, active, created_at, last_login FROM users ORDER BY name")
        return [User(r["name"], r["role"], bool(r["active"]), r["created_at"], r["last_login"]) for r in rows]

    def names(self, role: str | None = None, *, active_only: bool = True) -> list[str]:
        return [u.name for u in self.list() if (role is None or u.role == role) and (u.active or not active_only)]

    def _require(self, name: str) -> None:
        if self.get(name) is None:
            raise AccountError(f"no user {name!r}")

    def disable(self, name: str, *, by: str | None = "cli") -> None:
        """Disable an account and end its sessions (its labels stay)."""
        self._require(name)
        with self.store._tx() as c:
            c.execute("UPDATE users SET active = 0, updated_at = ? WHERE name = ?", (_now(), name))
            c.execute("UPDATE sessions SET revoked = 1 WHERE user = ?", (name,))
            self.store.audit(by, "admin", "users.disable", name, allowed=True)

    def enable(self, name: str, *, by: str | None = "cli") -> None:
        self._require(name)
        with self.store._tx() as c:
            c.execute("UPDATE users SET active = 1, updated_at = ? WHERE name = ?", (_now(), name))
            self.store.audit(by, "admin", "users.enable", name, allowed=True)

    def reset(self, name: str, password: str, *, role: str | None = None, by: str | None = "cli") -> None:
        """Set a new password (and optionally role); ends the user's sessions and clears their failed logins."""
        self._require(name)
        check_password_policy(password, name)
        if role is not None and role not in ROLES:
            raise AccountError(f"role must be one of {', '.join(ROLES)}")
        digest = self.hasher.hash(password)
        with self.store._tx() as c:
            c.execute("UPDATE users SET password_hash = ?, updated_at = ? WHERE name = ?", (digest, _now(), name))
            if role is not None:
                c.execute("UPDATE users SET role = ? WHERE name = ?", (role, name))
            c.execute("UPDATE sessions SET revoked = 1 WHERE user = ?", (name,))
            c.execute("DELETE FROM login_attempts WHERE user = ? AND ok = 0", (name,))
            self.store.audit(by, "admin", "users.reset", name, allowed=True,
                             detail=f"role={role}" if role else None)

    # ---- login and sessions ----

    def _failures(self, column: str, value: str, now: float) -> tuple[int, float]:
        """Failed attempts for ``column = value`` since its last success inside the window, and the oldest one."""
        rows = self.store._read(
            f"SELECT at, ok FROM login_attempts WHERE {column} = ? AND at > ? ORDER BY at", (value, now - WINDOW))
        fails = []
        for r in rows:
            if r["ok"]:
                fails = []
            else:
                fails.append(r["at"])
        return len(fails), (fails[0] if fails else now)

    def retry_after(self, name: str, client: str | None = None) -> float:
        """Seconds until ``name`` (from ``client``) may try again; 0 when not blocked."""
        now = self.clock()
        waits = [0.0]
        n, first = self._failures("user", str(name or "").strip(), now)
        if n >= MAX_FAILURES:
            waits.append(first + WINDOW - now)
        if client:
            n, first = self._failures("client", client, now)
            if n >= MAX_CLIENT_FAILURES:
                waits.append(first + WINDOW - now)
        return max(waits)

    def _record(self, name: str, client: str | None, ok: bool) -> None:
        with self.store._tx() as c:
            c.execute("INSERT INTO login_attempts (user, client, at, ok) VALUES (?, ?, ?, ?)",
                      (name, client, self.clock(), int(ok)))

    def login(self, name: str, password: str, *, client: str | None = None) -> tuple[str, User]:
        """Check the password; returns ``(session token, user)`` or raises :class:`LoginError`."""
        name = str(name or "").strip()
        wait = self.retry_after(name, client)
        if wait > 0:
            self.store.audit(name or None, None, "login", None, allowed=False, detail="rate limited")
            raise LoginError(f"too many failed logins: try again in {max(1, int(wait // 60) + 1)} minute(s)")
        rows = self.store._read("SELECT password_hash, active FROM users WHERE name = ?", (name,))
        ok = False
        if rows:
            try:
                ok = self.hasher.verify(rows[0]["password_hash"], password or "")
            except (VerifyMismatchError, VerificationError, InvalidHashError):
                ok = False
        else:  # spend the same time on an unknown name, so timing does not tell which names exist
            if self._dummy is None:
                self._dummy = self.hasher.hash(secrets.token_hex(16))
            try:
                self.hasher.verify(self._dummy, password or "")
            except (VerifyMismatchError, VerificationError, InvalidHashError):
                pass
        if not ok or not rows[0]["active"]:
            self._record(name, client, False)
            self.store.audit(name or None, None, "login", None, allowed=False,
                             detail="disabled account" if ok else "wrong name or password")
            raise LoginError("wrong name or password" if not ok else "this account is disabled")
        if self.hasher.check_needs_rehash(rows[0]["password_hash"]):
            with self.store._tx() as c:
                c.execute("UPDATE users SET password_hash = ? WHERE name = ?", (self.hasher.hash(password), name))
        self._record(name, client, True)
        token = secrets.token_urlsafe(32)
        now = self.clock()
        _, lifetime = session_limits()
        with self.store._tx() as c:
            c.execute("INSERT INTO sessions (token_hash, user, created_at, last_seen, expires_at) VALUES (?, ?, ?, ?, ?)",
                      (_token_hash(token), name, now, now, now + lifetime))
            c.execute("UPDATE users SET last_login = ? WHERE name = ?", (_now(), name))
        self.store.audit(name, None, "login", None, allowed=True)
        return token, self.get(name)

    def session_user(self, token: str | None) -> User | None:
        """The user of a live session, or None (unknown, expired, idle too long, revoked, user disabled).

        A live session's idle clock restarts (written at most once a minute).
        """
        if not token:
            return None
        h = _token_hash(token)
        rows = self.store._read("SELECT user, last_seen, expires_at, revoked FROM sessions WHERE token_hash = ?", (h,))
        if not rows:
            return None
        r = rows[0]
        now = self.clock()
        idle, _ = session_limits()
        if r["revoked"] or now >= r["expires_at"] or now - r["last_seen"] >= idle:
            return None
        user = self.get(r["user"])
        if user is None or not user.active:
            return None
        if now - r["last_seen"] > 60:
            with self.store._tx() as c:
                c.execute("UPDATE sessions SET last_seen = ? WHERE token_hash = ?", (now, h))
        return user

    def logout(self, token: str | None) -> None:
        if token:
            with self.store._tx() as c:
                c.execute("UPDATE sessions SET revoked = 1 WHERE token_hash = ?", (_token_hash(token),))

    def purge_sessions(self) -> int:
        """Delete ended sessions and old login attempts; returns the sessions removed."""
        now = self.clock()
        idle, _ = session_limits()
        with self.store._tx() as c:
            n = c.execute("DELETE FROM sessions WHERE revoked = 1 OR expires_at <= ? OR last_seen <= ?",
                          (now, now - idle)).rowcount
            c.execute("DELETE FROM login_attempts WHERE at < ?", (now - 7 * 86400,))
        return n


def lab_mode() -> bool:
    """True when the operator switched the app to lab mode (``BERDS_AUTH=lab``)."""
    return os.environ.get("BERDS_AUTH", "open").strip().lower() == "lab"


__all__ = ["Accounts", "AccountError", "LoginError", "ROLES", "User", "check_password_policy", "lab_mode",
           "session_limits", "StoreError"]
