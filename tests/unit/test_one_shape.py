"""One shape per fact on the query side: constants defined once, one refusal sweep."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest
from click.testing import CliRunner

import citeline.schemas
from citeline.cli.main import cli
from citeline.evaluation import gate as gates
from citeline.evaluation.dataset import load_corpus
from citeline.evaluation.harness import EvalConfig, IndexCost, QueryResult, Run
from citeline.evaluation.report import gate_queries, summarize
from citeline.pipeline import chunk
from citeline.query import thresholds
from citeline.schemas.retrieval import RETRIEVERS
from citeline.schemas.settings import STRATEGIES

ROOT = Path(citeline.schemas.__file__).resolve().parents[1]  # the checkout the package is installed from
PACKAGES = ("schemas", "extractors", "pipeline", "index", "query", "evaluation", "runtime", "tasks", "flows", "citeline")


def assigned(name: str) -> list[str]:
    """The package files that bind ``name`` at module level."""
    found = []
    for folder in PACKAGES:
        for path in sorted((ROOT / folder).rglob("*.py")):
            for node in ast.parse(path.read_text()).body:
                targets = node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)]
                if any(isinstance(t, ast.Name) and t.id == name for t in targets):
                    found.append(str(path.relative_to(ROOT)))
    return found


def test_the_retriever_names_are_defined_once():
    assert assigned("RETRIEVERS") == ["schemas/retrieval.py"]


def test_the_strategy_letters_are_defined_once_and_mean_what_the_chunker_says():
    # pipeline/chunk.py gives each letter its ingredients; every other layer reads the letters.
    assert sorted(assigned("STRATEGIES")) == ["pipeline/chunk.py", "schemas/settings.py"]
    assert tuple(chunk.STRATEGIES) == STRATEGIES
    sources = [p for folder in PACKAGES for p in (ROOT / folder).rglob("*.py")]
    assert not [str(p) for p in sources if '"ABCDEF"' in p.read_text() or '"A,B,C,D,E,F"' in p.read_text()]


@pytest.mark.parametrize("command, option, expected", [
    (["index"], "--strategy", STRATEGIES),
    (["reindex"], "--strategy", STRATEGIES),
    (["ask"], "--retriever", RETRIEVERS),
])
def test_the_cli_offers_exactly_the_defined_choices(command, option, expected):
    params = {p.opts[0]: p for p in cli.get_command(None, command[0]).params if p.opts}
    assert tuple(params[option].type.choices) == expected


def test_eval_rejects_what_is_not_defined():
    result = CliRunner().invoke(cli, ["eval", str(ROOT), "--out", "x", "--retrievers", "colbert"])
    assert result.exit_code == 2 and f"choose from {','.join(RETRIEVERS)}" in result.output


def test_the_report_and_the_calibration_count_with_the_same_sweep(tmp_path):
    """evaluation/gate.py keeps no sweep of its own: the report's frontier is thresholds.sweep's."""
    defined = {name for name, value in vars(gates).items() if getattr(value, "__module__", None) == gates.__name__}
    assert not {"frontier", "gate_point", "passing", "GateQuery", "GatePoint"} & defined
    root = tmp_path / "c"
    (root / "docs").mkdir(parents=True)
    (root / "docs" / "a.md").write_text("# T\n\nNeedle one.\n")
    (root / "ground_truth.jsonl").write_text(
        '{"id": "q0", "doc": "a.md", "needle": "Needle one.", "course": "c", "ticket": "t", "char_start": 5}')
    (root / "out_of_domain.jsonl").write_text('{"id": "o1", "query": "x", "kind": "absurd"}')
    answered = [QueryResult(f"q0:{p}", p, True, 1, 0.3, (0.3, 0.6), (True, False), None) for p in ("course", "ticket")]
    unanswerable = QueryResult("o1", "absurd", False, None, None, (0.4, 0.7), (False, False), None)
    run = Run("E", "dense", answered, [unanswerable])
    config = EvalConfig(strategies=("E",), retrievers=("dense",))
    results = summarize(load_corpus(root), config, {"E": IndexCost("E", 1, 1, 0, 0, 256, [])}, [run], ("dense",), {})
    expected = thresholds.sweep(gate_queries(run), config.cosine_cuts, "cosine", config.window)
    assert [{k: v for k, v in g.items() if k not in ("strategy", "retriever")} for g in results["gate"]] == [
        p.to_dict() for p in expected]
