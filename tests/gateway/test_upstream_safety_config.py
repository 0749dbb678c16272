"""What a configuration may not do to the gateway: hang it, loop it, mix names, leak secrets.

Timeouts are validated; overlapping namespaces and a gateway proxying itself are
refused by ``load_config`` (so by ``check`` and ``serve`` alike); no message about a
configuration or an upstream shows a secret or an internal path.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from fastmcp_filtering.gateway.cli import main
from fastmcp_filtering.gateway.config.models import ConfigError, FilteringConfig, load_config
from fastmcp_filtering.gateway.redact import Redactor, safe_url
from fastmcp_filtering.gateway.upstreams.provider import UPSTREAM_MARK

from .._support.gateway_config import write

MISBEHAVING = Path(__file__).parent / "misbehaving.py"


def error_of(tmp_path: Path, text: str, name: str = "proxy.toml") -> str:
    with pytest.raises(ConfigError) as caught:
        load_config(write(tmp_path, text, name))
    return str(caught.value)


class TestTimeoutSettings:
    def test_defaults_and_overrides(self) -> None:
        config = FilteringConfig.model_validate(
            {"upstreams": [{"command": "npx", "call_timeout": 5, "list_timeout": 2.5}]}
        )
        assert tuple(config.upstreams[0].timeouts) == (30.0, 2.5, 5.0)

    @pytest.mark.parametrize("value", ["0", "-1", "inf"])
    def test_a_timeout_must_be_a_positive_number(self, tmp_path: Path, value: str) -> None:
        text = f'[[upstreams]]\ncommand = "npx"\nconnect_timeout = {value}\n'
        message = error_of(tmp_path, text)
        assert "proxy.toml:3: upstreams[0].connect_timeout: " in message
        assert "positive number such as 30" in message


class TestNamespaces:
    TWO = (
        '[[upstreams]]\nname = "victim"\ncommand = "npx"\nnamespace = "search_x"\n\n'
        '[[upstreams]]\nname = "evil"\ncommand = "npx"\nnamespace = "search"\n'
    )

    def test_overlapping_namespaces_are_refused(self, tmp_path: Path) -> None:
        message = error_of(tmp_path, self.TWO)
        assert "upstreams[1].namespace: namespaces 'search' and 'search_x' overlap" in message

    def test_check_and_serve_refuse_them(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        path = write(tmp_path, self.TWO)
        for command in ("check", "serve"):
            assert main([command, str(path)]) == 1
            assert "overlap" in capsys.readouterr().err

    def test_namespaces_sharing_a_start_without_underscore_are_fine(self) -> None:
        FilteringConfig.model_validate(
            {
                "upstreams": [
                    {"command": "npx", "namespace": "gh"},
                    {"command": "npx", "namespace": "ghx"},
                ]
            }
        )


class TestSelfReference:
    @pytest.mark.parametrize(
        "line",
        [
            'command = "sh"\nargs = ["-c", "exec fastmcp-filtering serve other.toml"]',
            'command = "fastmcp-filtering"\nargs = ["serve", "x.toml"]',
            'command = "python"\nargs = ["-m", "fastmcp_filtering", "check", "x.toml"]',
        ],
    )
    def test_an_upstream_running_the_gateway_is_refused(self, tmp_path: Path, line: str) -> None:
        message = error_of(tmp_path, f"[[upstreams]]\n{line}\n")
        assert "runs fastmcp-filtering itself" in message

    def test_other_commands_of_similar_name_are_fine(self) -> None:
        FilteringConfig.model_validate(
            {"upstreams": [{"command": "fastmcp-filtering-demo", "args": ["serve"]}]}
        )

    def test_a_gateway_started_by_a_gateway_refuses_to_serve(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
    ) -> None:
        path = write(tmp_path, '[[upstreams]]\ncommand = "npx"\n')
        monkeypatch.setenv(UPSTREAM_MARK, "1")
        for command in ("check", "serve"):
            assert main([command, str(path)]) == 2
            err = capsys.readouterr().err
            assert "started as an upstream of a fastmcp-filtering gateway" in err

    @pytest.mark.slow
    def test_the_gateway_marks_its_stdio_upstreams(self, tmp_path: Path) -> None:
        """The mark reaches an upstream however it was started (a shell, a wrapper script)."""
        out = tmp_path / "env.json"
        path = write(
            tmp_path,
            f'[[upstreams]]\nname = "spy"\ncommand = "python"\n'
            f'args = ["{MISBEHAVING}", "--env-out", "{out}"]\n',
        )
        done = subprocess.run(
            [sys.executable, "-m", "fastmcp_filtering", "check", str(path)],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert done.returncode == 0, done.stdout + done.stderr
        assert UPSTREAM_MARK in out.read_text(encoding="utf-8")


class TestStateNamespace:
    @pytest.mark.parametrize("value", ["concerns", "a:b"])
    def test_a_namespace_clashing_with_internal_keys_is_refused(
        self, tmp_path: Path, value: str
    ) -> None:
        text = (
            f'[[upstreams]]\ncommand = "npx"\n\n[progressive]\nstate_namespace = "{value}"\n'
            '[[groups]]\nname = "g"\ntools = ["*"]\n'
        )
        message = error_of(tmp_path, text)
        assert "progressive.state_namespace" in message
        assert "is reserved" in message


class TestNamesThatCollide:
    def test_a_second_upstream_without_namespace_is_refused(self) -> None:
        """Two could list the same tool name, one taking the other's calls."""
        with pytest.raises(ValueError, match="a second upstream without namespace"):
            FilteringConfig.model_validate(
                {
                    "upstreams": [
                        {"command": "a"},
                        {"command": "b", "namespace": "b"},
                        {"url": "http://h/mcp"},
                    ]
                }
            )
        config = FilteringConfig.model_validate(
            {"upstreams": [{"command": "a"}, {"command": "b", "namespace": "b"}]}
        )
        assert [u.namespace for u in config.upstreams] == [None, "b"]

    def test_the_file_is_refused_at_its_line(self, tmp_path: Path) -> None:
        """What check and serve both load (load_config)."""
        message = error_of(
            tmp_path, '[[upstreams]]\ncommand = "a"\n\n[[upstreams]]\ncommand = "b"\n'
        )
        assert "upstreams[1]" in message
        assert "namespace" in message


class TestNoSecretsShown:
    def test_labels_never_show_arguments_or_url_credentials(self) -> None:
        labels = [
            FilteringConfig.model_validate({"upstreams": [upstream]}).upstreams[0].label
            for upstream in (
                {"command": "/opt/internal/bin/python3", "args": ["up.py", "--api-key", "K"]},
                {"url": "http://svc:PW-123@host:8080/mcp?api_key=KEY-1#f"},
            )
        ]
        assert labels == ["python3", "http://host:8080/mcp"]

    def test_the_redactor(self) -> None:
        redact = Redactor(["KEY-SECRET-1", "ab"])
        text = redact("bad KEY-SECRET-1 for http://u:p@h/x?k=v at '/opt/internal-tools/run' (ab)")
        assert text == "bad *** for http://h/x at '<path>' (ab)"
        assert safe_url("https://h:8443/mcp") == "https://h:8443/mcp"

    def test_config_errors_never_show_expanded_values(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setenv("PROXY_URL", "ftp://user:HUNTER2-PW@svc/mcp?key=SECRET-Q")
        message = error_of(tmp_path, '[[upstreams]]\nurl = "${PROXY_URL}"\n')
        assert "HUNTER2" not in message
        assert "SECRET-Q" not in message
        assert "ftp://svc/mcp" in message

    def test_a_numeric_token_is_not_printed(self, tmp_path: Path) -> None:
        text = (
            '[[upstreams]]\ncommand = "npx"\n\n[auth]\ntype = "static"\n'
            '[[auth.tokens]]\ntoken = 987654321\nclient_id = "a"\n'
        )
        message = error_of(tmp_path, text)
        assert "987654321" not in message
        assert "auth.tokens[0].token" in message

    def test_a_yaml_syntax_error_does_not_quote_the_line(self, tmp_path: Path) -> None:
        text = "upstreams:\n  - command: npx\n    env: {TOKEN: ghp_SECRETVALUE: x}\n"
        message = error_of(tmp_path, text, "proxy.yaml")
        assert "not valid YAML" in message
        assert "ghp_SECRETVALUE" not in message
