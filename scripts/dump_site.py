"""Dump every page and API answer a visitor can reach, to compare two versions
of the code byte for byte (a refactor must change none of them).

It crawls the site in process (Django's test client, no server) from ``/`` and
``/api/``: every same-site link found in a page, every ``url`` an API
answer names, breadth first, at most ``--variants`` query strings per path and
``--limit`` addresses in all, and
writes each answer as ``<n>.txt`` (address, status, content type, body) plus an
``index.txt``. CSRF tokens are the only thing blanked (they differ per request).

    make demo-data DATABASE_URL=postgres://postgres@127.0.0.1:5432/rigboard_dump
    DEBUG=true DATABASE_URL=postgres://postgres@127.0.0.1:5432/rigboard_dump \\
        .venv/bin/python scripts/dump_site.py --out /tmp/dump-before
    # check out the other version, same database, --out /tmp/dump-after
    diff -r /tmp/dump-before /tmp/dump-after
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from collections import deque
from pathlib import Path
from typing import Any
from urllib.parse import quote, urldefrag, urlsplit

ROOT = Path(__file__).resolve().parent.parent
HREF = re.compile(r'(?:href|src|action)="([^"#]*)"')
CSRF = re.compile(r'(name="csrfmiddlewaretoken" value=")[^"]+(")')
# Not a visitor's reading: the admin, sign-in flows, static files, downloads of the same data.
SKIP = ("/admin", "/accounts", "/static", "/me/", "/api/docs")
# API lists and the field that names an item's own address below them.
ITEM_KEYS = {"/api/runs/": "uuid", "/api/rigs/": "name", "/api/sources/": "key", "/api/campaigns/": "id"}


def api_links(node: Any) -> list[str]:
    """Return the site addresses an API answer names (``url`` fields, ``next``/``previous``)."""
    found: list[str] = []
    if isinstance(node, dict):
        for key, value in node.items():
            if key in {"url", "next", "previous"} and isinstance(value, str):
                found.append(value)
            else:
                found.extend(api_links(value))
    elif isinstance(node, list):
        for item in node:
            found.extend(api_links(item))
    return found


def local(address: str) -> str | None:
    """Return ``address`` as a path with its query when it is on this site and worth reading, else None."""
    address = urldefrag(address)[0]
    parts = urlsplit(address)
    if parts.netloc and parts.netloc != "testserver" or parts.scheme not in {"", "http"}:
        return None
    path = parts.path or "/"
    if not path.startswith("/") or path.startswith(SKIP):
        return None
    return path + (f"?{parts.query}" if parts.query else "")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--limit", type=int, default=1500, help="the most addresses to read (default 1500)")
    parser.add_argument("--variants", type=int, default=12, help="the most query strings read per path (default 12)")
    args = parser.parse_args()
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "leaderboard.settings")
    # Django's test client asks for the host "testserver", which DEBUG's loopback list lacks.
    os.environ.setdefault("ALLOWED_HOSTS", "testserver,localhost")
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.test import Client

    client = Client()
    args.out.mkdir(parents=True, exist_ok=True)
    queue = deque(["/", "/campaigns/", "/regressions/", "/llama-bench/", "/api/schema/", *ITEM_KEYS])
    seen = set(queue)
    variants: dict[str, int] = {}
    index = []
    while queue and len(index) < args.limit:
        address = queue.popleft()
        response = client.get(address)
        body = response.content.decode("utf-8", "replace")
        kind = response.get("Content-Type", "")
        links: list[str] = []
        if "html" in kind:
            body = CSRF.sub(r"\1…\2", body)
            links = HREF.findall(body)
        elif "json" in kind:
            try:
                document = json.loads(body)
                links = api_links(document)
                path = address.split("?")[0]
                if path in ITEM_KEYS and isinstance(document, dict):
                    key = ITEM_KEYS[path]
                    links += [f"{path}{quote(str(item[key]))}/" for item in document.get("results", []) if key in item]
            except ValueError:
                pass
        number = len(index)
        (args.out / f"{number:04d}.txt").write_text(f"{address}\n{response.status_code} {kind}\n\n{body}")
        index.append(f"{number:04d} {response.status_code} {address}")
        for link in links:
            target = local(link.replace("&amp;", "&"))
            if not target or target in seen:
                continue
            path = target.split("?")[0]
            if variants.get(path, 0) >= args.variants:
                continue
            variants[path] = variants.get(path, 0) + 1
            seen.add(target)
            queue.append(target)
    (args.out / "index.txt").write_text("\n".join(index) + "\n")
    print(f"{len(index)} addresses read ({len(queue)} more not read), written to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
