"""`facet serve --api-key` (Bearer auth on every route but /health) and CORS
(--allowed-origins, OPTIONS preflight), end to end on the bundled model."""

import json

import pytest

from server_harness import Server

KEY = "sk-test-0123456789"


@pytest.fixture(scope="module")
def model(repo_root):
    return repo_root / "models" / "stories260k"


@pytest.fixture(scope="module")
def keyed(facet_bin, model):
    s = Server(facet_bin, model, "--threads", "1", "--api-key", KEY,
               "--allowed-origins", "http://a.example, http://b.example")
    try:
        yield s
        s.assert_clean_exit()
    finally:
        s.stop()


BODY = {"prompt": [1, 2, 3], "max_tokens": 2, "temperature": 0}


def test_health_needs_no_key(keyed):
    status, _, data = keyed.request("GET", "/health")
    assert status == 200 and json.loads(data) == {"status": "ok"}


@pytest.mark.parametrize("method,path", [("GET", "/v1/models"), ("GET", "/metrics"),
                                         ("POST", "/v1/completions"),
                                         ("POST", "/v1/chat/completions"),
                                         ("POST", "/tokenize"), ("GET", "/nope")])
@pytest.mark.parametrize("auth", [None, "Bearer wrong", "Bearer " + KEY + "x",
                                  "Bearer " + KEY[:-1], KEY, "Basic " + KEY])
def test_every_route_needs_the_key(keyed, method, path, auth):
    headers = {"Authorization": auth} if auth else {}
    status, h, data = keyed.request(method, path, BODY if method == "POST" else None,
                                    headers=headers)
    assert status == 401, data
    err = json.loads(data)["error"]
    assert err["code"] == "invalid_api_key" and "API key" in err["message"]
    assert h.get("www-authenticate") == "Bearer"


def test_right_key_passes(keyed):
    auth = {"Authorization": "Bearer " + KEY}
    status, _, data = keyed.request("GET", "/v1/models", headers=auth)
    assert status == 200 and json.loads(data)["data"][0]["id"] == "stories260k"
    status, _, data = keyed.request("POST", "/v1/completions", BODY,
                                    headers={"authorization": "bearer " + KEY})
    assert status == 200, data
    assert json.loads(data)["usage"]["completion_tokens"] == 2
    status, _, _ = keyed.request("GET", "/nope", headers=auth)
    assert status == 404


def test_cors_allowed_origin_is_echoed(keyed):
    auth = {"Authorization": "Bearer " + KEY}
    for origin in ("http://a.example", "http://b.example"):
        status, h, _ = keyed.request("GET", "/v1/models", headers=dict(auth, Origin=origin))
        assert status == 200
        assert h["access-control-allow-origin"] == origin and h["vary"] == "Origin"
    status, h, _ = keyed.request("GET", "/v1/models",
                                 headers=dict(auth, Origin="http://evil.example"))
    assert status == 200 and "access-control-allow-origin" not in h
    # errors carry the header too, or a browser page could not read why it failed
    status, h, _ = keyed.request("GET", "/v1/models", headers={"Origin": "http://a.example"})
    assert status == 401 and h["access-control-allow-origin"] == "http://a.example"
    # and so does a stream
    c = keyed.conn()
    try:
        c.request("POST", "/v1/completions", body=json.dumps(dict(BODY, stream=True)),
                  headers=dict(auth, Origin="http://b.example",
                               **{"Content-Type": "application/json"}))
        r = c.getresponse()
        raw = r.read()
        assert r.status == 200 and raw.endswith(b"data: [DONE]\n\n")
        assert r.getheader("Access-Control-Allow-Origin") == "http://b.example"
    finally:
        c.close()


def test_preflight_needs_no_key(keyed):
    status, h, data = keyed.request(
        "OPTIONS", "/v1/chat/completions",
        headers={"Origin": "http://a.example", "Access-Control-Request-Method": "POST",
                 "Access-Control-Request-Headers": "authorization,content-type"})
    assert status == 204 and data == b""
    assert h["access-control-allow-origin"] == "http://a.example"
    assert "POST" in h["access-control-allow-methods"]
    assert h["access-control-allow-headers"] == "authorization,content-type"
    assert int(h["access-control-max-age"]) > 0
    # a disallowed origin gets no permission
    status, h, _ = keyed.request("OPTIONS", "/v1/chat/completions",
                                 headers={"Origin": "http://evil.example",
                                          "Access-Control-Request-Method": "POST"})
    assert status == 204 and "access-control-allow-origin" not in h


def test_default_cors_is_any_origin_and_no_key(facet_bin, model, monkeypatch):
    monkeypatch.delenv("FACET_API_KEY", raising=False)
    with Server(facet_bin, model, "--threads", "1") as s:
        status, h, _ = s.request("GET", "/v1/models", headers={"Origin": "http://x.example"})
        assert status == 200 and h["access-control-allow-origin"] == "*"
        assert "vary" not in h
    with Server(facet_bin, model, "--threads", "1", "--allowed-origins", "") as s:
        status, h, _ = s.request("GET", "/v1/models", headers={"Origin": "http://x.example"})
        assert status == 200 and "access-control-allow-origin" not in h


def test_key_from_environment(facet_bin, model):
    import os
    env = dict(os.environ, FACET_API_KEY="envkey")
    with Server(facet_bin, model, "--threads", "1", env=env) as s:
        assert s.request("GET", "/v1/models")[0] == 401
        assert s.request("GET", "/v1/models",
                         headers={"Authorization": "Bearer envkey"})[0] == 200
