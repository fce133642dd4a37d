"""Prefect pickles flows to serve them and tasks to ship them to Dask workers."""
import cloudpickle
import pytest

from citeline.flows.ingest import index_folder
from citeline.flows.reindex import reindex
from citeline.flows.retry import retry_failed
from citeline.tasks.document import prepare_document, write_documents


@pytest.mark.parametrize("obj", [index_folder, reindex, retry_failed, prepare_document, write_documents],
                         ids=lambda o: o.name)
def test_flows_and_tasks_survive_pickling(obj):
    again = cloudpickle.loads(cloudpickle.dumps(obj))
    assert again.name == obj.name
