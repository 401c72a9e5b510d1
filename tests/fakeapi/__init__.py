"""An in-process fake kube-apiserver for tests: real HTTPS, kubectl-compatible, faithful where our code looks.

See README.md for what is faithful and what is deliberately left out. Entry point: `FakeApiServer`.
"""

from tests.fakeapi.identity import ADMIN_TOKEN, UserInfo
from tests.fakeapi.server import DEFAULT_CRDS, FakeApiServer, load_crds

__all__ = ["ADMIN_TOKEN", "DEFAULT_CRDS", "FakeApiServer", "UserInfo", "load_crds"]
