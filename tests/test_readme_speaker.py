"""The README says what a speaker can show with no network (issue 24), and says it truthfully: the recorded
questions, the demo pool's claims and the local-server command are the ones the code ships."""
from __future__ import annotations

import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _section() -> str:
    text = (ROOT / "README.md").read_text()
    return text.split("## With no network: what a speaker can show", 1)[1].split("\n## ", 1)[0]


def test_readme_names_what_works_offline():
    from berds_core.generators import local_server as ls
    from berds_core.web.replay import ReplaySearch

    sec = " ".join(_section().split())
    for q in ReplaySearch().questions():
        assert f'"{q}"' in sec, q
    assert ls.COMMAND in sec and ls.SPEC in sec
    for words in ("Diverse preset", "Discover perspectives", "berds discover --pool demo", "--search replay",
                  "labelled as a recording"):
        assert words in sec, words


def test_readme_pool_claims_are_in_the_pool():
    from berds_core.datasets.demo import demo_pool_path

    topics = {json.loads(x)["topic"].lower() for x in demo_pool_path().read_text().splitlines() if x.strip()}
    for words in ("cars", "compulsory", "zoos", "voting age", "plastic bags"):
        assert any(words in t for t in topics), words


def test_readme_tells_where_the_vllm_test_venv_goes():
    text = (ROOT / "README.md").read_text()
    assert ".venv-vllm" in text and "3.4 GB" in text and "BERDS_VLLM_VENV" in text
