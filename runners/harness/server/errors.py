"""How a server fails: one ``ServerError`` with a ``kind`` the rig reports and the
service stores (a campaign trial's failure kind), named once in ``ServerFailure``."""

from __future__ import annotations

from enum import StrEnum


class ServerFailure(StrEnum):
    """Why a server could not be started or used (``ServerError.kind``)."""

    UNKNOWN_FLAG = "unknown_flag"  # llama-server rejected a flag
    OUT_OF_MEMORY = "out_of_memory"
    PORT_IN_USE = "port_in_use"
    MODEL_LOAD_FAILED = "model_load_failed"
    EXITED = "exited"  # exited while loading, for no reason its log names
    STARTUP_TIMEOUT = "startup_timeout"
    BAD_MODEL = "bad_model"  # the model file is no GGUF, or is cut short
    MISSING_BINARY = "missing_binary"
    BAD_BINARY = "bad_binary"  # the binary does not run or print its version
    UNREACHABLE = "unreachable"  # an attached server does not answer
    PERPLEXITY = "perplexity"  # llama-perplexity failed (a campaign's quality check)


class ServerError(RuntimeError):
    """The server could not be started or answered wrongly; nothing was measured."""

    def __init__(self, reason: str, *, kind: ServerFailure, log_tail: str = "") -> None:
        super().__init__(reason)
        self.reason = reason
        self.kind: ServerFailure = kind
        self.log_tail = log_tail
