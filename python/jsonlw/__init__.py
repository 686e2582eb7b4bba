"""jsonlw for Python: the C++ JSON Lines writers (perf metrics, raw model output, request
traces) for asyncio serving stacks. Records are converted on the caller's thread and queued;
serialization and appends run on C++ threads without the GIL. See docs/python.md.

    import jsonlw.trtllm   # drop-ins for TensorRT-LLM's writers and raw-output hook
"""

from . import _native
from ._native import IoContext, SubmitResult
from ._runtime import default_io_context
from ._writer import WriterBase
from .snapshot import CaptureResult, SnapshotStage, cuda_device_count

__version__ = _native.__version__

__all__ = ["IoContext", "SubmitResult", "WriterBase", "default_io_context", "SnapshotStage",
           "CaptureResult", "cuda_device_count", "__version__"]
