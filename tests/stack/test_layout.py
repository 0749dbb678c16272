"""The package's layout as the architecture promises it: public names, old paths, layering."""

from __future__ import annotations

import ast
import importlib
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

import fastmcp_filtering
import fastmcp_filtering.gateway

_BENCH = Path(__file__).resolve().parents[2] / "bench" / "architecture.py"
_TESTS = Path(__file__).resolve().parents[1]

# What each subpackage may import from the package: dependencies point one way.
_ALLOWED: dict[str, set[str]] = {
    "core": {"core", "_fastmcp"},
    "retrieval": {"retrieval", "core", "_fastmcp"},
    "policy": {"policy", "core", "_fastmcp"},
    "server": {"server", "policy", "core", "_fastmcp"},
    # The features, above the plumbing: each with its rules, middleware and meta-tools.
    "access": {"access", "server", "policy", "core", "_fastmcp"},
    "concern": {"concern", "access", "server", "policy", "core", "_fastmcp"},
    "progressive": {"progressive", "concern", "access", "server", "policy", "core", "_fastmcp"},
    "search": {"search", "access", "server", "policy", "retrieval", "core", "_fastmcp"},
    "group": {"group", "access", "server", "policy", "core", "_fastmcp"},
    "gateway": {
        "gateway",
        "stack",
        "group",
        "search",
        "progressive",
        "concern",
        "access",
        "server",
        "policy",
        "retrieval",
        "core",
        "_fastmcp",
    },
}


def _architecture() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_architecture", _BENCH)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _graph() -> dict[str, set[str]]:
    bench = _architecture()
    paths = {bench.module_name(p): p for p in sorted(bench.ROOT.rglob("*.py"))}
    return {
        name: {m for m in bench.imports_of(path, name) if m in paths and m != name}
        for name, path in paths.items()
    }


def _area(module: str) -> str:
    return module.split(".")[1] if module.count(".") else "__init__"


class TestPublicNames:
    def test_every_public_name_imports(self) -> None:
        for namespace in (fastmcp_filtering, fastmcp_filtering.gateway):
            missing = [n for n in namespace.__all__ if not hasattr(namespace, n)]
            assert missing == []

    def test_the_extension_points_the_docs_name_are_public(self) -> None:
        from fastmcp_filtering.policy.decision import Hidden, PolicyLayer
        from fastmcp_filtering.server.layers import LayerMiddleware

        assert fastmcp_filtering.PolicyLayer is PolicyLayer
        assert fastmcp_filtering.Hidden is Hidden
        assert fastmcp_filtering.LayerMiddleware is LayerMiddleware


class TestNoOldPaths:
    @pytest.mark.parametrize("old", ["filter", "middleware", "config", "no_such_module"])
    def test_a_module_path_never_released_does_not_import(self, old: str) -> None:
        """The package's modules live in subpackages; no forwarding module keeps other paths."""
        with pytest.raises(ModuleNotFoundError):
            importlib.import_module(f"fastmcp_filtering.{old}")


def _modules() -> list[ModuleType]:
    root = Path(fastmcp_filtering.__file__).parent
    names = [
        "fastmcp_filtering." + ".".join(p.relative_to(root).with_suffix("").parts)
        for p in sorted(root.rglob("*.py"))
        if p.name not in ("__init__.py", "__main__.py")  # __main__ runs the command line
    ]
    return [importlib.import_module(n) for n in names]


class TestOneExceptionRoot:
    def test_every_exception_the_package_defines_descends_from_filtering_error(self) -> None:
        foreign = sorted(
            f"{module.__name__}.{name}"
            for module in _modules()
            for name, value in vars(module).items()
            if isinstance(value, type)
            and issubclass(value, BaseException)
            and value.__module__ == module.__name__
            and not issubclass(value, fastmcp_filtering.FilteringError)
        )
        assert foreign == []

    def test_the_package_raises_none_of_pythons_own_value_or_type_errors(self) -> None:
        """Its own (``OptionError``, ``OptionTypeError``) are those, under the package root."""
        root = Path(fastmcp_filtering.__file__).parent
        raised = sorted(
            f"{path.relative_to(root)}:{node.lineno}"
            for path in sorted(root.rglob("*.py"))
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
            if isinstance(node, ast.Raise)
            and isinstance(node.exc, ast.Call)
            and isinstance(node.exc.func, ast.Name)
            and node.exc.func.id in {"ValueError", "TypeError", "Exception", "RuntimeError"}
        )
        assert raised == []

    def test_the_root_and_its_kinds_are_public(self) -> None:
        assert issubclass(fastmcp_filtering.OptionError, ValueError)
        assert issubclass(fastmcp_filtering.OptionTypeError, TypeError)
        for kind in ("OptionError", "OptionTypeError", "StateUnavailable", "UpstreamError"):
            assert issubclass(getattr(fastmcp_filtering, kind), fastmcp_filtering.FilteringError)
        assert issubclass(fastmcp_filtering.gateway.ConfigError, fastmcp_filtering.OptionError)


class TestSurface:
    _PUBLIC_MODULES = ("client.py", "semantic.py")
    """Public modules the reference documents beside the package ``__init__`` files."""

    def test_public_names_are_declared_only_in_the_public_namespaces(self) -> None:
        root = Path(fastmcp_filtering.__file__).parent
        declaring = sorted(
            str(path.relative_to(root))
            for path in sorted(root.rglob("*.py"))
            if path.name != "__init__.py"
            and str(path.relative_to(root)) not in self._PUBLIC_MODULES
            and any(
                isinstance(target, ast.Name) and target.id == "__all__"
                for node in ast.parse(path.read_text(encoding="utf-8")).body
                if isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign)
                for target in (node.targets if isinstance(node, ast.Assign) else [node.target])
            )
        )
        assert declaring == []

    def test_no_folder_holds_more_than_15_modules(self) -> None:
        root = Path(fastmcp_filtering.__file__).parent
        crowded = {
            str(folder.relative_to(root.parent)): count
            for folder in [root, *(p for p in root.rglob("*") if p.is_dir())]
            if not folder.name.startswith(("_", "."))
            and (count := len([m for m in folder.glob("*.py") if m.name != "__init__.py"])) > 15
        }
        assert crowded == {}


class TestLayering:
    def test_no_import_cycles_counting_imports_inside_functions(self) -> None:
        assert _architecture().cycles(_graph()) == []

    def test_subpackages_import_only_what_lies_below_them(self) -> None:
        wrong = sorted(
            f"{module} -> {imported}"
            for module, imports in _graph().items()
            if _area(module) in _ALLOWED
            for imported in imports
            if _area(imported) not in _ALLOWED[_area(module)]
        )
        assert wrong == []

    def test_the_policy_subclasses_nothing_of_fastmcp(self) -> None:
        import fastmcp

        root = Path(fastmcp_filtering.__file__).parent / "policy"
        subclasses = sorted(
            f"{module.__name__}.{name}"
            for module in _modules()
            if Path(str(module.__file__)).parent == root
            for name, value in vars(module).items()
            if isinstance(value, type)
            and value.__module__ == module.__name__
            and any(base.__module__.split(".")[0] == fastmcp.__name__ for base in value.__mro__)
        )
        assert subclasses == []

    def test_the_policy_lists_nothing(self) -> None:
        # What a layer must count on a server it asks of the ``Listing`` it is handed.
        listers = {"list_tools", "list_prompts", "list_resources", "list_resource_templates"}
        root = Path(fastmcp_filtering.__file__).parent / "policy"
        calls = sorted(
            f"{path.name}:{node.lineno}"
            for path in root.glob("*.py")
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
            if isinstance(node, ast.Attribute) and node.attr in listers
        )
        assert calls == []

    def test_the_listing_check_finds_a_call(self) -> None:
        tree = ast.parse("async def f(server):\n    return await server.list_tools()\n")
        assert any(isinstance(n, ast.Attribute) and n.attr == "list_tools" for n in ast.walk(tree))

    def test_the_top_level_is_small(self) -> None:
        root = _architecture().ROOT
        assert len(list(root.glob("*.py"))) <= 12
        assert {p.name for p in root.iterdir() if (p / "__init__.py").exists()} == set(_ALLOWED)


def _test_sources() -> list[Path]:
    """Every Python file under tests/, less vendored trees (node_modules, dot folders)."""
    return [
        path
        for path in sorted(_TESTS.rglob("*.py"))
        if not any(
            part == "node_modules" or part.startswith(".")
            for part in path.relative_to(_TESTS).parts
        )
    ]


def _test_modules_imported(path: Path) -> list[str]:
    """The imports in a file (inside functions too) that name a module called test_*."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            named = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            module = "." * node.level + (f"{node.module}." if node.module else "")
            named = [module + alias.name for alias in node.names]
        else:
            continue
        if any(part.startswith("test_") for name in named for part in name.split(".")):
            found.append(f"{path.relative_to(_TESTS)}:{node.lineno}: {', '.join(named)}")
    return found


class TestTestsLayout:
    def test_no_test_module_imports_another(self) -> None:
        # Shared helpers live in tests/_support/, tests/_*.py or fixtures, never in a test module.
        sources = _test_sources()
        assert len(sources) > 100
        assert [line for path in sources for line in _test_modules_imported(path)] == []


class TestSmallPieces:
    @pytest.mark.parametrize(
        ("kind", "most"),
        [(ast.ClassDef, 250), (ast.FunctionDef, 60), (ast.AsyncFunctionDef, 60)],
        ids=["classes", "functions", "async functions"],
    )
    def test_no_piece_is_longer_than_the_house_allows(self, kind: type[ast.AST], most: int) -> None:
        bench = _architecture()
        paths = {bench.module_name(p): p for p in sorted(bench.ROOT.rglob("*.py"))}
        longest = bench.longest(paths, kind, most=1)
        assert [(lines, name) for lines, name in longest if lines > most] == []


class TestOneWayThrough:
    async def test_each_request_enters_few_of_the_package_modules(self) -> None:
        bench = _architecture()
        sys.path.insert(0, str(_BENCH.parents[1] / "examples"))
        try:
            found = await bench.entered()
        finally:
            sys.path.remove(str(_BENCH.parents[1] / "examples"))
        counts = {label: len(modules) for label, (modules, _) in found.items()}
        over = {k: (v, bench.TARGETS[k]) for k, v in counts.items() if v > bench.TARGETS[k]}
        assert over == {}
        # The request really ran through the stack: its policy, its hooks.
        assert {"policy.decision", "server.hooks"} <= set(found["tools/list"][0])


# Containers that hold state when a module keeps one at its top level and changes it.
_CONTAINERS = frozenset(
    {"dict", "set", "list", "defaultdict", "OrderedDict", "deque", "Counter"}
    | {"WeakKeyDictionary", "WeakValueDictionary", "WeakSet"}
)
_MUTATORS = frozenset(
    {"add", "append", "extend", "insert", "setdefault", "pop", "popitem", "update"}
    | {"discard", "remove", "clear", "__setitem__", "__delitem__"}
)

# Module-level containers their module still changes, each with why it is no per-server state.
_REGISTRIES_ALLOWED: dict[str, str] = {}


def _bound_containers(tree: ast.Module) -> set[str]:
    """Names the module binds, at its top level, to a container literal or constructor call."""
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            targets, value = [node.target], node.value
        else:
            continue
        if isinstance(value, ast.Call):
            func = value.func
            called = func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")
            if called not in _CONTAINERS:
                continue
        elif not isinstance(value, (ast.Dict, ast.Set, ast.List, ast.DictComp, ast.SetComp)):
            continue
        names |= {t.id for t in targets if isinstance(t, ast.Name)}
    return names


def _changed(tree: ast.Module, names: set[str]) -> set[str]:
    """Which of ``names`` the module's functions change: an item set or deleted, a mutating
    method called (what the module does while it is imported, such as ``__all__ +=``, builds
    a constant)."""

    def named(node: ast.AST) -> str | None:
        return node.id if isinstance(node, ast.Name) and node.id in names else None

    functions = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)
    changed: set[str] = set()
    inside = (n for f in ast.walk(tree) if isinstance(f, functions) for n in ast.walk(f))
    for node in inside:
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Delete)):
            targets = node.targets if isinstance(node, (ast.Assign, ast.Delete)) else [node.target]
            for target in targets:
                for part in ast.walk(target):
                    if isinstance(part, ast.Subscript) and (name := named(part.value)):
                        changed.add(name)
                if isinstance(node, ast.AugAssign) and (name := named(target)):
                    changed.add(name)
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in _MUTATORS
            and (name := named(node.func.value))
        ):
            changed.add(name)
    return changed


def _rebound(tree: ast.Module) -> set[str]:
    """The module-level names the module's functions rebind (``global``)."""
    return {name for node in ast.walk(tree) if isinstance(node, ast.Global) for name in node.names}


def _chain_edits(tree: ast.Module) -> int:
    """How many places change a middleware chain: ``add_middleware``, or a change to a
    server's ``middleware`` list or the SDK's (``sdk_middleware``), directly or by a name."""

    def chain(node: ast.AST) -> bool:
        if isinstance(node, ast.Attribute) and node.attr == "middleware":
            return True
        return isinstance(node, ast.Call) and getattr(node.func, "id", "") == "sdk_middleware"

    aliases = {
        target.id
        for node in ast.walk(tree)
        if isinstance(node, ast.Assign) and chain(node.value)
        for target in node.targets
        if isinstance(target, ast.Name)
    }

    def edited(node: ast.AST) -> bool:
        return chain(node) or (isinstance(node, ast.Name) and node.id in aliases)

    edits = 0
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            attr = node.func.attr
            edits += attr == "add_middleware" or (attr in _MUTATORS and edited(node.func.value))
        elif isinstance(node, (ast.Assign, ast.Delete)):
            edits += any(isinstance(t, ast.Subscript) and edited(t.value) for t in node.targets)
    return edits


class TestOneRuntimePerServer:
    def test_a_chain_is_edited_only_by_the_setup(self) -> None:
        # The runtime (server.hooks) is the one place that adds to, reorders or wraps a
        # server's middleware; the gateway builds its own server, as any server author does.
        bench = _architecture()
        editing = {
            bench.module_name(path)
            for path in sorted(bench.ROOT.rglob("*.py"))
            if _area(bench.module_name(path)) != "gateway"
            and _chain_edits(ast.parse(path.read_text(encoding="utf-8")))
        }
        assert editing == {"fastmcp_filtering.server.hooks"}

    def test_the_check_finds_a_chain_edit(self) -> None:
        edits = (
            "mcp.add_middleware(m)",
            "server.middleware.append(m)",
            "chain = server.middleware\nchain[0] = m",
            "sdk_middleware(server).insert(0, m)",
        )
        assert [_chain_edits(ast.parse(e)) for e in edits] == [1, 1, 1, 1]
        assert _chain_edits(ast.parse("chain = server.middleware\nprint(chain[-1])")) == 0

    def test_no_module_keeps_a_registry_it_changes(self) -> None:
        # Per-server state is an attribute of the server's FilteringRuntime; a module-level
        # container its module changes is state shared by every server in the process.
        bench = _architecture()
        found: set[str] = set()
        for path in sorted(bench.ROOT.rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            module = bench.module_name(path)
            changed = _changed(tree, _bound_containers(tree)) | _rebound(tree)
            found |= {f"{module}.{n}" for n in changed}
        assert sorted(found - set(_REGISTRIES_ALLOWED)) == []
        assert sorted(set(_REGISTRIES_ALLOWED) - found) == []  # an entry gone stays gone

    def test_the_check_finds_a_registry(self) -> None:
        tree = ast.parse(
            "import weakref\n_A = weakref.WeakKeyDictionary()\n_B: dict[int, int] = {}\n"
            "_C = {1: 2}\n_D = []\n_D.append(1)\n"
            "def f(s):\n    _A[s] = 1\n    _B.setdefault(1, 2)\n    print(_C[1])\n"
        )
        assert _changed(tree, _bound_containers(tree)) == {"_A", "_B"}
        assert _rebound(ast.parse("_E = None\ndef g():\n    global _E\n    _E = 1\n")) == {"_E"}
