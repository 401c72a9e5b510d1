"""A real headless browser for the dashboard's tests: the system's Chromium (Debian's ``chromium`` package),
driven over the DevTools protocol with aiohttp's WebSocket client, so nothing is downloaded.

``open_browser`` starts Chromium with a fresh profile and an ephemeral DevTools port and yields a
:class:`Tab`: ``goto`` a URL and wait for its load, ``evaluate`` JavaScript in the page, ``wait_until`` an
expression is true (awaiting the page's own updates), ``screenshot`` the whole page. ``console_errors``
collects what the browser logged as errors (a Content-Security-Policy violation is one). ``CHROMIUM`` is None
where no Chromium is installed: tests skip with :data:`NO_CHROMIUM`.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import itertools
import shutil
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp

__all__ = ["CHROMIUM", "NO_CHROMIUM", "Tab", "kubectl_proxy", "open_browser"]

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
NO_CHROMIUM = "no chromium on PATH (apt-get install -y chromium)"
JSON = dict[str, Any]


class Tab:
    """One page of the browser, over its DevTools WebSocket."""

    def __init__(self, socket: aiohttp.ClientWebSocketResponse) -> None:
        self.socket = socket
        self._ids = itertools.count(1)
        self._waiting: dict[int, asyncio.Future[JSON]] = {}
        self._loaded = asyncio.Event()
        self.console_errors: list[str] = []
        self._reader = asyncio.get_running_loop().create_task(self._read())

    async def _read(self) -> None:
        async for message in self.socket:
            if message.type != aiohttp.WSMsgType.TEXT:
                break
            data = message.json()
            if "id" in data:
                future = self._waiting.pop(data["id"], None)
                if future is not None and not future.done():
                    future.set_result(data)
            elif data.get("method") == "Page.loadEventFired":
                self._loaded.set()
            elif data.get("method") == "Log.entryAdded":
                entry = data["params"]["entry"]
                if entry.get("level") == "error":
                    self.console_errors.append(f"{entry.get('source')}: {entry.get('text')}")
            elif data.get("method") == "Runtime.exceptionThrown":
                details = data["params"]["exceptionDetails"]
                self.console_errors.append(f"exception: {details.get('text')} {details.get('exception')}")
        for future in self._waiting.values():
            if not future.done():
                future.set_exception(ConnectionError("the browser closed its DevTools connection"))

    async def call(self, method: str, **params: Any) -> JSON:
        ident = next(self._ids)
        future: asyncio.Future[JSON] = asyncio.get_running_loop().create_future()
        self._waiting[ident] = future
        await self.socket.send_json({"id": ident, "method": method, "params": params})
        answer = await asyncio.wait_for(future, 60)
        if "error" in answer:
            raise RuntimeError(f"{method}: {answer['error']}")
        result: JSON = answer.get("result", {})
        return result

    async def goto(self, url: str) -> None:
        self._loaded.clear()
        answer = await self.call("Page.navigate", url=url)
        if answer.get("errorText"):
            raise RuntimeError(f"navigating to {url}: {answer['errorText']}")
        await asyncio.wait_for(self._loaded.wait(), 60)

    async def evaluate(self, expression: str) -> Any:
        answer = await self.call("Runtime.evaluate", expression=expression, returnByValue=True)
        if "exceptionDetails" in answer:
            raise RuntimeError(f"{expression}: {answer['exceptionDetails']}")
        return answer["result"].get("value")

    async def wait_until(self, expression: str, *, timeout: float = 60.0) -> None:
        """Until ``expression`` is true in the page: a promise resolved by a MutationObserver the first time
        it is (the page's own updates change the DOM), so no polling from here."""
        script = f"""new Promise((resolve) => {{
            const check = () => {{ if ({expression}) {{ observer.disconnect(); resolve(true); }} }};
            const observer = new MutationObserver(check);
            observer.observe(document, {{subtree: true, childList: true, characterData: true}});
            check();
        }})"""
        answer = await asyncio.wait_for(
            self.call("Runtime.evaluate", expression=script, awaitPromise=True, returnByValue=True), timeout
        )
        assert answer["result"].get("value") is True, answer

    async def screenshot(self, path: Path, *, width: int = 1280) -> None:
        """The whole page as a PNG, ``width`` CSS pixels wide."""
        height = await self.evaluate("document.documentElement.scrollHeight")
        await self.call(
            "Emulation.setDeviceMetricsOverride",
            width=width,
            height=int(height),
            deviceScaleFactor=1,
            mobile=False,
        )
        shot = await self.call("Page.captureScreenshot", format="png", captureBeyondViewport=True)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(base64.b64decode(shot["data"]))


@contextlib.asynccontextmanager
async def open_browser(profile: Path) -> AsyncIterator[Tab]:
    """Chromium, headless, with its profile in ``profile``; one blank tab, ready for ``goto``."""
    assert CHROMIUM is not None, NO_CHROMIUM
    profile.mkdir(parents=True, exist_ok=True)
    process = await asyncio.create_subprocess_exec(
        CHROMIUM,
        "--headless=new",
        "--no-sandbox",  # tests run as root in a container, where Chromium's sandbox cannot start
        "--disable-gpu",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-extensions",
        "--remote-debugging-port=0",
        f"--user-data-dir={profile}",
        "--window-size=1280,900",
        "about:blank",
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        assert process.stderr is not None
        while True:  # Chromium prints its DevTools endpoint once it listens
            line = (await asyncio.wait_for(process.stderr.readline(), 60)).decode()
            if not line:
                raise RuntimeError("chromium exited before opening its DevTools port")
            if line.startswith("DevTools listening on "):
                endpoint = line.removeprefix("DevTools listening on ").strip()
                break
        drain = asyncio.get_running_loop().create_task(process.stderr.read())
        http = endpoint.replace("ws://", "http://").split("/devtools/")[0]
        async with aiohttp.ClientSession() as session:
            async with session.get(f"{http}/json/list") as response:
                targets = await response.json()
            page = next(t for t in targets if t.get("type") == "page")
            async with session.ws_connect(
                page["webSocketDebuggerUrl"], max_msg_size=64 * 1024 * 1024
            ) as socket:
                tab = Tab(socket)
                for domain in ("Page", "Runtime", "Log"):
                    await tab.call(f"{domain}.enable")
                try:
                    yield tab
                finally:
                    tab._reader.cancel()
                    with contextlib.suppress(asyncio.CancelledError):
                        await tab._reader
        drain.cancel()
    finally:
        if process.returncode is None:
            process.terminate()
            try:
                await asyncio.wait_for(process.wait(), 10)
            except TimeoutError:
                process.kill()
                await process.wait()


@contextlib.asynccontextmanager
async def kubectl_proxy(kubectl: str, kubeconfig: Path, *extra: str) -> AsyncIterator[str]:
    """``kubectl proxy`` on an ephemeral port, as a user runs it to open the dashboard; yields its URL."""
    process = await asyncio.create_subprocess_exec(
        kubectl,
        f"--kubeconfig={kubeconfig}",
        "proxy",
        "--port=0",
        *extra,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        assert process.stdout is not None
        line = (await asyncio.wait_for(process.stdout.readline(), 60)).decode()
        if not line.startswith("Starting to serve on "):
            error = (await process.stderr.read()).decode() if process.stderr else ""
            raise RuntimeError(f"kubectl proxy did not start: {line} {error}")
        yield "http://" + line.removeprefix("Starting to serve on ").strip()
    finally:
        if process.returncode is None:
            process.terminate()
            await process.wait()
