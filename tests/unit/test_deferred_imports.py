"""LanceDB's namespace REST client is imported only when used (runtime/deferred_imports.py):
each check runs in a fresh interpreter, since the deferral happens once, at ``import citeline``."""
from __future__ import annotations

import json
import subprocess
import sys

from testkit import ROOT

PROBE = """
import json, sys, tempfile
import citeline
import lancedb, numpy as np
db = lancedb.connect(tempfile.mkdtemp())
table = db.create_table("t", data=[{"vector": np.ones(4, dtype="float32").tolist(), "text": "a"}])
loaded_before = sorted(m for m in sys.modules if m.startswith("lance_namespace_urllib3_client.api"))
rows = table.search(np.ones(4, dtype="float32")).limit(1).to_list()
import lance_namespace_urllib3_client as client
api = client.TableApi  # a name only the package's own __init__ defines
print("PROBE " + json.dumps({"api_before_use": loaded_before, "rows": len(rows), "api": api.__name__,
                             "api_after_use": "lance_namespace_urllib3_client.api.table_api" in sys.modules}))
"""


def probe() -> dict:
    done = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, cwd=ROOT, timeout=120)
    line = [ln for ln in done.stdout.splitlines() if ln.startswith("PROBE ")]
    assert line, done.stdout + done.stderr
    return json.loads(line[-1].removeprefix("PROBE "))


def test_a_local_index_works_without_importing_the_namespace_rest_client_which_loads_on_first_use():
    report = probe()
    assert report["rows"] == 1
    assert report["api_before_use"] == []  # ~0.65 s of every cold command before
    assert report["api"] == "TableApi" and report["api_after_use"]


def test_nothing_is_deferred_when_the_package_is_already_imported_or_missing():
    code = ("import lance_namespace_urllib3_client, sys; from citeline.runtime.deferred_imports import defer_init; "
            "print(defer_init('lance_namespace_urllib3_client'), defer_init('citeline_no_such_package'))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert done.stdout.split() == ["False", "False"], done.stderr
