"""`POST /apis/authentication.k8s.io/v1/selfsubjectreviews` answers as kube-apiserver v1.36 does.

The controller learns its own user name this way at start, and `kubectl auth whoami` uses it; the fake must
answer each caller with its own identity, exactly in the shape of the golden `selfsubjectreview-*.json`
captures (an x509 admin and a service-account token), and refuse what the real server refuses.
"""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator, Awaitable, Callable

import aiohttp
import pytest

from tests.fakeapi import FakeApiServer
from tests.fakeapi.golden import load, normalise, replay, replay_file
from tests.fakeapi.identity import UserInfo


@pytest.fixture
async def session_as() -> AsyncIterator[Callable[[FakeApiServer, UserInfo], aiohttp.ClientSession]]:
    """`session_as(fake_api, user)`: an HTTP session authenticated as `user` (a token registered for it)."""
    sessions: list[aiohttp.ClientSession] = []
    numbers = itertools.count()

    def make(fake_api: FakeApiServer, user: UserInfo) -> aiohttp.ClientSession:
        token = f"token-{next(numbers)}"
        fake_api.tokens.add(token, user)
        session = aiohttp.ClientSession(
            base_url=fake_api.url,
            connector=aiohttp.TCPConnector(ssl=fake_api.client_ssl_context()),
            headers={"Authorization": f"Bearer {token}"},
        )
        sessions.append(session)
        return session

    yield make
    for session in sessions:
        await session.close()


def captured_user(capture: str) -> UserInfo:
    info = load(capture)["response"]["body"]["status"]["userInfo"]
    groups = tuple(g for g in info["groups"] if g != "system:authenticated")  # the server adds it
    return UserInfo(
        username=info["username"], groups=groups, uid=info.get("uid"), extra=info.get("extra", {})
    )


@pytest.mark.parametrize(
    "capture", ["selfsubjectreview-create.json", "selfsubjectreview-create-serviceaccount.json"]
)
async def test_each_caller_is_told_who_it_is(
    fake_api: FakeApiServer,
    session_as: Callable[[FakeApiServer, UserInfo], aiohttp.ClientSession],
    capture: str,
) -> None:
    expected, actual = await replay_file(session_as(fake_api, captured_user(capture)), capture)
    assert actual == expected


@pytest.mark.parametrize(
    "capture",
    [
        "selfsubjectreview-list-not-allowed.json",  # GET: create is the only verb
        "selfsubjectreview-wrong-kind.json",  # a body of another kind
        "selfsubjectreview-v1beta1-not-found.json",  # the beta version is no longer served
    ],
)
async def test_what_kube_apiserver_refuses_is_refused_alike(
    fake_api: FakeApiServer,
    session_as: Callable[[FakeApiServer, UserInfo], aiohttp.ClientSession],
    capture: str,
) -> None:
    expected, actual = await replay_file(
        session_as(fake_api, captured_user("selfsubjectreview-create.json")), capture
    )
    assert actual == expected


async def test_a_server_from_before_v1_28_answers_not_found(
    make_fake_api: Callable[..., Awaitable[FakeApiServer]],
    session_as: Callable[[FakeApiServer, UserInfo], aiohttp.ClientSession],
) -> None:
    old = await make_fake_api(self_subject_review=False)
    session = session_as(old, captured_user("selfsubjectreview-create.json"))
    request = dict(load("selfsubjectreview-create.json"), response={})
    status, body = await replay(session, request)
    assert status == 404
    assert normalise(body) == normalise(load("selfsubjectreview-v1beta1-not-found.json")["response"]["body"])
