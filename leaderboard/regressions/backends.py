"""Which llama.cpp backend a subscription's builds use, read from its CMake
flags (what the rig compiles), else from the rig's GPUs. One definition for
the report, the matrix and the fan-out's "reproduces on 3 of 4 CUDA rigs"."""

from __future__ import annotations

import shlex

from leaderboard.regressions.models import Subscription

# The CMake switch of each GPU backend, in the order a build with two is named by.
BACKEND_FLAGS = (
    ("CUDA", ("GGML_CUDA",)),
    ("ROCm", ("GGML_HIP", "GGML_HIPBLAS")),
    ("Vulkan", ("GGML_VULKAN",)),
    ("Metal", ("GGML_METAL",)),
    ("SYCL", ("GGML_SYCL",)),
)
_ON = {"ON", "1", "TRUE", "YES", "Y"}


def backend_from_flags(flags: str) -> str | None:
    """Return the backend a CMake flag line switches on (``-DGGML_CUDA=ON`` →
    "CUDA"); None when it switches none on. A line that cannot be split as a
    shell line names none."""
    try:
        words = shlex.split(flags)
    except ValueError:
        return None
    on = set()
    for word in words:
        name, _, value = word.removeprefix("-D").partition("=")
        if value.upper() in _ON:
            on.add(name.split(":")[0])
    for backend, names in BACKEND_FLAGS:
        if on.intersection(names):
            return backend
    return None


def subscription_backend(subscription: Subscription) -> str:
    """Return the backend of the subscription's builds: from its flags; a build
    without a GPU switch is CPU (llama.cpp on macOS turns Metal on by default,
    so a Mac rig with Apple GPUs and no switch is Metal)."""
    named = backend_from_flags(subscription.build_flags)
    if named:
        return named
    gpus = " ".join(g.model for g in subscription.rig.gpus.all()).lower()
    if "apple" in gpus or "macos" in (subscription.rig.os or "").lower():
        return "Metal"
    return "CPU"
