"""The annotation store owns all SQL on the annotation database (issue 54, item 4).

The store is :class:`berds_core.lab.store.Store`: the modules of the classes it is composed of and of the tables it
holds (``lab/store.py``, ``lab/round_tables.py``, ``lab/account_tables.py``, ``lab/db.py``) and the schema
``lab/db.py`` reads from its siblings (``lab/round_schema.py``). Both sets are read from the code, not listed here. No other source file of the
engine, the faces, the scripts or the benches holds a statement on one of the database's tables (the tables are
read from the store's migrations), nor reaches past the store's methods to its connection. No exceptions.
"""
from __future__ import annotations

import ast
import re
from pathlib import Path

from berds_core.lab import db
from berds_core.lab.store import Store

ROOT = Path(__file__).resolve().parents[1]
SOURCES = ("berds_core", "studio_ui", "pages", "scripts", "bench")
# what hands a caller the raw connection, or runs a statement on it
CONNECTION_CALLS = {"execute", "executemany", "executescript", "query", "transaction", "set_trace_callback"}
SQL_START = re.compile(r"\b(SELECT|INSERT|UPDATE|DELETE|REPLACE|CREATE|ALTER|DROP)\b")


def _module_file(module: str) -> str:
    return module.replace(".", "/") + ".py"


def store_files() -> set[str]:
    """The store's modules: those of ``Store``'s classes and of the tables it holds (``store.checks``, ...), and
    those ``lab/db.py`` imports its schema from."""
    classes = list(Store.__mro__) + db.Table.__subclasses__()
    files = {_module_file(c.__module__) for c in classes if c.__module__.startswith("berds_core.")}
    tree = ast.parse((ROOT / "berds_core/lab/db.py").read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 1 and any(a.name.startswith("SCHEMA")
                                                                          for a in node.names):
            files.add(f"berds_core/lab/{node.module}.py")
    return files


def lab_tables() -> set[str]:
    """Every table of the annotation database, read from the store's migrations."""
    sql = " ".join(db.MIGRATIONS.values())
    return set(re.findall(r"CREATE TABLE IF NOT EXISTS (\w+)", sql)) | {"schema_version"}


def _strings(tree: ast.AST) -> list[tuple[int, str]]:
    """Every string written in the source: constants, and f-strings with their holes as ``?``."""
    out, parts = [], set()
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):
            parts.update(id(v) for v in node.values)
            text = "".join(v.value if isinstance(v, ast.Constant) and isinstance(v.value, str) else "?"
                           for v in node.values)
            out.append((node.lineno, text))
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in parts:
            out.append((node.lineno, node.value))
    return out


def statement_on(text: str, tables: set[str]) -> str | None:
    """The lab table a piece of SQL in ``text`` reads or writes, or None."""
    if not SQL_START.search(text):
        return None
    for m in re.finditer(r"\b(?:FROM|INTO|UPDATE|JOIN|TABLE|EXISTS)\s+(\w+)", text):
        if m.group(1) in tables:
            return m.group(1)
    return None


def source_files(root: Path) -> list[Path]:
    files = [p for d in SOURCES if (root / d).is_dir() for p in (root / d).rglob("*.py")]
    return sorted(files + [p for p in (root / "app.py", root / "serve.py") if p.exists()])


def offences(root: Path = ROOT) -> list[str]:
    """Each statement on a lab table outside the store, and each call that reaches the store's connection from
    the lab's other modules or the pages (``file:line: what``)."""
    store, tables, out = store_files(), lab_tables(), []
    for path in source_files(root):
        rel = path.relative_to(root).as_posix()
        if rel in store:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for line, text in _strings(tree):
            table = statement_on(text, tables)
            if table:
                out.append(f"{rel}:{line}: a statement on the lab table {table!r}")
        if rel.startswith(("berds_core/lab/", "studio_ui/", "pages/")) or rel == "app.py":
            for node in ast.walk(tree):
                if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                        and node.func.attr in CONNECTION_CALLS):
                    out.append(f"{rel}:{node.lineno}: .{node.func.attr}(...) reaches past the store's methods")
                if isinstance(node, ast.Attribute) and node.attr == "_conn":
                    out.append(f"{rel}:{node.lineno}: the store's connection used outside the store")
    return out


def test_the_store_is_read_from_the_code():
    files = store_files()
    assert {"berds_core/lab/store.py", "berds_core/lab/db.py", "berds_core/lab/round_tables.py",
            "berds_core/lab/account_tables.py", "berds_core/lab/round_schema.py"} <= files
    assert all((ROOT / f).is_file() for f in files)
    assert {"labels", "events", "assignments", "users", "sessions", "login_attempts", "pauses"} <= lab_tables()


def test_no_sql_outside_the_store():
    assert offences() == []


def test_the_check_finds_sql_and_raw_connections(tmp_path):
    """The check fails on what it is about: a statement in a string (plain, joined or an f-string) and a call
    that reaches the connection, in a module outside the store; not on prose that names a table."""
    tables = lab_tables()
    assert statement_on("SELECT pair_id FROM assignments WHERE task_set = ?", tables) == "assignments"
    assert statement_on("DELETE FROM login_attempts WHERE at < ?", tables) == "login_attempts"
    assert statement_on("UPDATE users SET active = 0", tables) == "users"
    assert statement_on("INSERT OR REPLACE INTO labels (?) VALUES (?)", tables) == "labels"
    assert statement_on("SELECT at FROM passages WHERE row = ?", tables) is None  # another database's table
    assert statement_on("the labels come from the annotators", tables) is None
    assert statement_on("DELETE /berds/session clears the cookie", tables) is None
    lab = tmp_path / "berds_core" / "lab"
    lab.mkdir(parents=True)
    (lab / "sneaky.py").write_text(
        'def f(store, t):\n'
        '    store.query("SELECT pair_id FROM assignments WHERE task_set = ?", (t,))\n'
        '    return f"DELETE FROM {t} WHERE x" + f"SELECT 1 FROM labels WHERE task_set = {t}"\n'
        'def g(store):\n'
        '    with store.transaction() as c:\n'
        '        c.execute(store.sql)\n', encoding="utf-8")
    (lab / "store.py").write_text('SQL = "SELECT * FROM labels"\n', encoding="utf-8")  # the store's own: fine
    got = offences(tmp_path)
    assert len(got) == 5, got
    assert any("sneaky.py:2: a statement on the lab table 'assignments'" in g for g in got)
    assert any("sneaky.py:3: a statement on the lab table 'labels'" in g for g in got)
    assert any("sneaky.py:2: .query(" in g for g in got)
    assert any("sneaky.py:5: .transaction(" in g for g in got)
    assert any("sneaky.py:6: .execute(" in g for g in got)

