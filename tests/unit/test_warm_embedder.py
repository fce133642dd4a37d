"""What a writing sync loads while it waits for Prefect's temporary server (runtime/handles.py
``warm_embedder``): the model's own warm-up where it has one, nothing where it has none, and a
model that cannot load is left for the run to report."""
import pytest

from citeline.pipeline import embed
from citeline.runtime.handles import embedder_for, warm_embedder
from citeline.schemas.settings import IndexSettings
from fakes import HashEmbedder


class Warmable(HashEmbedder):
    warmed = 0

    def warm_for_few(self):
        self.warmed += 1


class Broken(HashEmbedder):
    def warm_for_few(self):
        raise OSError("model.onnx: No such file or directory")


@pytest.mark.parametrize("kind", [Warmable, Broken, HashEmbedder])
def test_the_model_warms_itself_if_it_can_and_a_failure_is_left_to_the_run(tmp_path, kind):
    name = f"fake/warm-{kind.__name__.lower()}"
    with embed.registered(name, lambda precision, batch_size: kind(name)):
        settings = IndexSettings(db=str(tmp_path / "db"), model=name)
        warm_embedder(settings)  # raises nothing, whatever the model does
        embedder = embedder_for(settings)
        assert getattr(embedder, "warmed", None) == (1 if kind is Warmable else None)
