"""`FakeApiServer`: the fake kube-apiserver as a test sees it, with start/stop, identities and fault hooks.

One object owns the store, the registry, the admission client and the aiohttp site. Tests talk to it over real
HTTPS (through a kubeconfig it writes, usable by kubectl and kubernetes-asyncio alike) and also directly
in-process: `create`/`patch`/`delete` bypass admission for setup, `get`/`list` return copies for assertions,
and `wait_for` awaits a condition that is re-checked after every write instead of sleeping. Fault hooks
(`delay`, `fail_next_writes`, `drop_watches`, `compact`, `restart`) reproduce what a real control plane does
to clients on a bad day.
"""

from __future__ import annotations

import base64
import copy
import functools
import shutil
import socket
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import yaml
from aiohttp import web

from tests.fakeapi.admission import WebhookAdmission
from tests.fakeapi.aggregator import Aggregator
from tests.fakeapi.api import PATCH_MERGE, Api
from tests.fakeapi.app import build_app
from tests.fakeapi.conversion import WebhookConversion
from tests.fakeapi.identity import ADMIN_TOKEN, Grant, Grants, TokenTable, UserInfo
from tests.fakeapi.jobs import finished_status
from tests.fakeapi.openapi import OpenApi
from tests.fakeapi.resources import Registry, ResourceType, builtin_types
from tests.fakeapi.store import Obj, ObjList, Store
from tests.fakeapi.tls import serving_material
from tests.front_proxy import ProxyCA, requestheader_configmap

REPO_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_CRDS = REPO_ROOT / "manifests" / "crds"


_YAML_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def load_crds(directory: Path) -> list[Obj]:
    """Every CustomResourceDefinition in the YAML files of `directory` (kustomization.yaml is skipped).

    Parsed once per content of the directory and copied for each caller: fixtures start many servers.
    """
    files = tuple(
        (path, path.stat().st_mtime_ns)
        for path in sorted(directory.glob("*.yaml"))
        if path.name != "kustomization.yaml"
    )
    return copy.deepcopy(_parse_crds(files))


@functools.lru_cache(maxsize=8)
def _parse_crds(files: tuple[tuple[Path, int], ...]) -> list[Obj]:
    crds = []
    for path, _ in files:
        for doc in yaml.load_all(path.read_text(), Loader=_YAML_LOADER):
            if isinstance(doc, dict) and doc.get("kind") == "CustomResourceDefinition":
                crds.append(doc)
    return crds


class FakeApiServer:
    def __init__(
        self,
        *,
        crds: Path | Iterable[Obj] | None = DEFAULT_CRDS,
        host: str = "127.0.0.1",
        port: int = 0,
        history: int = 20000,
        job_controller: bool = True,
        watch_timeout: float = 1800.0,
        bookmark_interval: float = 60.0,
        namespace_deletion_delay: float = 1.0,
        self_subject_review: bool = True,
    ) -> None:
        self.host = host
        self.port = port
        self.store = Store(history=history)
        self.registry = Registry(builtin_types(self_subject_review=self_subject_review))
        self.tokens = TokenTable()
        #: what SubjectAccessReviews allow (``system:masters`` always): ``grant`` adds to it
        self.grants = Grants()
        self.admission = WebhookAdmission(store=self.store)
        self.conversion = WebhookConversion(admission=self.admission)
        self.aggregator = Aggregator(self)
        self.api = Api(
            store=self.store,
            registry=self.registry,
            admission=self.admission,
            conversion=self.conversion,
            job_controller=job_controller,
            namespace_deletion_delay=namespace_deletion_delay,
        )
        self.openapi = OpenApi(self.registry)
        self.watch_timeout = watch_timeout
        self.bookmark_interval = bookmark_interval
        self.watch_generation = 0
        self.closing = False
        self.delay_seconds = 0.0
        self.requests: list[str] = []
        self._tls = serving_material()
        self._runner: web.AppRunner | None = None
        self._workdir = Path(tempfile.mkdtemp(prefix="fakeapi-"))
        #: the aggregator's front proxy: its CA is published in kube-system's requestheader ConfigMap and
        #: its client certificate is presented to APIService backends, as kube-apiserver does
        self.front_proxy = ProxyCA(self._workdir / "front-proxy")
        self.front_proxy_client = self.front_proxy.issue()
        self._crd_source = crds
        self._seeded = False

    async def _seed(self, crds: Path | Iterable[Obj] | None) -> None:
        """CRDs from the manifests, then the namespaces every cluster starts with."""
        crd_type = self.registry.get("apiextensions.k8s.io", "v1", "customresourcedefinitions")
        namespace_type = self.registry.get("", "v1", "namespaces")
        assert crd_type is not None and namespace_type is not None
        documents = load_crds(crds) if isinstance(crds, Path) else list(crds or [])
        for crd in documents:
            await self._create_seed(crd_type, copy.deepcopy(crd))
        for name in ("default", "kube-system", "kube-public", "kube-node-lease"):
            await self._create_seed(namespace_type, {"metadata": {"name": name}})
        configmap_type = self.registry.get("", "v1", "configmaps")
        assert configmap_type is not None
        configmap = requestheader_configmap(self.front_proxy.pem)
        await self.api.create(configmap_type, "kube-system", configmap)

    async def _create_seed(self, rtype: ResourceType, obj: Obj) -> None:
        await self.api.create(rtype, "", obj, admit=False)

    # ---- lifecycle ---------------------------------------------------------------------------------------
    @property
    def url(self) -> str:
        return f"https://{self.host}:{self.port}"

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def ca_path(self) -> Path:
        return self._tls.ca_path

    async def start(self) -> None:
        if self.port == 0:
            with socket.socket() as probe:
                probe.bind((self.host, 0))
                self.port = probe.getsockname()[1]
        self.closing = False
        if not self._seeded:
            self._seeded = True
            await self._seed(self._crd_source)
        self._runner = web.AppRunner(build_app(self), handle_signals=False, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(
            self._runner, self.host, self.port, ssl_context=self._tls.server_context(), reuse_address=True
        )
        await site.start()

    async def stop(self) -> None:
        self.closing = True
        self.store.notify()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        await self.admission.close()
        await self.conversion.close()
        await self.aggregator.close()

    async def close(self) -> None:
        await self.stop()
        shutil.rmtree(self._workdir, ignore_errors=True)

    async def restart(self) -> None:
        """Stop serving (every connection and watch ends), then serve the same data on the same port."""
        await self.stop()
        await self.start()

    async def __aenter__(self) -> FakeApiServer:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # ---- identities and client configuration -------------------------------------------------------------
    def add_token(self, token: str, user: str, groups: Iterable[str] = (), *, uid: str | None = None) -> None:
        self.tokens.add(token, UserInfo(username=user, groups=tuple(groups), uid=uid))

    def grant(self, subject: str, **rule: str) -> None:
        """Let ``subject`` (a user or a group) do what ``rule`` names (:class:`tests.fakeapi.identity.Grant`)
        in the answers to SubjectAccessReviews."""
        self.grants.add(Grant(subject, **rule))

    def kubeconfig_path(
        self,
        *,
        token: str | None = None,
        user: str | None = None,
        groups: Iterable[str] = (),
        namespace: str | None = None,
    ) -> Path:
        """A kubeconfig file; kubectl and kubernetes-asyncio both load it.

        Acts as the admin by default, with `token` if given, or as `user` (in `groups`), for whom a token is
        registered on the fly.
        """
        token = self._token_for(token=token, user=user, groups=groups)
        context: dict[str, Any] = {"cluster": "fake", "user": "user"}
        if namespace:
            context["namespace"] = namespace
        config = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [
                {
                    "name": "fake",
                    "cluster": {
                        "server": self.url,
                        "certificate-authority-data": base64.b64encode(self._tls.ca_pem).decode(),
                    },
                }
            ],
            "users": [{"name": "user", "user": {"token": token}}],
            "contexts": [{"name": "fake", "context": context}],
            "current-context": "fake",
        }
        safe = "".join(c if c.isalnum() else "_" for c in token)[:40]
        path = self._workdir / f"kubeconfig-{safe}-{namespace or ''}.yaml"
        path.write_text(yaml.safe_dump(config))
        return path

    def client_ssl_context(self) -> Any:
        return self._tls.client_context()

    def _token_for(self, *, token: str | None, user: str | None, groups: Iterable[str]) -> str:
        if token is not None:
            return token
        if user is None:
            return ADMIN_TOKEN
        minted = "user-" + "".join(c if c.isalnum() else "-" for c in user)
        self.add_token(minted, user, groups)
        return minted

    def client_configuration(
        self, *, token: str | None = None, user: str | None = None, groups: Iterable[str] = ()
    ) -> Any:
        """A kubernetes_asyncio `client.Configuration` for this server, acting as admin, `token` or `user`."""
        from kubernetes_asyncio import client  # heavy import; only tests that need a client pay for it

        configuration = client.Configuration()
        configuration.host = self.url
        configuration.ssl_ca_cert = str(self.ca_path)
        configuration.api_key = {"BearerToken": self._token_for(token=token, user=user, groups=groups)}
        configuration.api_key_prefix = {"BearerToken": "Bearer"}
        return configuration

    # ---- in-process access (no admission, no HTTP) -------------------------------------------------------
    def resolve(self, resource: str) -> ResourceType:
        """`jobs`, `jobs.batch`, `Job`, `workloads.kueue.x-k8s.io`, or a short name such as `cq`."""
        plural, _, group = resource.partition(".")
        candidates = []
        for rtype in self.registry.all():
            names = {rtype.plural, rtype.singular, rtype.kind.lower(), *rtype.short_names}
            if plural.lower() in names and (not group or group == rtype.group):
                candidates.append(rtype)
        if not candidates:
            raise KeyError(f"no served resource named {resource!r}")
        candidates.sort(
            key=lambda t: (t.group != "", t.group == "events.k8s.io", t.version != self._preferred(t))
        )
        return candidates[0]

    def _preferred(self, rtype: ResourceType) -> str:
        return rtype.served_versions[0] if rtype.served_versions else rtype.version

    def _type_of(self, obj: Obj) -> ResourceType:
        group, _, version = obj["apiVersion"].rpartition("/")
        for rtype in self.registry.all():
            if rtype.group == group and rtype.version == version and rtype.kind == obj["kind"]:
                return rtype
        raise KeyError(f"no served kind {obj['apiVersion']} {obj['kind']}")

    def get(self, resource: str, name: str, namespace: str = "") -> Obj | None:
        rtype = self.resolve(resource)
        found = self.store.get(rtype.storage_key, namespace if rtype.namespaced else "", name)
        return copy.deepcopy(found) if found is not None else None

    def list(self, resource: str, namespace: str | None = None) -> ObjList:
        rtype = self.resolve(resource)
        return copy.deepcopy(self.store.list(rtype.storage_key, namespace if rtype.namespaced else None))

    async def create(self, obj: Obj, *, admit: bool = False) -> Obj:
        """Create from a manifest dict (apiVersion/kind decide the resource); admission only if asked."""
        rtype = self._type_of(obj)
        namespace = obj.get("metadata", {}).get("namespace", "") if rtype.namespaced else ""
        if rtype.namespaced and not namespace:
            namespace = "default"
        return copy.deepcopy(await self.api.create(rtype, namespace, copy.deepcopy(obj), admit=admit))

    async def apply_manifests(self, text: str) -> ObjList:
        """Create every document of a multi-document YAML string (namespaces first), bypassing admission."""
        docs = [d for d in yaml.safe_load_all(text) if isinstance(d, dict)]
        docs.sort(key=lambda d: (d.get("kind") != "Namespace", d.get("kind") != "CustomResourceDefinition"))
        return [await self.create(d) for d in docs]

    async def patch(
        self,
        resource: str,
        name: str,
        patch: Any,
        *,
        namespace: str = "",
        subresource: str = "",
        patch_type: str = PATCH_MERGE,
        admit: bool = False,
    ) -> Obj:
        rtype = self.resolve(resource)
        return copy.deepcopy(
            await self.api.patch(
                rtype, namespace, name, patch_type, patch, subresource=subresource, admit=admit
            )
        )

    async def delete(
        self, resource: str, name: str, *, namespace: str = "", propagation: str | None = None
    ) -> None:
        rtype = self.resolve(resource)
        await self.api.delete(rtype, namespace, name, propagation=propagation, admit=False)

    async def complete_job(self, namespace: str, name: str, *, succeeded: bool = True) -> Obj:
        """Finish a Job as the Job controller would once its pods succeeded (or exhausted backoffLimit)."""
        job = self.get("jobs.batch", name, namespace)
        if job is None:
            raise KeyError(f"job {namespace}/{name} not found")
        status = finished_status(job, succeeded=succeeded)
        return await self.patch(
            "jobs.batch", name, {"status": status}, namespace=namespace, subresource="status"
        )

    async def wait_for(self, predicate: Callable[[], bool], *, timeout: float = 10.0) -> None:
        await self.store.wait_for(predicate, timeout=timeout)

    async def wait_for_object(
        self,
        resource: str,
        name: str,
        predicate: Callable[[Obj | None], bool],
        *,
        namespace: str = "",
        timeout: float = 10.0,
    ) -> Obj | None:
        """Wait until the object (None while absent) satisfies `predicate`; returns its final state."""
        await self.wait_for(lambda: predicate(self.get(resource, name, namespace)), timeout=timeout)
        return self.get(resource, name, namespace)

    # ---- faults ------------------------------------------------------------------------------------------
    def fail_next_writes(self, count: int, *, status: int = 409) -> None:
        self.api.faults.fail_next_writes(count, status)

    def delay(self, seconds: float) -> None:
        """Delay every following request by `seconds` (0 to stop)."""
        self.delay_seconds = seconds

    def drop_watches(self) -> None:
        """End every open watch stream; clients must re-watch (and relist on 410 if history is gone)."""
        self.watch_generation += 1
        self.store.notify()

    def compact(self) -> None:
        """Forget the event history, so any watch resuming from an older resourceVersion gets 410 Expired."""
        self.store.compact()

    @property
    def admission_reviews(self) -> ObjList:
        return self.admission.calls

    def set_service_endpoint(self, *, namespace: str, name: str, address: str) -> None:
        """Where a webhook `clientConfig.service` or an APIService points (host:port), since there is no
        cluster network."""
        self.admission.service_endpoints[(namespace, name)] = address
