"""Run the fake API server by hand: `python -m tests.fakeapi --port 6443 --crds manifests/crds`.

It prints the path of an admin kubeconfig (HTTPS with the generated CA) and serves until interrupted.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
from pathlib import Path

from tests.fakeapi.server import DEFAULT_CRDS, FakeApiServer


async def serve(*, port: int, crds: Path, kubeconfig: Path | None) -> None:
    server = FakeApiServer(crds=crds, port=port)
    await server.start()
    # A long-running server allocates a few dicts per request, nearly all short-lived or kept in the store
    # for good: frequent young-generation collections were ~6 % of its CPU under benchmark load.
    gc.freeze()
    gc.set_threshold(50_000, 50, 100)
    path = server.kubeconfig_path()
    if kubeconfig is not None:
        kubeconfig.write_text(path.read_text())
        path = kubeconfig
    print(f"fake kube-apiserver serving on {server.url}", flush=True)
    print(f"kubeconfig: {path}", flush=True)
    try:
        await asyncio.Event().wait()
    finally:
        await server.close()


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m tests.fakeapi", description=__doc__)
    parser.add_argument("--port", type=int, default=6443, help="port on 127.0.0.1 (0 picks a free one)")
    parser.add_argument("--crds", type=Path, default=DEFAULT_CRDS, help="directory of CRD YAML files")
    parser.add_argument("--kubeconfig", type=Path, default=None, help="also write the kubeconfig here")
    args = parser.parse_args()
    with contextlib.suppress(KeyboardInterrupt):
        main_coroutine = serve(port=args.port, crds=args.crds, kubeconfig=args.kubeconfig)
        try:
            import uvloop  # the same event loop the controller runs on, when installed
        except ImportError:
            asyncio.run(main_coroutine)
        else:
            uvloop.run(main_coroutine)


if __name__ == "__main__":
    main()
