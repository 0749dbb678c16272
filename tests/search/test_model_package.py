"""The tool-retrieval model ships in its own wheel: pinned by ``[semantic]``, absent otherwise."""

from __future__ import annotations

import hashlib
import importlib.util
import re
import tarfile
import tomllib
import zipfile
from pathlib import Path

import pytest

from fastmcp_filtering.retrieval import embedders

from ..conftest import SEMANTIC_MODULES, need

ROOT = Path(__file__).resolve().parents[2]
COMPANION = ROOT / "packages" / "fastmcp-filtering-model"


def _project(folder: Path) -> dict[str, object]:
    with (folder / "pyproject.toml").open("rb") as file:
        project: dict[str, object] = tomllib.load(file)["project"]
    return project


def _semantic_pins() -> list[str]:
    extras = _project(ROOT)["optional-dependencies"]
    assert isinstance(extras, dict)
    return [r for r in extras["semantic"] if r.startswith("fastmcp-filtering-model")]


class TestPins:
    def test_the_semantic_extra_pins_the_companion_version(self) -> None:
        version = _project(COMPANION)["version"]
        assert _semantic_pins() == [f"fastmcp-filtering-model=={version}"]

    def test_the_companion_says_the_version_its_metadata_does(self) -> None:
        init = (COMPANION / "src" / "fastmcp_filtering_model" / "__init__.py").read_text()
        assert f'__version__ = "{_project(COMPANION)["version"]}"' in init

    def test_both_packages_pin_the_file_in_the_repository(self) -> None:
        model = COMPANION / "src" / "fastmcp_filtering_model" / "model.onnx"
        digest = hashlib.sha256(model.read_bytes()).hexdigest()
        init = (COMPANION / "src" / "fastmcp_filtering_model" / "__init__.py").read_text()
        assert re.findall(r'^SHA256 = "([0-9a-f]{64})"$', init, flags=re.MULTILINE) == [digest]
        assert digest == embedders._MODEL_SHA256

    def test_the_installed_file_is_the_pinned_one(self) -> None:
        need("the model package", *SEMANTIC_MODULES, hint=embedders.INSTALL_HINT)
        import fastmcp_filtering_model

        path = fastmcp_filtering_model.model_path()
        assert hashlib.sha256(path.read_bytes()).hexdigest() == embedders._MODEL_SHA256
        assert fastmcp_filtering_model.SHA256 == embedders._MODEL_SHA256


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Both packages built with hatchling, the backend both pyproject files name."""
    if importlib.util.find_spec("hatchling") is None:
        pytest.fail("hatchling (the test extra) is not installed")
    from hatchling.builders.sdist import SdistBuilder
    from hatchling.builders.wheel import WheelBuilder

    out = str(tmp_path_factory.mktemp("dist"))
    return {
        "wheel": Path(next(iter(WheelBuilder(str(ROOT)).build(directory=out)))),
        "sdist": Path(next(iter(SdistBuilder(str(ROOT)).build(directory=out)))),
        "model": Path(next(iter(WheelBuilder(str(COMPANION)).build(directory=out)))),
    }


@pytest.mark.slow
class TestWheels:
    def test_a_plain_install_does_not_carry_the_model(self, built: dict[str, Path]) -> None:
        with (
            zipfile.ZipFile(built["wheel"]) as wheel_file,
            tarfile.open(built["sdist"]) as sdist_file,
        ):
            wheel, sdist = wheel_file.namelist(), sdist_file.getnames()
        for names in (wheel, sdist):
            assert not [n for n in names if n.endswith(".onnx") or "/packages/" in n]
        assert built["wheel"].stat().st_size < 2 * 2**20
        assert built["sdist"].stat().st_size < 4 * 2**20

    def test_the_model_wheel_holds_the_pinned_file_and_its_licences(
        self, built: dict[str, Path]
    ) -> None:
        with zipfile.ZipFile(built["model"]) as wheel:
            names = wheel.namelist()
            model = wheel.read("fastmcp_filtering_model/model.onnx")
        assert hashlib.sha256(model).hexdigest() == embedders._MODEL_SHA256
        licences = {n.rsplit("/", 1)[-1] for n in names if "/licenses/" in n}
        assert licences == {"LICENSE", "NOTICE"}
