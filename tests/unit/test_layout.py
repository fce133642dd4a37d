"""The package's shape: one top-level name, imports that point one way, imports without side effects."""
from __future__ import annotations

import ast
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FOLDERS = ("schemas", "extractors", "pipeline", "index", "query", "evaluation", "runtime", "tasks", "flows", "citeline")
# What each layer may import from citeline: the layers below it and itself. runtime is the process's
# plumbing (environment, logs, signals, the Prefect server, the handles on index and model) that
# tasks, flows and the entry points stand on.
LAYER = {"schemas": 0, "extractors": 1, "pipeline": 2, "index": 2, "query": 3, "evaluation": 4,
         "runtime": 4.5, "tasks": 5, "flows": 6, "citeline": 7}
# Same rank, still one way: pipeline and index never import each other.
FORBIDDEN = {("pipeline", "index"), ("index", "pipeline")}

def _sources():
    for folder in FOLDERS:
        for path in sorted((ROOT / folder).rglob("*.py")):
            yield folder, path

def _module_name(folder: str, path: Path) -> str:
    parts = path.relative_to(ROOT / folder).with_suffix("").parts
    parts = parts[:-1] if parts[-1] == "__init__" else parts
    return ".".join(("citeline",) if folder == "citeline" else ("citeline", folder)) + "".join(f".{p}" for p in parts)

def _imports(path: Path):
    """Every module name an import statement in ``path`` names (function-local ones included)."""
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.lineno, node.module
            if node.module == "citeline":
                for alias in node.names:
                    yield node.lineno, f"citeline.{alias.name}"

def test_no_bare_top_level_imports():
    bare = [f"{path.relative_to(ROOT)}:{line} imports {name}"
            for _, path in _sources() for line, name in _imports(path)
            if name.split(".")[0] in FOLDERS and name.split(".")[0] != "citeline"]
    assert not bare, "\n".join(bare)

def test_imports_point_one_way():
    wrong = []
    for folder, path in _sources():
        for line, name in _imports(path):
            parts = name.split(".")
            if parts[0] != "citeline" or len(parts) < 2 or parts[1] not in LAYER:
                continue
            target = parts[1]
            if LAYER[target] > LAYER[folder] or (folder, target) in FORBIDDEN:
                wrong.append(f"{path.relative_to(ROOT)}:{line}: {folder} imports {name}")
    assert not wrong, "\n".join(wrong)

# The wings of citeline/: the library (citeline/library.py) stands alone, the HTTP app (web) uses
# the library, the command line (cli) uses both; the library never reaches into an entry point.
WING = {"citeline.library": 0, "citeline.web": 1, "citeline.cli": 2}

def _wing(module: str) -> int | None:
    return next((rank for prefix, rank in WING.items() if module == prefix or module.startswith(prefix + ".")), None)

def test_entry_points_stand_on_the_library():
    wrong = []
    for folder, path in _sources():
        rank = _wing(_module_name(folder, path)) if folder == "citeline" else -1
        for line, name in _imports(path):
            target = _wing(name)
            if target is not None and rank is not None and target > rank:
                wrong.append(f"{path.relative_to(ROOT)}:{line}: imports {name}")
    assert not wrong, "\n".join(wrong)

def test_tasks_holds_only_prefect_tasks():
    bare = [path.name for path in sorted((ROOT / "tasks").glob("*.py"))
            if path.name != "__init__.py" and "@task" not in path.read_text()]
    assert not bare, f"modules in tasks/ that define no Prefect task: {bare}"

@pytest.mark.slow  # builds a wheel in an isolated environment: the whole suite runs it, `make check` not
def test_wheel_installs_one_top_level_package(tmp_path):
    done = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps",
                           "-q", "-w", str(tmp_path), str(ROOT)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    (wheel,) = tmp_path.glob("citeline-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    tops = {n.split("/")[0] for n in names if not n.split("/")[0].endswith(".dist-info")}
    assert tops == {"citeline"}
    assert "citeline/schemas/stamp.py" in names and "citeline/flows/ingest.py" in names

def test_cli_runs_beside_files_named_like_the_folders(tmp_path):
    for name in ("tasks.py", "query.py", "index.py", "schemas.py", "flows.py"):
        (tmp_path / name).write_text("raise SystemExit('the wrong module was imported')\n")
    done = subprocess.run([sys.executable, "-m", "citeline", "--help"], cwd=tmp_path,
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "Index folders" in done.stdout

IMPORT_EVERYTHING = """
import logging, os, sys, importlib
import structlog
structlog.configure(processors=[structlog.processors.KeyValueRenderer()])
logging.getLogger("citeline").setLevel(logging.ERROR)
before_env = dict(os.environ)
before_structlog = structlog.get_config()
import citeline
for name in sys.argv[1:]:
    importlib.import_module(name)
from citeline.runtime.log import get_logger
get_logger(probe=1).info("citeline.logs.without.configuring")
changed = sorted(k for k in set(os.environ) | set(before_env) if os.environ.get(k) != before_env.get(k))
assert not changed, changed
assert structlog.get_config() == before_structlog, "structlog was reconfigured"
assert logging.getLogger("citeline").level == logging.ERROR
print("imported", len(sys.argv) - 1)
"""

def test_an_index_sets_the_process_defaults_before_torch_loads(tmp_path):
    """OpenMP reads OMP_WAIT_POLICY once, when torch loads: set after, it does nothing
    (and a spinning wait made a query embedding 1.2 s instead of 17 ms on a busy machine)."""
    code = ("import os, sys\nfrom citeline import Index\nindex = Index(sys.argv[1])\n"
            "assert 'torch' not in sys.modules, 'torch loaded before the defaults'\n"
            "print(os.environ.get('OMP_WAIT_POLICY'))")
    env = {k: v for k, v in os.environ.items() if not k.startswith("OMP_")}
    done = subprocess.run([sys.executable, "-c", code, str(tmp_path / "db")], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split() == ["PASSIVE"]


def test_an_index_runs_numpy_blas_on_one_thread_though_numpy_loaded_first(tmp_path):
    """OpenBLAS reads OPENBLAS_NUM_THREADS when numpy loads, and ``from citeline import Index``
    loads numpy before ``Index`` applies the defaults: the loaded library is told instead."""
    code = ("import sys\nfrom citeline import Index\nimport threadpoolctl\nassert 'numpy' in sys.modules\n"
            "Index(sys.argv[1])\n"
            "print(*[i['num_threads'] for i in threadpoolctl.threadpool_info() if i['internal_api'] == 'openblas'])")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OMP_", "OPENBLAS_"))}
    done = subprocess.run([sys.executable, "-c", code, str(tmp_path / "db")], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split() == ["1"]


def test_importing_citeline_changes_nothing_in_the_host():
    import os

    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PREFECT_", "HF_", "TRANSFORMERS_", "TOKENIZERS_", "DO_NOT_TRACK", "OMP_"))}
    modules = [_module_name(folder, path) for folder, path in _sources() if path.name != "__main__.py"]
    done = subprocess.run([sys.executable, "-c", IMPORT_EVERYTHING, *modules], env=env,
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    assert f"imported {len(modules)}" in done.stdout
