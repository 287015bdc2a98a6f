"""chorus as a torch.distributed backend.

Installed with ``pip install --no-build-isolation ./python``, the package declares the entry point
``chorus = chorus_torch:register`` in the group ``torch.distributed.backends``, so
``torch.distributed.init_process_group("chorus")`` works in a script that never imports it. CPU
tensors; processes on one machine (torchrun, or mpirun with torch's env:// variables set), talking
through chorus's shared-memory backend. docs/torch.md has the semantics.
"""

from datetime import timedelta

import torch  # noqa: F401  (loads libtorch before the extension)
import torch.distributed as dist

from . import _C

__all__ = ["register", "host_all_reduce"]

host_all_reduce = _C.host_all_reduce


def _create(dist_options, backend_options):
    timeout = dist_options.timeout
    if not isinstance(timeout, timedelta):
        timeout = timedelta(seconds=float(timeout))
    timeout_ms = max(1, int(timeout.total_seconds() * 1000))
    return _C.Backend(dist_options.store, dist_options.group_rank, dist_options.group_size, timeout_ms)


def register():
    """Makes "chorus" a torch.distributed backend name (CPU). Idempotent."""
    if "chorus" not in dist.Backend.backend_list:
        dist.Backend.register_backend("chorus", _create, extended_api=True, devices=["cpu"])


register()
