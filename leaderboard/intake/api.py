"""POST /api/llama-bench/: a llama-bench output file, imported whole or not at all."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import exceptions, status
from rest_framework.request import Request
from rest_framework.response import Response

from leaderboard.core.api.errors import error_response
from leaderboard.intake.parsers import LlamaBenchFileParser
from leaderboard.intake.services import FORMATS, LlamaBenchImport, llama_bench_import, repetitions_read
from leaderboard.results.api.views.base import ApiMixin, APIView
from leaderboard.results.models import RigToken
from runners.llamabench import LlamaBenchError


def import_summary(result: LlamaBenchImport) -> dict[str, Any]:
    """Return the answer's body: the format, counts and one line per stored run."""
    return {
        "format": result.format,
        "rows": len(result.runs),
        "created": result.created,
        "runs": [
            {
                "uuid": str(run.uuid),
                "workload": run.workload.name,
                "comparison_key": run.comparison_key,
                "n_samples": run.n_samples,
                "summary_source": run.summary_source,
                "decode_tokens_per_s_mean": run.decode_tokens_per_s_mean,
                "prefill_tokens_per_s_mean": run.prefill_tokens_per_s_mean,
            }
            for run in result.runs
        ],
    }


class LlamaBenchImportApi(ApiMixin, APIView):
    """Import llama-bench output (-o json, -o jsonl, -o csv or its Markdown table, -o md) sent as the request body."""

    parser_classes = [LlamaBenchFileParser]
    pagination_class = None

    @extend_schema(
        operation_id="llama_bench_import",
        request={"text/plain": {"type": "string"}},
        parameters=[
            OpenApiParameter("rig", str, description="The token's rig (default); another name is refused (403)."),
            OpenApiParameter("file_format", str, enum=list(FORMATS), description="Detected when omitted."),
            OpenApiParameter("notes", str, description="Stored with every run."),
            OpenApiParameter(
                "repetitions",
                int,
                description="The -r a Markdown table was run with (it does not print it); 'not stated' when omitted.",
            ),
        ],
        responses={
            201: OpenApiResponse(description="Stored: one run per test row."),
            200: OpenApiResponse(description="Every row was already stored (same file imported again)."),
            400: OpenApiResponse(
                description='{"errors": {"rows.N.field": ["why"]}} ("line.N.column" for a Markdown table); '
                "nothing stored."
            ),
            401: OpenApiResponse(description="No valid rig token."),
            403: OpenApiResponse(description="The token belongs to another rig."),
            413: OpenApiResponse(description="The file is over RIGBOARD_LLAMA_BENCH_MAX_BYTES."),
        },
    )
    def post(self, request: Request) -> Response:
        token = request.auth
        assert isinstance(token, RigToken)  # noqa: S101 - RigTokenOrReadOnly guarantees it
        claimed = request.query_params.get("rig")
        if claimed and claimed != token.rig.name:
            raise exceptions.PermissionDenied(
                f"This token belongs to rig {token.rig.name!r}; it cannot import runs for rig {claimed!r}."
            )
        fmt = request.query_params.get("file_format") or None  # ?format= is DRF's renderer switch
        text = request.data if isinstance(request.data, str) else ""
        if not text.strip():
            return error_response({"body": ["The body is empty: send the llama-bench output file."]}, 400)
        try:
            result = llama_bench_import(
                rig=token.rig,
                text=text,
                fmt=fmt,
                notes=request.query_params.get("notes", ""),
                repetitions=repetitions_read(request.query_params.get("repetitions")),
            )
        except LlamaBenchError as exc:
            return error_response(exc.errors, status.HTTP_400_BAD_REQUEST)
        code = status.HTTP_201_CREATED if result.created else status.HTTP_200_OK
        return Response(import_summary(result), status=code)
