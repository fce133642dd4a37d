"""The evaluation flow: one task per strategy to index and one to query, then the report.

Runs the same steps as ``citeline eval`` (:class:`evaluation.harness.Harness`) and
attaches ``report.md`` to the flow run as a Markdown artifact, so a deploy's numbers
are visible in the Prefect UI next to the run that produced them.
"""
from __future__ import annotations

from prefect import flow, task
from prefect.artifacts import create_markdown_artifact
from prefect.cache_policies import NO_CACHE

from citeline.evaluation.dataset import load_corpus
from citeline.evaluation.harness import EvalConfig, Harness, IndexCost, Run, load_embedder, workspace
from citeline.evaluation.report import write
from citeline.schemas.settings import DEFAULT_MODEL, STRATEGIES
from citeline.tasks.log import get_logger

ARTIFACT_KEY = "evaluation-report"


@task(task_run_name="index-{strategy}", cache_policy=NO_CACHE, persist_result=False)
def index_strategy(harness: Harness, strategy: str) -> IndexCost:
    """Index the corpus with one strategy into its own folder."""
    cost = harness.index(strategy)
    get_logger(strategy=strategy).info("eval.indexed", chunks=cost.chunks, destroyed=len(cost.destroyed),
                                       seconds=round(cost.seconds, 1))
    return cost


@task(task_run_name="query-{strategy}", cache_policy=NO_CACHE, persist_result=False)
def query_strategy(harness: Harness, strategy: str) -> list[Run]:
    """Run every retriever over every query on one strategy's index."""
    runs = harness.query(strategy)
    get_logger(strategy=strategy).info("eval.queried", retrievers=[r.retriever for r in runs])
    return runs


@task(name="publish-evaluation", cache_policy=NO_CACHE, persist_result=False)
def publish(results: dict, out_dir: str) -> str:
    """Write report.md, results.json and the plots; attach the report as an artifact."""
    report = write(results, out_dir)
    markdown = report.read_text(encoding="utf-8")
    create_markdown_artifact(key=ARTIFACT_KEY, markdown=markdown,
                             description=f"Retrieval evaluation of {results['corpus']['name']}")
    return str(report)


@flow(name="evaluate", flow_run_name="evaluate {corpus_dir}")
def evaluate(corpus_dir: str, out_dir: str, strategies: list[str] = list(STRATEGIES),
             retrievers: list[str] | None = None, ks: list[int] = [1, 4, 8, 20],
             db_dir: str | None = None, model: str = DEFAULT_MODEL, precision: str = "auto") -> dict:
    """Evaluate every strategy and retriever on a corpus and publish the report.

    Args:
        corpus_dir: a folder with docs/, ground_truth.jsonl and out_of_domain.jsonl.
        out_dir: where report.md, results.json and the plots go.
        strategies: chunking strategies, "A".."F".
        retrievers: None for every retriever that works here; named ones must all work.
        ks: recall cut-offs.
        db_dir: keep the per-strategy indexes here; a temporary folder when None.
        model: the embedding model.
        precision: encoder precision (auto, fp32, bf16).

    Returns:
        The results document (``results.json``).
    """
    corpus = load_corpus(corpus_dir)
    config = EvalConfig(strategies=tuple(s.upper() for s in strategies),
                        retrievers=tuple(retrievers) if retrievers else None, ks=tuple(ks),
                        model=model, precision=precision)
    with workspace(db_dir) as root:
        harness = Harness(corpus, config, root, load_embedder(config))
        for strategy in config.strategies:
            # Sequential on purpose: the encoder runs one batch at a time on a few cores.
            index_strategy(harness, strategy)
            query_strategy(harness, strategy)
        results = harness.results()
    publish(results, out_dir)
    return results
