"""The store's statements on the lab's accounts (tables ``users``, ``sessions``, ``login_attempts`` of
:mod:`berds_core.lab.db`), one of the tables :class:`berds_core.lab.store.Store` holds:
:class:`AccountTables` (``store.accounts``). :mod:`berds_core.lab.accounts` decides (password policy, hashing,
rate limits, session expiry); these read and write. A write joins the caller's transaction (``store.batch()``) when there is one, so
an account step that reads and writes (count an attempt, then record it) stays one ``BEGIN IMMEDIATE``.
"""
from __future__ import annotations

from .db import Table, now

ATTEMPT_COLUMNS = ("user", "client")  # what a login attempt is counted by


class AccountTables(Table):
    """Users (name, role, argon2 hash, active, uid), sessions (by the token's SHA-256) and login attempts."""

    # ---- users ----

    def add_user(self, name: str, role: str, password_hash: str, uid: str) -> bool:
        """Insert an active user (created and updated now); False, and nothing written, when the name exists."""
        at = now()
        with self.transaction() as c:
            if c.execute("SELECT 1 FROM users WHERE name = ?", (name,)).fetchone():
                return False
            c.execute("INSERT INTO users (name, role, password_hash, active, created_at, updated_at, uid) "
                      "VALUES (?, ?, ?, 1, ?, ?, ?)", (name, role, password_hash, at, at, uid))
        return True

    def user_row(self, name: str):
        """``name, role, active, created_at, last_login`` of one user, or None."""
        rows = self.query("SELECT name, role, active, created_at, last_login FROM users WHERE name = ?", (name,))
        return rows[0] if rows else None

    def user_rows(self) -> list:
        """``name, role, active, created_at, last_login`` of every user, by name."""
        return self.query("SELECT name, role, active, created_at, last_login FROM users ORDER BY name")

    def password_row(self, name: str):
        """``password_hash, active, uid`` of one user, or None."""
        rows = self.query("SELECT password_hash, active, uid FROM users WHERE name = ?", (name,))
        return rows[0] if rows else None

    def set_user_active(self, name: str, active: bool) -> None:
        """Enable or disable a user; disabling also ends every session of theirs."""
        with self.transaction() as c:
            c.execute("UPDATE users SET active = ?, updated_at = ? WHERE name = ?", (int(bool(active)), now(), name))
            if not active:
                c.execute("UPDATE sessions SET revoked = 1 WHERE user = ?", (name,))

    def reset_password(self, name: str, password_hash: str, role: str | None = None) -> None:
        """A new password (and role, when given): ends the user's sessions and clears their failed logins."""
        with self.transaction() as c:
            c.execute("UPDATE users SET password_hash = ?, updated_at = ? WHERE name = ?", (password_hash, now(), name))
            if role is not None:
                c.execute("UPDATE users SET role = ? WHERE name = ?", (role, name))
            c.execute("UPDATE sessions SET revoked = 1 WHERE user = ?", (name,))
            c.execute("DELETE FROM login_attempts WHERE user = ? AND ok = 0", (name,))

    def rehash_password(self, name: str, password_hash: str) -> None:
        """The same password under the hasher's current settings (nothing else changes)."""
        with self.transaction() as c:
            c.execute("UPDATE users SET password_hash = ? WHERE name = ?", (password_hash, name))

    # ---- login attempts ----

    def login_failures(self, column: str, value: str, since: float) -> list[float]:
        """Times of the attempts not known to have succeeded (failed, or still being checked) with
        ``column = value`` (``column``: ``user`` or ``client``) after ``since``, oldest first."""
        if column not in ATTEMPT_COLUMNS:
            raise ValueError(f"login attempts are counted by {' or '.join(ATTEMPT_COLUMNS)}, not {column!r}")
        rows = self.query(f"SELECT at FROM login_attempts WHERE {column} = ? AND ok != 1 AND at > ? ORDER BY at",
                          (value, since))
        return [r[0] for r in rows]

    def signed_in_from(self, client: str, user: str) -> bool:
        """Whether ``user`` has signed in successfully from ``client`` (an attempt with ``ok = 1`` is kept)."""
        return bool(self.query("SELECT 1 FROM login_attempts WHERE client = ? AND user = ? AND ok = 1 LIMIT 1",
                               (client, user)))

    def add_login_attempt(self, user: str, client: str | None, at: float) -> int:
        """Count an attempt as pending (``ok = -1``: a failure until settled); returns its id."""
        with self.transaction() as c:
            cur = c.execute("INSERT INTO login_attempts (user, client, at, ok) VALUES (?, ?, ?, -1)", (user, client, at))
            return int(cur.lastrowid)

    def settle_login_attempt(self, attempt: int, ok: bool) -> None:
        with self.transaction() as c:
            c.execute("UPDATE login_attempts SET ok = ? WHERE id = ?", (int(ok), attempt))

    # ---- sessions ----

    def open_session(self, token_hash: str, user: str, at: float, expires_at: float, uid: str) -> None:
        """A session of ``user`` (bound to the user row's ``uid``), and the user's last login."""
        with self.transaction() as c:
            c.execute("INSERT INTO sessions (token_hash, user, created_at, last_seen, expires_at, uid) "
                      "VALUES (?, ?, ?, ?, ?, ?)", (token_hash, user, at, at, expires_at, uid))
            c.execute("UPDATE users SET last_login = ? WHERE name = ?", (now(), user))

    def session_row(self, token_hash: str):
        """A session with its user row, read together (``user, last_seen, expires_at, revoked, uid, user_uid,
        name, role, active, created_at, last_login``; the user's columns None when the row is gone), or None."""
        rows = self.query("SELECT s.user, s.last_seen, s.expires_at, s.revoked, s.uid, u.uid AS user_uid, "
                          "u.name, u.role, u.active, u.created_at, u.last_login "
                          "FROM sessions s LEFT JOIN users u ON u.name = s.user WHERE s.token_hash = ?", (token_hash,))
        return rows[0] if rows else None

    def touch_session(self, token_hash: str, at: float) -> None:
        with self.transaction() as c:
            c.execute("UPDATE sessions SET last_seen = ? WHERE token_hash = ?", (at, token_hash))

    def revoke_session(self, token_hash: str) -> None:
        with self.transaction() as c:
            c.execute("UPDATE sessions SET revoked = 1 WHERE token_hash = ?", (token_hash,))

    def purge_sessions(self, at: float, idle_since: float, attempts_before: float) -> int:
        """Delete sessions revoked, expired at ``at`` or idle since ``idle_since``, and login attempts older than
        ``attempts_before``; returns the sessions removed."""
        with self.transaction() as c:
            n = c.execute("DELETE FROM sessions WHERE revoked = 1 OR expires_at <= ? OR last_seen <= ?",
                          (at, idle_since)).rowcount
            c.execute("DELETE FROM login_attempts WHERE at < ?", (attempts_before,))
        return n
