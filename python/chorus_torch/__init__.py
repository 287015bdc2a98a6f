"""chorus as a torch.distributed backend.

Installed with ``pip install --no-build-isolation ./python``, the package declares the entry point
``chorus = chorus_torch:register`` in the group ``torch.distributed.backends``, so
``torch.distributed.init_process_group("chorus")`` works in a script that never imports it. CPU
tensors. The transport is chorus's shared-memory backend (processes on one machine, any launcher)
or, in a build with MPI and under mpirun, chorus's MPI backend (across machines);
CHORUS_TORCH_TRANSPORT=shm|mpi chooses. docs/torch.md has the semantics.
"""

import atexit
import os
from datetime import timedelta

import torch  # noqa: F401  (loads libtorch before the extension)
import torch.distributed as dist

from . import _C

__all__ = ["register", "host_all_reduce", "has_mpi"]

host_all_reduce = _C.host_all_reduce
has_mpi = _C.has_mpi
_mpi_exit_registered = False


def _transport():
    chosen = os.environ.get("CHORUS_TORCH_TRANSPORT", "")
    if chosen:
        return chosen
    launched_by_mpi = "OMPI_COMM_WORLD_SIZE" in os.environ or "PMI_SIZE" in os.environ
    return "mpi" if has_mpi and launched_by_mpi else "shm"


def _finalize_mpi():
    # Before MPI_Finalize, every communicator must be gone: destroy torch's groups first.
    if dist.is_initialized():
        dist.destroy_process_group()
    _C.finalize_mpi()


def _create(dist_options, backend_options):
    global _mpi_exit_registered
    timeout = dist_options.timeout
    if not isinstance(timeout, timedelta):
        timeout = timedelta(seconds=float(timeout))
    timeout_ms = max(1, int(timeout.total_seconds() * 1000))
    transport = _transport()
    if transport == "mpi":
        # mpi::Comm bounds its waits by CHORUS_TIMEOUT_MS, read per process: the group's timeout unless set.
        os.environ.setdefault("CHORUS_TIMEOUT_MS", str(timeout_ms))
        if not _mpi_exit_registered:
            atexit.register(_finalize_mpi)
            _mpi_exit_registered = True
    ranks = list(getattr(dist_options, "global_ranks_in_group", []) or [])
    return _C.Backend(dist_options.store, dist_options.group_rank, dist_options.group_size, timeout_ms, transport, ranks)


def register():
    """Makes "chorus" a torch.distributed backend name (CPU). Idempotent."""
    if "chorus" not in dist.Backend.backend_list:
        dist.Backend.register_backend("chorus", _create, extended_api=True, devices=["cpu"])


register()
