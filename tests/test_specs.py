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


def test_parts_and_builds_come_from_the_registration():
    """An entry may read its argument (``parts``: what the factory gets, and what ``Registry.parts`` tells
    without building) and name the class it builds; a registry that needs ``parts`` refuses an entry without."""
    reg = Registry("judge", parts_required=True)

    class Made:
        key_env = ("MADE_KEY",)

        def __init__(self, parts, **opts):
            self.parts, self.opts = parts, opts

    reg.register("made", takes_arg=True, parts=lambda arg: ("made", {"size": int(arg or 1)}), builds=Made)(Made)
    assert reg.parts("made:3") == ("made", {"size": 3})
    built = reg.create("made:3", seed=1)
    assert isinstance(built, Made) and built.parts == ("made", {"size": 3}) and built.opts == {"seed": 1}
    assert reg.builds("made") is Made
    with pytest.raises(ValueError, match="say what its spec names"):
        reg.register("other")


def test_a_new_judge_is_read_by_its_own_registration():
    """issue 39: ``judges.parse_spec`` reads the registry (it had its own switch, and a newly registered judge
    fell through to the BERDS evaluator)."""
    from berds_core.judges import JUDGES, parse_spec

    JUDGES.register("test-new-judge", takes_arg=True, parts=lambda arg: ("test", {"arg": arg}))(lambda p, **o: p)
    try:
        assert parse_spec("test-new-judge:x") == ("test", {"arg": "x"})
        assert JUDGES.create("test-new-judge:x") == ("test", {"arg": "x"})
    finally:
        JUDGES._entries.pop("test-new-judge")


def test_search_keys_come_from_the_registered_backend():
    from berds_core.web.search import SEARCH, BraveSearch, key_names

    assert key_names("brave") == BraveSearch.key_env == SEARCH.builds("brave").key_env
    assert key_names("searxng:http://127.0.0.1:9") == () and key_names("replay") == ()
