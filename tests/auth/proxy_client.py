"""The official Python SDK client (`mcp`, pinned in scripts/peers/requirements.txt) signing in
to an MCP server through sake's authorization proxy, from a bare 401.

    python proxy_client.py <mcp url> <2026-07-28|2025-11-25> <callback port>

Started by sake-runtime/tests/auth_proxy.rs, which is the user's browser: this script prints
`AUTHORIZE <url>` when the SDK wants the user to authorize; the test signs in there and opens
the redirect to http://127.0.0.1:<callback port>/callback, which this script serves. Each step
prints one JSON line ({"step": ..., "value": ...}); a failure prints {"step", "error"} and exits 1.
"""

import asyncio
import json
import sys
from urllib.parse import parse_qs, urlsplit

import httpx2
from mcp import Client
from mcp.client.auth import OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientMetadata

url, revision, port = sys.argv[1], sys.argv[2], int(sys.argv[3])
redirect = f"http://127.0.0.1:{port}/callback"


def out(step, value):
    print(json.dumps({"step": step, "value": value}), flush=True)


class Memory:
    def __init__(self):
        self.tokens = None
        self.client = None
        self.registrations = 0

    async def get_tokens(self):
        return self.tokens

    async def set_tokens(self, tokens):
        self.tokens = tokens

    async def get_client_info(self):
        return self.client

    async def set_client_info(self, client_info):
        self.client = client_info
        self.registrations += 1


callbacks: asyncio.Queue = asyncio.Queue()


async def serve_callback(reader, writer):
    line = (await reader.readline()).decode()
    while (await reader.readline()) not in (b"\r\n", b""):
        pass
    target = line.split(" ")[1] if " " in line else "/"
    body = b"signed in; you may close this page"
    writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: %d\r\nconnection: close\r\n\r\n%s" % (len(body), body))
    await writer.drain()
    writer.close()
    await callbacks.put(target)


async def on_redirect(authorization_url: str) -> None:
    print(f"AUTHORIZE {authorization_url}", flush=True)


async def on_callback() -> AuthorizationCodeResult:
    target = await asyncio.wait_for(callbacks.get(), 60)
    q = parse_qs(urlsplit(target).query)
    first = lambda k: q.get(k, [None])[0]
    return AuthorizationCodeResult(code=first("code"), state=first("state"), iss=first("iss"))


async def main():
    server = await asyncio.start_server(serve_callback, "127.0.0.1", port)
    storage = Memory()
    provider = OAuthClientProvider(
        server_url=url,
        client_metadata=OAuthClientMetadata(
            client_name="Python SDK e2e",
            redirect_uris=[redirect],
            grant_types=["authorization_code", "refresh_token"],
            response_types=["code"],
            token_endpoint_auth_method="none",
        ),
        storage=storage,
        redirect_handler=on_redirect,
        callback_handler=on_callback,
    )
    mode = "2026-07-28" if revision == "2026-07-28" else "legacy"
    step = "connect"
    try:
        async with httpx2.AsyncClient(auth=provider, timeout=30) as http:
            async with Client(streamable_http_client(url, http_client=http), mode=mode) as client:
                out("revision", client.protocol_version)
                step = "whoami"
                result = await client.call_tool("whoami", {})
                out("whoami", result.structured_content)
                # Step-up: admin_report needs `admin`; the 403's insufficient_scope asks for
                # it, on both eras.
                step = "admin_report"
                result = await client.call_tool("admin_report", {})
                out("admin_report", [c.text for c in result.content if getattr(c, "type", "") == "text"])
                out("registrations", storage.registrations)
                out("scope", storage.tokens.scope if storage.tokens else None)
    except Exception as e:  # noqa: BLE001 - every failure is reported
        print(json.dumps({"step": step, "error": repr(e)}), flush=True)
        sys.exit(1)
    finally:
        server.close()


asyncio.run(main())
