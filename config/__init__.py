import os
import sys

# Arrow chooses the allocator of its C++ code once, when pyarrow is first imported, from this
# variable; so it is set here, before Django or Celery import anything that imports pyarrow.
# (`pa.set_memory_pool` after the import reaches only allocations made from Python: Parquet, IPC
# and compute kernels went on allocating with mimalloc.) pyarrow's default, mimalloc, hands freed
# memory back at once and faults it in again as huge pages the kernel zeroes 2 MiB at a time;
# jemalloc keeps freed pages a while (docs/operations.md, "Import speed"). Linux wheels carry
# jemalloc; an operator's ARROW_DEFAULT_MEMORY_POOL still wins.
if sys.platform == "linux":
    os.environ.setdefault("ARROW_DEFAULT_MEMORY_POOL", "jemalloc")

# Load the Celery app whenever Django starts so that @shared_task binds to it.
from config.celery import app as celery_app  # noqa: E402

__all__ = ("celery_app",)
