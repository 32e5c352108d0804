"""``berds users add|list|disable|enable|reset|audit``: lab accounts in an annotation database.

Passwords are read from a prompt (twice, not echoed) when stdin is a
terminal, otherwise from the first line of stdin (``--password-stdin`` says
so explicitly); there is no option that takes a password on the command line,
and no password or hash is ever printed.
"""
from __future__ import annotations

import getpass
import sys

from ..errors import InputError
from ._lab_db import add_db_args, open_store


def register(sub) -> None:
    users = sub.add_parser("users", help="lab accounts: add, list, disable, enable, reset, audit")
    acts = users.add_subparsers(dest="action", required=True, parser_class=type(users))

    p = acts.add_parser("add", help="add a user (password from a prompt or stdin)")
    add_db_args(p)
    p.add_argument("name")
    p.add_argument("--role", required=True, choices=["annotator", "reviewer", "admin"])
    p.add_argument("--password-stdin", action="store_true", help="read the password from the first line of stdin")
    p.set_defaults(func=cmd_add)

    p = acts.add_parser("list", help="users, roles, active or not, last login (never passwords)")
    add_db_args(p)
    p.set_defaults(func=cmd_list)

    p = acts.add_parser("disable", help="disable a user and end their sessions (labels are kept)")
    add_db_args(p)
    p.add_argument("name")
    p.set_defaults(func=cmd_active, active=False)

    p = acts.add_parser("enable", help="enable a disabled user")
    add_db_args(p)
    p.add_argument("name")
    p.set_defaults(func=cmd_active, active=True)

    p = acts.add_parser("reset", help="set a new password (and optionally role); ends the user's sessions")
    add_db_args(p)
    p.add_argument("name")
    p.add_argument("--role", choices=["annotator", "reviewer", "admin"], default=None)
    p.add_argument("--password-stdin", action="store_true", help="read the password from the first line of stdin")
    p.set_defaults(func=cmd_reset)

    p = acts.add_parser("audit", help="the audit log: logins and refused requests")
    add_db_args(p)
    p.add_argument("--refused", action="store_true", help="refused requests only")
    p.add_argument("--limit", type=int, default=200)
    p.set_defaults(func=cmd_audit)


def read_password(args, name: str) -> str:
    """A new password from stdin (``--password-stdin`` or a pipe) or a prompt typed twice."""
    if args.password_stdin or not sys.stdin.isatty():
        line = sys.stdin.readline()
        password = line.rstrip("\r\n")
        if not password:
            raise InputError("stdin", 1, "password", "no password on stdin")
        return password
    first = getpass.getpass(f"password for {name}: ")
    second = getpass.getpass("again: ")
    if first != second:
        raise InputError("prompt", None, "password", "the two passwords differ")
    return first


def _accounts(args, *, create: bool = False):
    from ..lab.accounts import Accounts

    store = open_store(args, create=create)
    return store, Accounts(store)


def _fail(e) -> InputError:
    return InputError("users", None, None, str(e))


def cmd_add(args) -> dict:
    from ..lab.accounts import AccountError, check_name, check_password_policy

    try:
        check_name(args.name)
    except AccountError as e:
        raise _fail(e) from None
    password = read_password(args, args.name)
    try:
        check_password_policy(password, args.name)
    except AccountError as e:
        raise InputError("password", None, None, str(e)) from None
    store, acc = _accounts(args, create=True)
    with store:
        try:
            user = acc.add(args.name, args.role, password)
        except AccountError as e:
            raise _fail(e) from None
        return {"db": str(store.path), "user": user.name, "role": user.role, "active": user.active}


def cmd_list(args) -> dict:
    store, acc = _accounts(args)
    with store:
        return {"db": str(store.path), "users": [
            {"name": u.name, "role": u.role, "active": u.active, "created_at": u.created_at,
             "last_login": u.last_login} for u in acc.list()]}


def cmd_active(args) -> dict:
    """``disable`` (ends the user's sessions) or ``enable``."""
    from ..lab.accounts import AccountError

    store, acc = _accounts(args)
    with store:
        try:
            (acc.enable if args.active else acc.disable)(args.name)
        except AccountError as e:
            raise _fail(e) from None
        return {"db": str(store.path), "user": args.name, "active": args.active}


def cmd_reset(args) -> dict:
    from ..lab.accounts import AccountError

    store, acc = _accounts(args)
    with store:
        if acc.get(args.name) is None:
            raise _fail(f"no user {args.name!r}")
        password = read_password(args, args.name)
        try:
            acc.reset(args.name, password, role=args.role)
        except AccountError as e:
            raise _fail(e) from None
        user = acc.get(args.name)
        return {"db": str(store.path), "user": user.name, "role": user.role, "sessions_ended": True}


def cmd_audit(args) -> dict:
    store, _ = _accounts(args)
    with store:
        return {"db": str(store.path), "events": store.audit.rows(refused_only=args.refused, limit=args.limit)}
