"""The spec-string registry: parse, create, one error listing the choices."""
import pytest

from berds_core.specs import Registry, SpecError


def make():
    reg = Registry("search backend")

    @reg.register("searxng", usage="searxng:<base url>", needs_arg=True, help="SearXNG")
    def _s(arg, **opts):
        return ("searxng", arg, opts)

    @reg.register("serper", help="Serper API")
    def _p(arg, **opts):
        return ("serper", arg, opts)

    @reg.register("offline", takes_arg=True, help="optional argument")
    def _o(arg, **opts):
        return ("offline", arg, opts)
    return reg


def test_parse_and_create():
    reg = make()
    assert reg.parse("searxng:http://127.0.0.1:8888") == ("searxng", "http://127.0.0.1:8888")
    assert reg.parse(" serper ") == ("serper", None)
    assert reg.parse("offline") == ("offline", None)
    assert reg.parse("offline:x") == ("offline", "x")
    assert reg.create("searxng:http://h:1/", timeout=3) == ("searxng", "http://h:1/", {"timeout": 3})
    assert reg.names() == ["searxng", "serper", "offline"]
    assert "serper" in reg and "bing" not in reg and "searxng" not in reg


def test_errors_list_the_choices():
    reg = make()
    with pytest.raises(SpecError) as e:
        reg.parse("bing")
    assert str(e.value) == ("unknown search backend 'bing'; choose from: searxng:<base url>, serper, offline")
    with pytest.raises(SpecError, match="needs an argument: searxng:<base url>"):
        reg.parse("searxng")
    with pytest.raises(SpecError, match="takes no argument"):
        reg.parse("serper:abc")
    with pytest.raises(ValueError, match="registered twice"):
        reg.register("serper")(lambda arg: None)
