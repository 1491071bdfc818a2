"""nbval's kernels talk over Unix sockets, not loopback TCP ports.

jupyter_client picks a kernel's five TCP ports by binding port 0 and letting go; the kernel binds
them a moment later. Under ``make test`` two notebooks run at once, each starting a devnet that
binds ports of its own, so a port picked for one kernel can be taken before it binds, and that
kernel dies ("Kernel died before replying to kernel_info": ZMQ's "Address already in use";
nbmake#129). IPC transport names sockets by path: a fresh path per kernel cannot collide.
"""

from __future__ import annotations

import atexit
import shutil
import tempfile
import uuid
from pathlib import Path
from typing import Any

import nbval.kernel
from jupyter_client.manager import KernelManager

_SOCKETS = Path(tempfile.mkdtemp(prefix="nbval-kernels-"))
atexit.register(shutil.rmtree, _SOCKETS, ignore_errors=True)


class IpcKernelManager(KernelManager):
    """A KernelManager on IPC transport, its sockets under a path of its own."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("transport", "ipc")
        kwargs.setdefault("ip", str(_SOCKETS / uuid.uuid4().hex[:12]))
        super().__init__(**kwargs)


nbval.kernel.KernelManager = IpcKernelManager  # nbval.kernel.start_new_kernel builds it by name
