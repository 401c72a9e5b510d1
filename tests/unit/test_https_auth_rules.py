"""Who the HTTPS port believes and how it asks: the front proxy's certificate and headers (k8s.io/apiserver's
requestheader authenticator), the TokenReview and SubjectAccessReview bodies, the refusal wording, and the
bounded caches of the answers."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import pytest
from multidict import CIMultiDict, CIMultiDictProxy

from kueue_webhook.http.auth import HttpsAuth
from kueue_webhook.http.front_proxy import (
    RequestHeaderError,
    RequestHeaderSettings,
    UserInfo,
    parse_settings,
    user_from_headers,
    verify_proxy_certificate,
)
from kueue_webhook.http.requestheader import CONFIGMAP_PATH, RequestHeaderSource
from kueue_webhook.http.reviews import (
    NonResource,
    Reviewer,
    ReviewFailed,
    TtlCache,
    forbidden_message,
    subject_access_review,
    token_review,
)
from kueue_webhook.http.visibility import pending_workloads
from tests.front_proxy import ProxyCA, requestheader_data


def now() -> dt.datetime:
    """The time of the check (not of collection: a slow suite can reach a test long after importing it)."""
    return dt.datetime.now(dt.UTC)


def settings_for(ca: ProxyCA, **kwargs: Any) -> RequestHeaderSettings:
    settings = parse_settings(requestheader_data(ca.pem, **kwargs))
    assert settings is not None
    return settings


def headers(*pairs: tuple[str, str]) -> CIMultiDictProxy[str]:
    return CIMultiDictProxy(CIMultiDict(pairs))


# -- the ConfigMap --------------------------------------------------------------------------------------


def test_settings_are_read_from_kube_apiservers_json_lists(tmp_path: Path) -> None:
    ca = ProxyCA(tmp_path)
    settings = settings_for(ca)
    assert settings.allowed_names == {"front-proxy-client"}
    assert settings.username_headers == ("X-Remote-User",)
    assert settings.group_headers == ("X-Remote-Group",)
    assert settings.extra_prefixes == ("X-Remote-Extra-",)
    assert [c.subject for c in settings.authorities] == [ca.cert.subject]


def test_no_requestheader_ca_means_no_front_proxy_is_believed(tmp_path: Path) -> None:
    data = requestheader_data(ProxyCA(tmp_path).pem)
    data["requestheader-client-ca-file"] = ""
    assert parse_settings(data) is None


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("requestheader-allowed-names", "front-proxy-client", "not a JSON list"),
        ("requestheader-group-headers", '[1, "X"]', "not a list of strings"),
        ("requestheader-username-headers", "[]", "none configured"),
        ("requestheader-client-ca-file", "garbage", "not PEM certificates"),
    ],
)
def test_unusable_settings_are_refused_with_the_key_named(
    tmp_path: Path, key: str, value: str, message: str
) -> None:
    data = requestheader_data(ProxyCA(tmp_path).pem)
    data[key] = value
    with pytest.raises(RequestHeaderError, match=message) as raised:
        parse_settings(data)
    assert key in str(raised.value)


# -- the front proxy's certificate ----------------------------------------------------------------------


def test_a_certificate_of_the_requestheader_ca_with_an_allowed_name_is_believed(tmp_path: Path) -> None:
    ca = ProxyCA(tmp_path)
    assert verify_proxy_certificate(ca.issue().der(), settings_for(ca), now()) is None


def test_another_cas_certificate_is_not_believed(tmp_path: Path) -> None:
    ca, other = ProxyCA(tmp_path / "a"), ProxyCA(tmp_path / "b")
    refusal = verify_proxy_certificate(other.issue().der(), settings_for(ca), now())
    assert refusal == "client certificate not issued by a requestheader client CA"


def test_a_name_not_in_allowed_names_is_not_believed_unless_the_list_is_empty(tmp_path: Path) -> None:
    ca = ProxyCA(tmp_path)
    someone = ca.issue("someone-else").der()
    assert verify_proxy_certificate(someone, settings_for(ca), now()) == (
        "client certificate common name someone-else not allowed"
    )
    assert verify_proxy_certificate(someone, settings_for(ca, allowed_names=()), now()) is None


def test_an_expired_certificate_and_no_certificate_are_not_believed(tmp_path: Path) -> None:
    ca = ProxyCA(tmp_path)
    settings = settings_for(ca)
    pair = ca.issue(not_after=now() + dt.timedelta(hours=1))
    assert verify_proxy_certificate(pair.der(), settings, now() + dt.timedelta(hours=2)) == (
        "client certificate expired or not yet valid"
    )
    assert verify_proxy_certificate(None, settings, now()) == "no client certificate"
    assert verify_proxy_certificate(pair.der(), None, now()) == "no requestheader client CA is known"


def test_a_ca_removed_from_the_configmap_stops_counting(tmp_path: Path) -> None:
    old, new = ProxyCA(tmp_path / "old"), ProxyCA(tmp_path / "new")
    pair = old.issue()
    both = parse_settings(requestheader_data(old.pem + new.pem))
    assert verify_proxy_certificate(pair.der(), both, now()) is None
    assert verify_proxy_certificate(pair.der(), settings_for(new), now()) is not None


# -- the headers ----------------------------------------------------------------------------------------


def test_user_groups_and_extra_come_from_the_configured_headers(tmp_path: Path) -> None:
    settings = settings_for(ProxyCA(tmp_path))
    user = user_from_headers(
        headers(
            ("X-Remote-User", "alice"),
            ("X-Remote-Uid", "u-1"),
            ("X-Remote-Group", "team-a"),
            ("X-Remote-Group", "system:authenticated"),
            ("x-remote-extra-Scopes%2Fread", "a"),
            ("X-Remote-Extra-scopes%2Fread", "b"),
            ("X-Other", "ignored"),
        ),
        settings,
    )
    assert user == UserInfo(
        username="alice",
        uid="u-1",
        groups=("team-a", "system:authenticated"),
        extra=(("scopes/read", ("a", "b")),),
    )


def test_the_first_non_empty_user_header_wins_and_none_means_no_user(tmp_path: Path) -> None:
    data = requestheader_data(ProxyCA(tmp_path).pem)
    data["requestheader-username-headers"] = json.dumps(["X-Remote-User", "X-Proxy-User"])
    settings = parse_settings(data)
    assert settings is not None
    user = user_from_headers(headers(("X-Remote-User", ""), ("X-Proxy-User", "bob")), settings)
    assert user is not None and user.username == "bob"
    assert user_from_headers(headers(("X-Remote-Group", "system:masters")), settings) is None


# -- the review bodies and the refusal wording ----------------------------------------------------------

ALICE = UserInfo(username="alice", uid="u-1", groups=("team-a",), extra=(("scopes", ("x",)),))


def test_a_cluster_queue_read_is_reviewed_as_get_on_its_pendingworkloads() -> None:
    assert subject_access_review(ALICE, pending_workloads("research")) == {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SubjectAccessReview",
        "spec": {
            "user": "alice",
            "uid": "u-1",
            "groups": ["team-a"],
            "extra": {"scopes": ["x"]},
            "resourceAttributes": {
                "verb": "get",
                "group": "visibility.kueue.x-k8s.io",
                "version": "v1beta2",
                "resource": "clusterqueues",
                "subresource": "pendingworkloads",
                "name": "research",
            },
        },
    }


def test_a_local_queue_read_is_reviewed_in_its_namespace() -> None:
    body = subject_access_review(
        UserInfo("bob"), pending_workloads(namespace="team-a", local_queue="team-a-gpu")
    )
    assert body["spec"] == {
        "user": "bob",
        "groups": [],
        "resourceAttributes": {
            "namespace": "team-a",
            "verb": "get",
            "group": "visibility.kueue.x-k8s.io",
            "version": "v1beta2",
            "resource": "localqueues",
            "subresource": "pendingworkloads",
            "name": "team-a-gpu",
        },
    }


def test_metrics_are_reviewed_as_a_non_resource_url_and_tokens_in_a_tokenreview() -> None:
    body = subject_access_review(UserInfo("prometheus"), NonResource("get", "/metrics"))
    assert body["spec"]["nonResourceAttributes"] == {"path": "/metrics", "verb": "get"}
    assert "resourceAttributes" not in body["spec"]
    assert token_review("t0k3n") == {
        "apiVersion": "authentication.k8s.io/v1",
        "kind": "TokenReview",
        "spec": {"token": "t0k3n"},
    }


def test_refusals_are_worded_as_kube_apiserver_words_them() -> None:
    assert forbidden_message(UserInfo("alice"), pending_workloads("research")) == (
        'User "alice" cannot get resource "clusterqueues/pendingworkloads" in API group '
        '"visibility.kueue.x-k8s.io" at the cluster scope'
    )
    local = pending_workloads(namespace="team-a", local_queue="q")
    assert forbidden_message(UserInfo("bob"), local, "no RBAC") == (
        'User "bob" cannot get resource "localqueues/pendingworkloads" in API group '
        '"visibility.kueue.x-k8s.io" in the namespace "team-a": no RBAC'
    )


# -- caching --------------------------------------------------------------------------------------------


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_cache_entries_expire_and_the_oldest_goes_when_full() -> None:
    clock = Clock()
    cache: TtlCache[str, int] = TtlCache(max_entries=2, clock=clock)
    cache.put("a", 1, ttl=10)
    cache.put("b", 2, ttl=5)
    clock.now = 6
    assert (cache.get("a"), cache.get("b")) == (1, None)
    cache.put("c", 3, ttl=10)
    cache.put("d", 4, ttl=10)
    assert (cache.get("a"), cache.get("c"), cache.get("d"), len(cache)) == (None, 3, 4, 2)


class ApiServer:
    """Answers reviews as kube-apiserver would, from a token table and a set of allowed users; counts them."""

    def __init__(self) -> None:
        self.tokens = {"good": "alice", "other": "mallory"}
        self.allowed = {"alice"}
        self.sent: list[dict[str, Any]] = []
        self.down = False

    async def request(
        self, method: str, path: str, *, body: Any = None, timeout: float = 0
    ) -> dict[str, Any]:
        assert method == "POST"
        if self.down:
            raise ConnectionError("connection refused")
        self.sent.append(body)
        if body["kind"] == "TokenReview":
            name = self.tokens.get(body["spec"]["token"])
            user = {"username": name, "groups": ["system:authenticated"]} if name else {}
            return {**body, "status": {"authenticated": name is not None, "user": user}}
        allowed = body["spec"]["user"] in self.allowed
        return {**body, "status": {"allowed": allowed, "reason": "" if allowed else "nope"}}


async def test_answers_are_cached_for_their_ttl_and_failures_never() -> None:
    api, clock = ApiServer(), Clock()
    reviewer = Reviewer(api, token_ttl=60, allow_ttl=300, deny_ttl=30, clock=clock)
    alice = await reviewer.authenticate("good")
    assert alice == UserInfo("alice", groups=("system:authenticated",))
    assert await reviewer.authenticate("good") == alice
    assert await reviewer.authenticate("bad") is None
    assert await reviewer.authenticate("bad") is None  # not authenticated: asked again each time
    assert [b["kind"] for b in api.sent] == ["TokenReview"] * 3
    assert all("good" not in repr(key) for key in reviewer.tokens._entries)  # kept by digest only

    mallory = UserInfo("mallory")
    metrics = NonResource("get", "/metrics")
    assert (await reviewer.authorize(alice, metrics)).allowed
    denied = await reviewer.authorize(mallory, metrics)
    assert (denied.allowed, denied.reason) == (False, "nope")
    api.sent.clear()
    clock.now = 29
    assert (await reviewer.authorize(alice, metrics)).allowed
    assert not (await reviewer.authorize(mallory, metrics)).allowed
    assert api.sent == []
    clock.now = 31  # the denial has expired, the allowance has not
    api.allowed.add("mallory")
    assert (await reviewer.authorize(mallory, metrics)).allowed
    assert [b["spec"]["user"] for b in api.sent] == ["mallory"]

    api.down = True
    with pytest.raises(ReviewFailed):
        await reviewer.authorize(UserInfo("carol"), metrics)
    api.down = False
    api.sent.clear()
    assert not (await reviewer.authorize(UserInfo("carol"), metrics)).allowed
    assert len(api.sent) == 1


async def test_the_caches_stay_bounded_under_many_tokens() -> None:
    api = ApiServer()
    api.tokens.update({f"t{i}": f"user-{i}" for i in range(50)})
    reviewer = Reviewer(api, max_entries=8)
    for i in range(50):
        user = await reviewer.authenticate(f"t{i}")
        assert user is not None
        await reviewer.authorize(user, NonResource("get", "/metrics"))
    assert (len(reviewer.tokens), len(reviewer.decisions)) == (8, 8)


# -- the ConfigMap, read again -------------------------------------------------------------------------------


class ConfigMaps:
    """kube-apiserver's answer to GET kube-system/extension-apiserver-authentication."""

    def __init__(self, data: dict[str, str]) -> None:
        self.data = data
        self.down = False

    async def request(self, method: str, path: str, *, timeout: float = 0) -> dict[str, Any]:
        assert (method, path) == ("GET", CONFIGMAP_PATH)
        if self.down:
            raise ConnectionError("connection refused")
        return {"kind": "ConfigMap", "data": dict(self.data)}


async def test_the_settings_follow_the_configmap_and_a_bad_read_keeps_them(tmp_path: Path) -> None:
    first, second = ProxyCA(tmp_path / "first"), ProxyCA(tmp_path / "second")
    configmaps = ConfigMaps(requestheader_data(first.pem))
    trusted: list[bytes] = []
    auth = HttpsAuth(visibility=Reviewer(ApiServer()), metrics=Reviewer(ApiServer()))
    source = RequestHeaderSource(configmaps, auth, trusted.append)
    assert auth.settings is None
    assert await source.load()
    assert trusted == [first.pem] and auth.settings is not None
    assert not await source.load()  # unchanged: nothing to do

    configmaps.data["requestheader-allowed-names"] = '["aggregator"]'
    assert await source.load()
    assert trusted == [first.pem]  # the same CA: the TLS context already has it
    assert auth.settings.allowed_names == {"aggregator"}

    kept = auth.settings
    configmaps.data["requestheader-group-headers"] = "X-Remote-Group"  # not a JSON list
    assert not await source.load()
    configmaps.down = True
    assert not await source.load()
    assert auth.settings is kept

    configmaps.down = False
    configmaps.data = requestheader_data(second.pem)
    assert await source.load()
    assert trusted == [first.pem, second.pem]
    assert verify_proxy_certificate(first.issue().der(), auth.settings, now()) is not None
    assert verify_proxy_certificate(second.issue().der(), auth.settings, now()) is None
