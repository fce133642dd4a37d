"""PNG plots of a results document (matplotlib, Agg backend: no display needed).

- ``recall_at_k.png``: Recall@k for k = 1..depth, one panel per retriever, one line per strategy;
- ``distances.png``: cosine distance of in-domain answers found in the gate window vs the
  best hit of each out-of-domain query, for the recommended strategy, per retriever;
- ``frontier.png``: bluffs vs lost answers over the cosine cuts, per retriever;
- ``recall_by_format.png`` (``eval --formats``): Recall@k, one panel per strategy and retriever,
  one line per format.
"""
from __future__ import annotations

from pathlib import Path

from citeline.evaluation.metrics import recall_at

RECALL = "recall_at_k.png"
DISTANCES = "distances.png"
FRONTIER = "frontier.png"
FORMAT_RECALL = "recall_by_format.png"


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def write_plots(results: dict, out_dir: str | Path) -> list[str]:
    """Draw every plot into ``out_dir``; return the file names written, in report order."""
    out = Path(out_dir)
    written = [recall_curves(results, out / RECALL)]
    if results.get("recommended"):
        written += [distance_histograms(results, out / DISTANCES), frontier_plot(results, out / FRONTIER)]
    return [Path(p).name for p in written]


def recall_curves(results: dict, path: Path) -> Path:
    """Recall@k, a panel per retriever, a line per strategy."""
    panels = [(retriever, [(run["strategy"], run) for run in results["runs"] if run["retriever"] == retriever])
              for retriever in results["config"]["retrievers"]]
    return _recall_panels(panels, results["config"], "strategy",
                          f"Recall@k on {results['corpus']['name']} ({results['corpus']['queries']} queries)", path)


def _recall_panels(panels: list[tuple[str, list[tuple[str, dict]]]], config: dict, legend: str, title: str,
                   path: Path) -> Path:
    """One panel per ``(title, [(line label, run)])``, Recall@k for k = 1..depth."""
    plt = _pyplot()
    fig, axes = plt.subplots(1, len(panels), figsize=(4.2 * len(panels), 3.8), sharey=True, squeeze=False)
    ks = list(range(1, config["depth"] + 1))
    for ax, (name, lines) in zip(axes[0], panels):
        for label, run in lines:
            ranks = [q["rank"] for q in run["per_query"]]
            ax.plot(ks, [recall_at(ranks, k) for k in ks], marker=".", label=label)
        ax.set_title(name)
        ax.set_xlabel("k")
        ax.set_xticks(list(config["ks"]))
        ax.set_ylim(0, 1)
        ax.grid(alpha=0.3)
    axes[0][0].set_ylabel("Recall@k")
    axes[0][-1].legend(title=legend, loc="lower right")
    fig.suptitle(title)
    return _save(fig, path)


def distance_histograms(results: dict, path: Path) -> Path:
    plt = _pyplot()
    rec = results["recommended"]
    window = results["config"]["gate_window"]
    # Runs whose rows carry no cosine distance (BM25) have nothing to draw.
    runs = [r for r in results["runs"] if r["strategy"] == rec["strategy"]
            and any(d is not None for q in r["ood"] for d in q["top_distances"])]
    fig, axes = plt.subplots(1, len(runs), figsize=(4.2 * len(runs), 3.6), sharey=True, squeeze=False)
    bins = [i / 40 for i in range(0, 41)]
    for ax, run in zip(axes[0], runs):
        answers = [q["distance"] for q in run["per_query"]
                   if q["rank"] is not None and q["rank"] <= window and q["distance"] is not None]
        ood = [min(d for d in q["top_distances"] if d is not None)
               for q in run["ood"] if any(d is not None for d in q["top_distances"])]
        ax.hist(answers, bins=bins, alpha=0.6, label=f"in-domain answers in top {window} ({len(answers)})")
        ax.hist(ood, bins=bins, alpha=0.6, label=f"out-of-domain best hit ({len(ood)})")
        ax.axvline(rec["cut"], color="black", linestyle="--", linewidth=1, label=f"recommended cut {rec['cut']}")
        ax.set_title(f"{run['strategy']}/{run['retriever']}")
        ax.set_xlabel("cosine distance")
        ax.legend(fontsize="x-small")
    axes[0][0].set_ylabel("queries")
    return _save(fig, path)


def frontier_plot(results: dict, path: Path) -> Path:
    """Bluffs vs lost answers over the cosine cuts; a second panel for rerank-score cuts if any."""
    plt = _pyplot()
    rec = results["recommended"]
    points = [p for p in results["gate"] if p["strategy"] == rec["strategy"]]
    kinds = [k for k in ("cosine", "rerank") if any(p["kind"] == k for p in points)]
    fig, axes = plt.subplots(1, len(kinds), figsize=(6 * len(kinds), 4.5), squeeze=False)
    for ax, kind in zip(axes[0], kinds):
        for retriever in results["config"]["retrievers"]:
            line = [p for p in points if (p["retriever"], p["kind"]) == (retriever, kind)]
            if not line:
                continue
            ax.plot([p["lost"] for p in line], [p["bluffs"] for p in line], marker="o", markersize=3, label=retriever)
            if retriever == rec["retriever"] or kind == "rerank":
                for p in line[::4]:
                    ax.annotate(f"{p['cut']:.2f}", (p["lost"], p["bluffs"]), fontsize=7,
                                textcoords="offset points", xytext=(4, 4))
        if kind == "cosine":
            ax.scatter([rec["lost"]], [rec["bluffs"]], s=120, facecolors="none", edgecolors="black",
                       label=f"recommended {rec['retriever']} cut {rec['cut']}", zorder=5)
        ax.set_xlabel(f"answers lost (of those in the top {results['config']['gate_window']})")
        ax.set_ylabel(f"bluffs (of {rec['ood']} out-of-domain queries)")
        ax.set_title(f"Refusal frontier, strategy {rec['strategy']}, {kind} {'distance' if kind == 'cosine' else 'score'} cuts")
        ax.grid(alpha=0.3)
        ax.legend(fontsize="small")
    return _save(fig, path)


def format_recall(doc: dict, path: Path, baseline: str) -> Path:
    """Recall@k of every format, a panel per strategy/retriever run of ``baseline``'s."""
    formats = doc["formats"]
    base = formats[baseline]
    panels = []
    for run in base["runs"]:
        key = (run["strategy"], run["retriever"])
        lines = [(fmt, r) for fmt, result in formats.items() for r in result["runs"]
                 if (r["strategy"], r["retriever"]) == key]
        panels.append(("/".join(key), lines))
    return _recall_panels(panels, base["config"], "format",
                          f"Recall@k per format ({base['corpus']['queries']} queries)", path)


def _save(fig, path: Path) -> Path:
    fig.tight_layout()
    # No timestamps in the file: identical results give identical images.
    fig.savefig(path, dpi=110, metadata={"Software": None})
    import matplotlib.pyplot as plt

    plt.close(fig)
    return path
