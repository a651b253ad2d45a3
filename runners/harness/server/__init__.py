"""Start llama-server (or attach to a running OpenAI-compatible server), wait until it is
healthy, describe it, stop it; one module per layer:

- ``errors``: ``ServerError`` and its kinds (``ServerFailure``);
- ``handle``: what the suite asks of any server over HTTP (health, /props, /v1/models);
- ``process``: the llama-server process this runner owns (launch, health wait, log, stop);
- ``attach``: a server someone else runs, and which engine it is;
- ``binary``: finding the llama-server binary and reading its build.

The names below are the package's public face, imported from here."""

from runners.harness.server.attach import LLAMA_API_ENGINES, AttachedServer, detect_engine, engine_api
from runners.harness.server.binary import packaged_binary, read_version, resolve_binary
from runners.harness.server.errors import ServerError, ServerFailure
from runners.harness.server.handle import NON_OPENAI_FIELDS, ServerHandle
from runners.harness.server.process import LlamaServer, free_port, port_is_free

__all__ = [
    "LLAMA_API_ENGINES",
    "NON_OPENAI_FIELDS",
    "AttachedServer",
    "LlamaServer",
    "ServerError",
    "ServerFailure",
    "ServerHandle",
    "detect_engine",
    "engine_api",
    "free_port",
    "packaged_binary",
    "port_is_free",
    "read_version",
    "resolve_binary",
]
