"""Spec strings for swappable components: one small registry per kind.

Every swappable part is named the same way in the CLI, the app and configs:
``name`` or ``name:argument`` (``searxng:http://127.0.0.1:8888``,
``hf:mistralai/Mistral-7B-Instruct-v0.2``, ``mmr``, ``pool``). A kind keeps
one :class:`Registry`; ``parse`` splits a spec and raises one error that lists
the choices, ``create`` builds the component::

    SEARCH = Registry("search backend")

    @SEARCH.register("searxng", usage="searxng:<base url>", needs_arg=True,
                     help="a self-hosted SearXNG instance (JSON API)")
    def _searxng(arg, **opts):
        return SearxngSearch(arg, **opts)

    backend = SEARCH.create("searxng:http://127.0.0.1:8888", timeout=10)

An entry may also say what a spec names without building anything: ``parts(arg)`` reads the argument into
what the factory gets instead of the text (the judges: ``("hf", {"model": ..., "adapter": ...})``, read by
:meth:`Registry.parts`), and ``builds`` is the class the factory makes (what a caller may ask of it before
it exists: the keys a search backend reads), and ``traits`` the words a face asks instead of comparing names
(a retriever's ``model``: it reads an embedder). A registry made with ``parts_required=True`` refuses an entry
without ``parts``, so a new component cannot fall through to another's reading.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable


class SpecError(ValueError):
    """An unknown or malformed spec string; the message lists the choices."""


_URL_AT = re.compile(r"@(?=[A-Za-z][A-Za-z0-9+.-]*://)")


def split_model_url(arg: str, usage: str = "openai:<model>@<base_url>") -> tuple[str, str]:
    """``<model>@<base_url>`` -> ``(model, base_url)``: split at the first ``@`` that starts a URL (``@http://``,
    ``@https://``, any ``scheme://``), else at the last ``@`` (a server written without its scheme); the model
    may itself hold ``@``. A server address that still holds an ``@`` (in a user name, a query or a fragment:
    ``m@http://a/v1#@b/v1`` names ``a`` to the parser and ``b`` to a reader) is refused, in one line."""
    arg = arg or ""
    m = _URL_AT.search(arg)
    model, url = (arg[:m.start()], arg[m.end():]) if m else arg.rpartition("@")[::2]
    if not model or not url or (m is None and "@" not in arg):
        raise SpecError(f"needs a model and a URL: {usage}")
    if "@" in url:
        raise SpecError(f"the server address holds an '@' (a user name, a query or a fragment): write {usage} "
                        "with a plain http(s) address (an API key goes in OPENAI_API_KEY)")
    return model, url


@dataclass(frozen=True)
class Entry:
    name: str
    factory: Callable
    usage: str
    help: str
    needs_arg: bool
    takes_arg: bool
    parts: Callable | None = None  # arg -> what the spec names (handed to the factory instead of the text)
    builds: type | None = None  # the class the factory makes
    traits: frozenset[str] = frozenset()  # what a face may ask of it before it exists (the registry's own words)


class Registry:
    """Named factories of one kind of component (search backends, generators, diversifiers, ...)."""

    def __init__(self, kind: str, *, parts_required: bool = False):
        self.kind = kind
        self.parts_required = parts_required
        self._entries: dict[str, Entry] = {}

    def register(self, name: str, *, usage: str | None = None, help: str = "", needs_arg: bool = False,
                 takes_arg: bool | None = None, parts: Callable | None = None, builds: type | None = None,
                 traits=()):
        """Decorator: ``factory(arg, **opts)`` builds the component; ``arg`` is the text after ``name:``
        (None when the spec is the bare name), or ``parts(arg)`` when the entry reads its argument.
        ``needs_arg``: a bare name is an error; ``builds``: the class the factory makes; ``traits``: words
        saying what it takes or is (``model``, ``lexical``, ...), which a face asks instead of its name."""
        if self.parts_required and parts is None:
            raise ValueError(f"{self.kind} '{name}': say what its spec names (parts=)")

        def deco(factory: Callable) -> Callable:
            if name in self._entries:
                raise ValueError(f"{self.kind} '{name}' registered twice")
            self._entries[name] = Entry(name, factory, usage or (f"{name}:<arg>" if needs_arg else name), help,
                                        needs_arg, needs_arg if takes_arg is None else bool(takes_arg or needs_arg),
                                        parts, builds, frozenset(traits))
            return factory
        return deco

    # -- reading ------------------------------------------------------------
    def names(self) -> list[str]:
        return list(self._entries)

    def entries(self) -> list[Entry]:
        return list(self._entries.values())

    def choices(self) -> str:
        """``a, b:<url>, c`` -- what an error message and ``--help`` list."""
        return ", ".join(e.usage for e in self._entries.values())

    def describe(self) -> dict[str, str]:
        """usage -> help, for the app's pickers and the CLI's help."""
        return {e.usage: e.help for e in self._entries.values()}

    def __contains__(self, spec: str) -> bool:
        try:
            self.parse(spec)
        except SpecError:
            return False
        return True

    def parse(self, spec: str) -> tuple[str, str | None]:
        """``"name:arg"`` -> ``("name", "arg")``; ``"name"`` -> ``("name", None)``.

        Raises :class:`SpecError` naming the spec and listing the choices.
        """
        text = str(spec or "").strip()
        name, sep, arg = text.partition(":")
        entry = self._entries.get(name)
        if entry is None:
            raise SpecError(f"unknown {self.kind} '{text}'; choose from: {self.choices()}")
        arg = arg.strip() if sep else None
        if entry.needs_arg and not arg:
            raise SpecError(f"{self.kind} '{name}' needs an argument: {entry.usage}")
        if arg is not None and not entry.takes_arg:
            raise SpecError(f"{self.kind} '{name}' takes no argument (got '{text}'); use: {entry.usage}")
        return name, (arg or None)

    def parts(self, spec: str):
        """What a spec names, read and checked, nothing built: the entry's ``parts(arg)`` (its text without one)."""
        name, arg = self.parse(spec)
        entry = self._entries[name]
        return entry.parts(arg) if entry.parts is not None else arg

    def builds(self, spec: str) -> type | None:
        """The class a spec's factory makes (None: not declared)."""
        return self._entries[self.parse(spec)[0]].builds

    def traits(self, spec: str) -> frozenset[str]:
        """The traits of the entry a spec names (what it takes or is: a face asks this, never the name)."""
        return self._entries[self.parse(spec)[0]].traits

    def create(self, spec: str, **opts):
        """Build the component a spec names; ``opts`` go to its factory."""
        name, _ = self.parse(spec)
        return self._entries[name].factory(self.parts(spec), **opts)
