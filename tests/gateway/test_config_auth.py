"""The proxy's ``[auth]`` and ``[state]`` tables: the verifiers and stores they build, their
mistakes reported as TOML, and ``check`` showing them without secrets."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any

import pytest
from fastmcp.server.auth.providers.jwt import JWTVerifier, RSAKeyPair, StaticTokenVerifier
from inline_snapshot import snapshot
from joserfc import jwk
from key_value.aio.stores.memory import MemoryStore
from key_value.aio.wrappers.timeout import TimeoutWrapper

from fastmcp_filtering.gateway.cli import main
from fastmcp_filtering.gateway.config.models import FilteringConfig, load_config
from fastmcp_filtering.gateway.config.state_store import GatewayStore

from .._progressive_servers import redis_server
from .._servers import free_port
from .._support.gateway_config import UPSTREAM, error_of, write
from .._support.standin import STANDIN

STATIC = """
[auth]
type = "static"
required_scopes = ["mcp"]

[[auth.tokens]]
token = "${ALICE_TOKEN}"
client_id = "alice"
scopes = ["mcp", "admin"]

[[auth.tokens]]
token = "bob-secret"
client_id = "agents"
subject = "bob"
scopes = ["mcp"]
claims = { team = "red" }
"""


def config_of(**tables: Any) -> FilteringConfig:
    return FilteringConfig.model_validate({"upstreams": [{"url": "http://x/mcp"}], **tables})


def problems(tmp_path: Path, text: str) -> list[str]:
    """The mistakes in ``UPSTREAM + text``, one ``LINE: KEY: message`` each."""
    error = error_of(write(tmp_path, UPSTREAM + text))
    return [f"{line}: {key}: {message}" for key, line, message in error.problems]


class TestStaticTokens:
    async def test_tokens_verify_to_their_principal_and_scopes(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setenv("ALICE_TOKEN", "alice-secret")
        config = load_config(write(tmp_path, UPSTREAM + STATIC))
        assert config.auth is not None
        verifier = config.auth.verifier()
        assert isinstance(verifier, StaticTokenVerifier)
        alice = await verifier.verify_token("alice-secret")
        assert alice is not None
        assert (alice.client_id, alice.subject, alice.scopes) == ("alice", None, ["mcp", "admin"])
        bob = await verifier.verify_token("bob-secret")
        assert bob is not None
        assert (bob.client_id, bob.subject, bob.claims["team"]) == ("agents", "bob", "red")
        assert await verifier.verify_token("${ALICE_TOKEN}") is None
        assert await verifier.verify_token("nobody") is None

    async def test_a_token_without_the_required_scopes_is_refused(self) -> None:
        config = config_of(
            auth={
                "type": "static",
                "required_scopes": ["mcp"],
                "tokens": [{"token": "t", "client_id": "c", "scopes": ["other"]}],
            }
        )
        assert config.auth is not None
        assert await config.auth.verifier().verify_token("t") is None

    def test_the_token_is_never_in_a_repr(self) -> None:
        config = config_of(
            auth={"type": "static", "tokens": [{"token": "s3cr3t", "client_id": "c"}]}
        )
        assert "s3cr3t" not in repr(config)

    def test_mistakes_speak_toml(self, tmp_path: Path) -> None:
        assert problems(tmp_path, "[auth]\ntokens = []\n") == snapshot(
            [
                '4: auth: say which tokens to accept: type = "static" (the bearer tokens '
                'listed in [[auth.tokens]]) or type = "jwt" (signed tokens checked with '
                "jwks_uri or public_key)"
            ]
        )
        assert problems(tmp_path, '[auth]\ntype = "static"\n') == snapshot(
            [
                '4: auth: type = "static" needs at least one [[auth.tokens]] table with token, '
                "client_id and scopes"
            ]
        )
        assert problems(tmp_path, '[auth]\ntype = "oauth"\n') == snapshot(
            ["5: auth.type: Input should be 'static' or 'jwt' (got 'oauth'); fix the value"]
        )
        duplicate = (
            '[auth]\ntype = "static"\n\n[[auth.tokens]]\ntoken = "same-secret"\nclient_id = "a"\n'
            '\n[[auth.tokens]]\ntoken = "same-secret"\nclient_id = "b"\n'
        )
        found = problems(tmp_path, duplicate)
        assert found == snapshot(
            [
                "12: auth.tokens[1].token: the same token as auth.tokens[0]; give each client "
                "its own token"
            ]
        )
        assert not any("same-secret" in p for p in found)
        misspelt = (
            '[auth]\ntype = "static"\n\n[[auth.tokens]]\ntoken = "t"\nclient_id = "a"\n'
            'scope = ["x"]\n'
        )
        assert problems(tmp_path, misspelt) == snapshot(
            [
                "10: auth.tokens[0].scope: unknown key 'scope'; remove it or use one of token, "
                "client_id, subject, scopes, claims"
            ]
        )
        assert problems(
            tmp_path, '[auth]\ntype = "static"\njwks_uri = "https://x/jwks"\n'
        ) == snapshot(
            [
                '6: auth.jwks_uri: jwks_uri does not apply to type = "static"; remove it (keys '
                "of this type: tokens, required_scopes)"
            ]
        )

    def test_an_unset_environment_variable_is_named(self, tmp_path: Path) -> None:
        assert problems(
            tmp_path,
            '[auth]\ntype = "static"\n[[auth.tokens]]\ntoken = "${NO_SUCH_TOKEN_VAR}"\n'
            'client_id = "a"\n',
        ) == snapshot(
            [
                "7: auth.tokens[0].token: environment variable NO_SUCH_TOKEN_VAR is not set; "
                "export NO_SUCH_TOKEN_VAR before starting, or write the value instead of "
                "${NO_SUCH_TOKEN_VAR}"
            ]
        )


def jwt_config(**auth: Any) -> JWTVerifier:
    config = config_of(auth={"type": "jwt", **auth})
    assert config.auth is not None
    verifier = config.auth.verifier()
    assert isinstance(verifier, JWTVerifier)
    return verifier


@contextmanager
def jwks_endpoint(document: dict[str, Any]) -> Iterator[str]:
    """A JWKS document served over HTTP on loopback, as an issuer publishes it."""
    body = json.dumps(document).encode()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = HTTPServer(("127.0.0.1", free_port()), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}/.well-known/jwks.json"
    finally:
        server.shutdown()
        server.server_close()


class TestJWT:
    async def test_a_public_key_checks_signature_issuer_and_audience(self) -> None:
        keys = RSAKeyPair.generate()
        verifier = jwt_config(
            public_key=keys.public_key, issuer="https://issuer", audience="gateway"
        )
        good = keys.create_token(
            subject="alice", issuer="https://issuer", audience="gateway", scopes=["mcp"]
        )
        token = await verifier.verify_token(good)
        assert token is not None
        assert (token.subject, token.scopes) == ("alice", ["mcp"])
        elsewhere = keys.create_token(issuer="https://issuer", audience="another-service")
        assert await verifier.verify_token(elsewhere) is None
        forged = RSAKeyPair.generate().create_token(issuer="https://issuer", audience="gateway")
        assert await verifier.verify_token(forged) is None

    async def test_a_jwks_uri_supplies_the_keys(self) -> None:
        keys = RSAKeyPair.generate()
        public = {**jwk.import_key(keys.public_key, "RSA").as_dict(), "kid": "k1", "use": "sig"}
        with jwks_endpoint({"keys": [public]}) as uri:
            verifier = jwt_config(jwks_uri=uri, issuer="https://issuer", audience="gateway")
            token = keys.create_token(issuer="https://issuer", audience="gateway", kid="k1")
            verified = await verifier.verify_token(token)
        assert verified is not None
        assert verified.claims["iss"] == "https://issuer"

    def test_values_come_from_the_environment(self, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setenv("ISSUER_URL", "https://auth.example.com/")
        verifier = jwt_config(jwks_uri="https://auth.example.com/jwks", issuer="${ISSUER_URL}")
        assert verifier.issuer == "https://auth.example.com/"

    def test_mistakes_speak_toml(self, tmp_path: Path) -> None:
        assert problems(tmp_path, '[auth]\ntype = "jwt"\n') == snapshot(
            [
                '4: auth: type = "jwt" needs exactly one of jwks_uri (the issuer\'s key set, '
                'e.g. "https://auth.example.com/.well-known/jwks.json") or public_key (a PEM '
                "public key, or the shared secret of an HS256 algorithm)"
            ]
        )
        both = '[auth]\ntype = "jwt"\njwks_uri = "https://x/jwks"\npublic_key = "k"\n'
        assert problems(tmp_path, both) == snapshot(
            [
                '4: auth: type = "jwt" needs exactly one of jwks_uri (the issuer\'s key set, '
                'e.g. "https://auth.example.com/.well-known/jwks.json") or public_key (a PEM '
                "public key, or the shared secret of an HS256 algorithm)"
            ]
        )
        assert problems(tmp_path, '[auth]\ntype = "jwt"\njwks_uri = "ftp://x"\n') == snapshot(
            ["6: auth.jwks_uri: jwks_uri must start with https:// or http://, got 'ftp://x'"]
        )
        odd = '[auth]\ntype = "jwt"\njwks_uri = "https://x/jwks"\nalgorithm = "HS999"\n'
        assert problems(tmp_path, odd) == snapshot(
            [
                "7: auth.algorithm: Unsupported algorithm: HS999; use RS256 (the default), "
                "RS384, RS512, ES256, ES384, ES512, PS256, PS384, PS512, EdDSA, Ed25519 or "
                "Ed448, or HS256, HS384, HS512 with the shared secret as public_key"
            ]
        )
        symmetric = '[auth]\ntype = "jwt"\njwks_uri = "https://x/jwks"\nalgorithm = "HS256"\n'
        assert problems(tmp_path, symmetric) == snapshot(
            [
                "7: auth.algorithm: Symmetric HS* algorithms cannot be used with jwks_uri; "
                "configure a shared secret via public_key instead."
            ]
        )
        stray = (
            '[auth]\ntype = "jwt"\njwks_uri = "https://x/jwks"\n\n'
            '[[auth.tokens]]\ntoken = "t"\nclient_id = "c"\n'
        )
        assert problems(tmp_path, stray) == snapshot(
            [
                '8: auth.tokens[0]: tokens does not apply to type = "jwt"; remove it (keys of '
                "this type: jwks_uri, public_key, issuer, audience, algorithm, required_scopes)"
            ]
        )

    def test_a_shared_secret_is_never_in_a_message_or_repr(self, tmp_path: Path) -> None:
        text = '[auth]\ntype = "jwt"\npublic_key = "hunter2-hunter2"\nalgorithm = "HS256"\n'
        config = load_config(write(tmp_path, UPSTREAM + text))
        assert "hunter2" not in repr(config)
        assert config.auth is not None
        assert "hunter2" not in json.dumps(config.auth.describe())


class TestState:
    def test_memory_is_the_default_in_this_process(self) -> None:
        config = config_of()
        assert config.state.url == "memory://"
        assert not config.state.shared
        store = config.state.store()
        assert isinstance(store, GatewayStore)
        assert isinstance(store.key_value, MemoryStore)
        assert store.ttl_seconds == 86_400

    def test_redis_is_bounded_by_the_timeout(self) -> None:
        config = config_of(state={"url": "redis://127.0.0.1:6379/0", "timeout": 0.5})
        store = config.state.store()
        assert isinstance(store, GatewayStore)
        assert isinstance(store.key_value, TimeoutWrapper)
        assert store.key_value.timeout == 0.5

    async def test_a_dead_redis_answers_with_an_error_not_a_hang(self) -> None:
        config = config_of(state={"url": f"redis://127.0.0.1:{free_port()}/0", "timeout": 0.5})
        problem = await config.state.probe()
        assert problem is not None
        assert problem.startswith(("ConnectionError", "TimeoutError"))

    async def test_a_live_redis_round_trips(self) -> None:
        from fastmcp.server.server import StateValue

        with redis_server() as url:
            config = config_of(state={"url": url})
            assert await config.state.probe() is None
            store = config.state.store()
            assert store is not None
            await store.put(key="k", value=StateValue(value={"a": 1}).model_dump(), ttl=60)
            assert await store.get(key="k") == {"value": {"a": 1}}

    def test_mistakes_speak_toml_and_mask_passwords(self, tmp_path: Path) -> None:
        text = '[state]\nurl = "postgres://user:pa55word@db/state"\n'
        found = problems(tmp_path, text)
        assert found == snapshot(
            [
                "5: state.url: unsupported store 'postgres://user:***@db/state'; use "
                "redis://host:6379/0 (rediss:// for TLS, unix:///path/redis.sock) or memory:// "
                "(this process only)"
            ]
        )
        assert not any("pa55word" in p for p in found)
        assert problems(tmp_path, '[state]\nurl = "redis://h:port/0"\n') == snapshot(
            [
                "5: state.url: not a Redis URL (Port could not be cast to integer value as "
                "'port'): fix the url"
            ]
        )
        assert problems(tmp_path, "[state]\ntimeout = 0\n") == snapshot(
            ["5: state.timeout: timeout must be a positive number of seconds, got 0.0"]
        )
        assert problems(tmp_path, '[state]\nuri = "redis://h/0"\n') == snapshot(
            ["5: state.uri: unknown key 'uri'; remove it or use one of url, timeout, ttl_seconds"]
        )


@pytest.mark.slow
class TestCheckShowsThem:
    def test_auth_and_state_without_secrets(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
    ) -> None:
        monkeypatch.setenv("ALICE_TOKEN", "alice-secret")
        upstream = f'[[upstreams]]\ncommand = "python"\nargs = [{json.dumps(str(STANDIN))}]\n'
        with redis_server() as url:
            password_url = url.replace("redis://", "redis://:not-the-password@")
            state = f'\n[state]\nurl = "{url}"\ntimeout = 2.0\n'
            path = write(tmp_path, upstream + STATIC + state)
            assert main(["check", str(path)]) == 0
            out = capfd.readouterr().out
            assert main(["check", "--json", str(path)]) == 0
            report = json.loads(capfd.readouterr().out)
            # A password in the URL is masked (this Redis asks for none and ignores it).
            masked = write(tmp_path, upstream + state.replace(url, password_url), "masked.toml")
            assert main(["check", str(masked)]) == 0
            with_password = capfd.readouterr().out
        lines = [line for line in out.splitlines() if line.startswith(("auth:", "state:"))]
        assert lines == [
            "auth: 2 static bearer token(s): alice [mcp, admin]; agents (subject bob) [mcp]; "
            "every token needs scopes mcp",
            f"state: {url} (timeout 2.0 s, client state kept 86400 s)",
        ]
        assert report["auth"] == {
            "type": "static",
            "required_scopes": ["mcp"],
            "tokens": [
                {"client_id": "alice", "subject": None, "scopes": ["mcp", "admin"]},
                {"client_id": "agents", "subject": "bob", "scopes": ["mcp"]},
            ],
        }
        assert report["state"] == {"url": url, "timeout": 2.0, "ttl_seconds": 86_400}
        for text in (out, json.dumps(report)):
            assert "alice-secret" not in text
            assert "bob-secret" not in text
        assert "not-the-password" not in with_password
        masked_url = url.replace("redis://", "redis://:***@")
        assert f"state: {masked_url} (timeout 2.0 s, client state kept 86400 s)" in with_password

    def test_a_dead_state_store_fails_the_check(
        self, tmp_path: Path, capfd: pytest.CaptureFixture[str]
    ) -> None:
        upstream = f'[[upstreams]]\ncommand = "python"\nargs = [{json.dumps(str(STANDIN))}]\n'
        url = f"redis://:pa55word@127.0.0.1:{free_port()}/0"
        path = write(tmp_path, upstream + f'\n[state]\nurl = "{url}"\ntimeout = 0.5\n')
        assert main(["check", str(path)]) == 1
        out = capfd.readouterr().out
        assert "pa55word" not in out
        errors = [line for line in out.splitlines() if line.startswith("error:")]
        assert len(errors) == 1
        assert errors[0].startswith(
            f"error: the state store {url.replace('pa55word', '***')} does not answer ("
        )
        assert errors[0].endswith("); start it, or fix [state] url")

    def test_jwt_and_no_state(self, tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
        upstream = f'[[upstreams]]\ncommand = "python"\nargs = [{json.dumps(str(STANDIN))}]\n'
        text = (
            '[auth]\ntype = "jwt"\npublic_key = "hunter2-hunter2"\nalgorithm = "HS256"\n'
            'issuer = "https://issuer"\naudience = ["gateway", "tools"]\n'
        )
        assert main(["check", str(write(tmp_path, upstream + text))]) == 0
        out = capfd.readouterr().out
        lines = [line for line in out.splitlines() if line.startswith(("auth:", "state:"))]
        assert lines == snapshot(
            [
                "auth: JWT (HS256), a shared secret, issuer https://issuer, audience gateway "
                "or tools",
                "state: in this process (memory://, client state kept 86400 s)",
            ]
        )
        assert "hunter2" not in out

    def test_no_auth(self, tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
        upstream = f'[[upstreams]]\ncommand = "python"\nargs = [{json.dumps(str(STANDIN))}]\n'
        assert main(["check", str(write(tmp_path, upstream))]) == 0
        out = capfd.readouterr().out
        assert "auth: none (HTTP clients are not authenticated)" in out
        assert "state: in this process (memory://, client state kept 86400 s)" in out
