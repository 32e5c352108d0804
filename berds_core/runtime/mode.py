"""The operator's switch between the open app and the annotation lab (``BERDS_AUTH``).

Read by the lab's sign-in (``lab.accounts``) and by what the lab restricts below it
(``net.endpoints``: which servers a typed address may name), so it lives at the ground floor.
"""
from __future__ import annotations

import os


def lab_mode() -> bool:
    """True when the operator switched the app to lab mode (``BERDS_AUTH=lab``)."""
    return os.environ.get("BERDS_AUTH", "open").strip().lower() == "lab"
