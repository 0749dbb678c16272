"""Rebuild the `arcade` tool-retrieval set from a checkout of ArcadeAI/arcade-ai.

Usage: python convert.py SRC [OUT]
  SRC  root of an ArcadeAI/arcade-ai checkout at commit
       27a6cd31a3fb381e5d6d071dc0497091ae6ec553 (needs toolkits/)
  OUT  output folder (default: the folder of this script)

Standard library only. Nothing from the source tree is imported or executed:
tool definitions and evaluation cases are read from the Python syntax trees
(`ast`), and the few local variables, f-strings and `for` loops the eval files
use to build their cases are evaluated by a tiny literal interpreter below.
"""

import ast
import contextlib
import inspect
import json
import sys
from collections import Counter
from pathlib import Path

# Combined toolkits that were split into per-product toolkits (same functions,
# same evals) before the toolkits left the repository. Keeping both would give
# most requests two equally right answers.
SUPERSEDED = {
    "google": "gmail, google_calendar, google_contacts, google_docs, google_drive, google_sheets",
    "search": "google_finance, google_flights, google_hotels, google_jobs, google_maps, "
    "google_news, google_search, google_shopping, walmart, youtube",
    "web": "firecrawl",
    "microsoft": "outlook_calendar, outlook_mail",
    "code_sandbox": "e2b",
}

EMPTY_SCHEMA = {"type": "object", "properties": {}}


class Unknown:
    """A value the literal interpreter cannot compute."""


UNKNOWN = Unknown()


class FuncRef:
    def __init__(self, module, func):
        self.module, self.func = module, func


class CallRef:
    def __init__(self, func):
        self.func = func


def snake_to_pascal(name):
    # Same rule as arcade_core.utils.snake_to_pascal_case.
    if "_" in name:
        return "".join(x.capitalize() or "_" for x in name.split("_"))
    return name if name[0].isupper() else name.capitalize()


# ----------------------------------------------------------------------------
# tool definitions


def const_str(node):
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    return None


def collect_enums(pkg_dir):
    """Enum-like classes of a toolkit: name -> list of member values."""
    enums = {}
    for py in sorted(pkg_dir.rglob("*.py")):
        tree = ast.parse(py.read_text(encoding="utf-8"))
        for node in tree.body:
            if not isinstance(node, ast.ClassDef):
                continue
            bases = {ast.unparse(b) for b in node.bases}
            if not any("Enum" in b for b in bases):
                continue
            values = []
            for st in node.body:
                if (
                    isinstance(st, ast.Assign)
                    and isinstance(st.value, ast.Constant)
                    and isinstance(st.value.value, (str, int))
                ):
                    values.append(st.value.value)
            if values:
                enums[node.name] = values
    return enums


def type_schema(node, enums):
    """JSON Schema for a type annotation (best effort, unknown -> {})."""
    if node is None:
        return {}
    if isinstance(node, ast.Constant) and node.value is None:
        return {"type": "null"}
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        parts = [node.left, node.right]
        return union_schema(parts, enums)
    if isinstance(node, (ast.Name, ast.Attribute)):
        name = node.attr if isinstance(node, ast.Attribute) else node.id
        simple = {
            "str": "string",
            "int": "integer",
            "float": "number",
            "bool": "boolean",
            "dict": "object",
            "Dict": "object",
            "list": "array",
            "List": "array",
        }
        if name in simple:
            return {"type": simple[name]}
        if name in enums:
            vals = enums[name]
            t = "string" if all(isinstance(v, str) for v in vals) else "integer"
            return {"type": t, "enum": vals}
        return {}
    if isinstance(node, ast.Subscript):
        value = node.value
        base = value.attr if isinstance(value, ast.Attribute) else getattr(value, "id", "")
        args = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        if base == "Annotated":
            return type_schema(args[0], enums)
        if base == "Optional":
            return union_schema([args[0], ast.Constant(None)], enums)
        if base == "Union":
            return union_schema(args, enums)
        if base in ("list", "List", "Sequence", "set", "tuple"):
            items = type_schema(args[0], enums)
            return {"type": "array", "items": items} if items else {"type": "array"}
        if base in ("dict", "Dict", "Mapping"):
            return {"type": "object"}
        if base == "Literal":
            vals = [a.value for a in args if isinstance(a, ast.Constant)]
            t = "string" if all(isinstance(v, str) for v in vals) else "integer"
            return {"type": t, "enum": vals}
    return {}


def union_schema(parts, enums):
    schemas = [type_schema(p, enums) for p in parts]
    non_null = [s for s in schemas if s != {"type": "null"}]
    if len(non_null) == 1:
        return non_null[0]
    return {"anyOf": non_null} if all(non_null) else {}


def is_tool_decorator(dec):
    target = dec.func if isinstance(dec, ast.Call) else dec
    return (isinstance(target, ast.Name) and target.id == "tool") or (
        isinstance(target, ast.Attribute) and target.attr == "tool"
    )


def literal_default(node):
    try:
        return ast.literal_eval(node)
    except Exception:
        return UNKNOWN


def build_tool(fn, dec, toolkit, enums):
    kw = {k.arg: k.value for k in dec.keywords} if isinstance(dec, ast.Call) else {}
    tool_name = const_str(kw.get("name")) or snake_to_pascal(fn.name)
    desc = const_str(kw.get("desc")) or inspect.cleandoc(ast.get_docstring(fn, clean=False) or "")
    args = fn.args.args + fn.args.kwonlyargs
    defaults = [None] * (len(fn.args.args) - len(fn.args.defaults)) + list(fn.args.defaults)
    defaults += list(fn.args.kw_defaults)
    props, required = {}, []
    for arg, default in zip(args, defaults, strict=True):
        ann = arg.annotation
        if ann is not None and "ToolContext" in ast.unparse(ann):
            continue  # injected by the runtime, not part of the input schema
        schema = dict(type_schema(ann, enums))
        if isinstance(ann, ast.Subscript) and getattr(ann.value, "id", "") == "Annotated":
            extra = ann.slice.elts[1:] if isinstance(ann.slice, ast.Tuple) else []
            for e in extra:
                s = const_str(e)
                if s is not None:
                    schema["description"] = s
                    break
        if default is None:
            required.append(arg.arg)
        else:
            d = literal_default(default)
            if d is not UNKNOWN and d is not None:
                schema["default"] = d
        props[arg.arg] = schema
    input_schema = {"type": "object", "properties": props}
    if required:
        input_schema["required"] = required
    return {
        "id": f"{toolkit}_{tool_name}",
        "label": f"{toolkit}.{tool_name}",
        "server": toolkit,
        "name": f"{toolkit}_{tool_name}",
        "description": desc.strip(),
        "inputSchema": input_schema,
        "function": fn.name,
    }


def toolkit_meta(tk_dir):
    text = (tk_dir / "pyproject.toml").read_text(encoding="utf-8")
    meta = {}
    for line in text.splitlines():
        line = line.strip()
        for key in ("name", "version", "description"):
            if line.startswith((key + " ", key + "=")) and key not in meta:
                meta[key] = line.split("=", 1)[1].strip().strip('"')
    return meta


def collect_tools(tk_dir):
    meta = toolkit_meta(tk_dir)
    package = meta["name"]
    toolkit = snake_to_pascal(package.removeprefix("arcade_"))
    pkg_dir = tk_dir / package
    enums = collect_enums(pkg_dir)
    tools = []
    for py in sorted(pkg_dir.rglob("*.py")):
        tree = ast.parse(py.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                for dec in node.decorator_list:
                    if is_tool_decorator(dec):
                        tools.append(build_tool(node, dec, toolkit, enums))
                        break
    return package, toolkit, meta, tools


# ----------------------------------------------------------------------------
# evaluation cases


# positional parameter order of EvalSuite.add_case / EvalSuite.extend_case
ADD_CASE_PARAMS = [
    "name",
    "user_message",
    "expected_tool_calls",
    "critics",
    "system_message",
    "rubric",
    "additional_messages",
]
EXTEND_CASE_PARAMS = [
    "name",
    "user_message",
    "system_message",
    "expected_tool_calls",
    "rubric",
    "critics",
    "additional_messages",
]


class Interp:
    """Evaluates the literal parts of an eval module without running it."""

    def __init__(self, funcs_by_package, imports):
        self.funcs_by_package = funcs_by_package  # package -> set of tool functions
        self.imports = imports  # local name -> FuncRef or module path (str)

    def ev(self, node, env):
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.JoinedStr):
            out = []
            for v in node.values:
                if isinstance(v, ast.Constant):
                    out.append(v.value)
                else:
                    val = self.ev(v.value, env)
                    if val is UNKNOWN or isinstance(val, (FuncRef, CallRef)):
                        return UNKNOWN
                    if v.conversion == ord("r"):
                        val = repr(val)
                    spec = self.ev(v.format_spec, env) if v.format_spec else ""
                    if spec is UNKNOWN:
                        return UNKNOWN
                    try:
                        out.append(format(val, spec))
                    except Exception:
                        return UNKNOWN
            return "".join(out)
        if isinstance(node, ast.Name):
            if node.id in env:
                return env[node.id]
            if node.id in self.imports:
                return self.imports[node.id]
            return UNKNOWN
        if isinstance(node, ast.Attribute):
            base = self.ev(node.value, env)
            if isinstance(base, str) and base.startswith("module:"):
                return FuncRef(base[len("module:") :], node.attr)
            return UNKNOWN
        if isinstance(node, (ast.List, ast.Tuple)):
            return [self.ev(e, env) for e in node.elts]
        if isinstance(node, ast.Dict):
            out = {}
            for k, v in zip(node.keys, node.values, strict=True):
                key = self.ev(k, env) if k is not None else UNKNOWN
                with contextlib.suppress(TypeError):  # unhashable key
                    out[key] = self.ev(v, env)
            return out
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            a, b = self.ev(node.left, env), self.ev(node.right, env)
            if isinstance(a, str) and isinstance(b, str):
                return a + b
            if isinstance(a, list) and isinstance(b, list):
                return a + b
            return UNKNOWN
        if isinstance(node, ast.Subscript):
            base = self.ev(node.value, env)
            idx = self.ev(node.slice, env)
            try:
                return base[idx] if not isinstance(base, Unknown) else UNKNOWN
            except Exception:
                return UNKNOWN
        if isinstance(node, ast.Call):
            func = node.func
            fname = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if fname == "ExpectedToolCall":
                kw = {k.arg: k.value for k in node.keywords}
                fnode = kw.get("func", node.args[0] if node.args else None)
                return CallRef(self.ev(fnode, env) if fnode is not None else UNKNOWN)
            if fname == "enumerate" and len(node.args) == 1:
                seq = self.ev(node.args[0], env)
                return [[i, v] for i, v in enumerate(seq)] if isinstance(seq, list) else UNKNOWN
            if fname == "join" and isinstance(node.func, ast.Attribute) and len(node.args) == 1:
                sep, seq = self.ev(node.func.value, env), self.ev(node.args[0], env)
                strings = isinstance(seq, list) and all(isinstance(x, str) for x in seq)
                if isinstance(sep, str) and strings:
                    return sep.join(seq)
                return UNKNOWN
            if fname == "format" and isinstance(node.func, ast.Attribute):
                base = self.ev(node.func.value, env)
                args = [self.ev(a, env) for a in node.args]
                kws = {k.arg: self.ev(k.value, env) for k in node.keywords if k.arg}
                for k in node.keywords:
                    if k.arg is None:  # **mapping
                        more = self.ev(k.value, env)
                        if not isinstance(more, dict):
                            return UNKNOWN
                        kws.update(more)
                known = not any(x is UNKNOWN for x in args + list(kws.values()))
                if isinstance(base, str) and known:
                    try:
                        return base.format(*args, **kws)
                    except Exception:
                        return UNKNOWN
            return UNKNOWN
        return UNKNOWN

    def assign(self, target, value, env):
        if isinstance(target, ast.Name):
            env[target.id] = value
        elif isinstance(target, (ast.Tuple, ast.List)):
            if isinstance(value, (list, tuple)) and len(value) == len(target.elts):
                for t, v in zip(target.elts, value, strict=True):
                    self.assign(t, v, env)
            else:
                for t in target.elts:
                    self.assign(t, UNKNOWN, env)

    def run(self, body, env, cases, depth=0):
        for st in body:
            if isinstance(st, ast.Return):
                return
            if isinstance(st, ast.Assign):
                val = self.ev(st.value, env)
                for t in st.targets:
                    self.assign(t, val, env)
            elif isinstance(st, ast.AnnAssign) and st.value is not None:
                self.assign(st.target, self.ev(st.value, env), env)
            elif isinstance(st, ast.For):
                it = self.ev(st.iter, env)
                if isinstance(it, dict):
                    it = list(it)
                if isinstance(it, list) and depth < 3:
                    for item in it:
                        inner = dict(env)
                        self.assign(st.target, item, inner)
                        self.run(st.body, inner, cases, depth + 1)
                else:
                    self.scan_unresolved(st, cases)
            elif isinstance(st, ast.Expr) and isinstance(st.value, ast.Call):
                self.case_call(st.value, env, cases)
            elif isinstance(st, (ast.If, ast.With, ast.Try, ast.While)):
                self.scan_unresolved(st, cases)

    def scan_unresolved(self, st, cases):
        for node in ast.walk(st):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in ("add_case", "extend_case")
            ):
                cases.append({"status": "unresolved", "line": node.lineno})

    def case_call(self, call, env, cases):
        func = call.func
        if not isinstance(func, ast.Attribute) or func.attr not in ("add_case", "extend_case"):
            return
        method = func.attr
        params = ADD_CASE_PARAMS if method == "add_case" else EXTEND_CASE_PARAMS
        kw = dict(zip(params, call.args, strict=False))
        kw.update({k.arg: k.value for k in call.keywords if k.arg})
        name = self.ev(kw["name"], env) if "name" in kw else None
        msg = self.ev(kw["user_message"], env) if "user_message" in kw else UNKNOWN
        calls = self.ev(kw["expected_tool_calls"], env) if "expected_tool_calls" in kw else []
        extra = kw.get("additional_messages")
        has_context = method == "extend_case" or not (
            extra is None
            or (isinstance(extra, ast.Constant) and extra.value is None)
            or (isinstance(extra, (ast.List, ast.Tuple)) and not extra.elts)
        )
        funcs = []
        if isinstance(calls, list):
            for c in calls:
                if isinstance(c, CallRef):
                    funcs.append(c.func)
                elif isinstance(c, list) and c:  # old style: (func, args)
                    funcs.append(c[0])
                else:
                    funcs.append(UNKNOWN)
        else:
            funcs.append(UNKNOWN)
        cases.append(
            {
                "status": "ok" if isinstance(msg, str) else "unresolved",
                "name": name if isinstance(name, str) else None,
                "user_message": msg if isinstance(msg, str) else None,
                "funcs": funcs,
                "has_context": has_context,
                "method": method,
                "line": call.lineno,
            }
        )


def read_imports(tree, funcs_by_package):
    imports = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            top = node.module.split(".")[0]
            for a in node.names:
                local = a.asname or a.name
                if top in funcs_by_package:
                    if a.name in funcs_by_package[top]:
                        imports[local] = FuncRef(node.module, a.name)
                    else:
                        imports[local] = "module:" + node.module + "." + a.name
        elif isinstance(node, ast.Import):
            for a in node.names:
                imports[a.asname or a.name.split(".")[0]] = "module:" + a.name
    return imports


def module_literals(path, funcs_by_package):
    """Top-level literal assignments of a helper module next to the evals."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    interp = Interp(funcs_by_package, read_imports(tree, funcs_by_package))
    env = {}
    for st in tree.body:
        if isinstance(st, (ast.Assign, ast.AnnAssign)):
            interp.run([st], env, [])
    return env


def local_imports(tree, eval_file, tk_dir, funcs_by_package):
    """Names imported from sibling helper modules (e.g. evals/constants.py)."""
    env = {}
    for node in tree.body:
        if not isinstance(node, ast.ImportFrom) or not node.module:
            continue
        parts = node.module.split(".")
        base = eval_file.parent if node.level else tk_dir
        path = base.joinpath(*parts).with_suffix(".py")
        if not path.is_file():
            continue
        lits = module_literals(path, funcs_by_package)
        for a in node.names:
            if a.name in lits:
                env[a.asname or a.name] = lits[a.name]
    return env


def collect_cases(eval_file, tk_dir, funcs_by_package):
    tree = ast.parse(eval_file.read_text(encoding="utf-8"))
    imports = read_imports(tree, funcs_by_package)
    interp = Interp(funcs_by_package, imports)
    module_env = local_imports(tree, eval_file, tk_dir, funcs_by_package)
    cases = []
    # module-level literals (messages, argument tables) first
    for st in tree.body:
        if isinstance(st, (ast.Assign, ast.AnnAssign)):
            interp.run([st], module_env, cases)
    for st in tree.body:
        if isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef)):
            interp.run(st.body, dict(module_env), cases)
    return cases


# ----------------------------------------------------------------------------


def write_jsonl(path, rows):
    with open(path, "w", encoding="utf-8") as f:
        for row in rows:
            f.write(json.dumps(row, ensure_ascii=False) + "\n")


def main():
    if len(sys.argv) < 2:
        raise SystemExit(__doc__)
    src = Path(sys.argv[1])
    out = Path(sys.argv[2]) if len(sys.argv) > 2 else Path(__file__).resolve().parent
    out.mkdir(parents=True, exist_ok=True)
    tk_root = src / "toolkits"

    toolkits = []
    for tk_dir in sorted(p for p in tk_root.iterdir() if (p / "pyproject.toml").exists()):
        if tk_dir.name in SUPERSEDED:
            continue
        package, toolkit, meta, tools = collect_tools(tk_dir)
        toolkits.append((tk_dir, package, toolkit, meta, tools))

    funcs_by_package = {pkg: {t["function"] for t in tools} for _, pkg, _, _, tools in toolkits}
    tool_by_func = {}
    all_tools = []
    for _, package, _, _, tools in toolkits:
        for t in tools:
            key = (package, t["function"])
            if key in tool_by_func:
                raise SystemExit(f"duplicate tool function {key}")
            tool_by_func[key] = t
            all_tools.append(t)
    ids = Counter(t["id"] for t in all_tools)
    dup = [k for k, v in ids.items() if v > 1]
    if dup:
        raise SystemExit(f"duplicate tool ids: {dup}")

    stats = Counter()
    rows = []
    seen = set()
    for tk_dir, _, _, _, _ in toolkits:
        eval_dir = tk_dir / "evals"
        if not eval_dir.is_dir():
            continue
        for ef in sorted(eval_dir.rglob("*.py")):
            cases = collect_cases(ef, tk_dir, funcs_by_package)
            rel = ef.relative_to(src).as_posix()
            for c in cases:
                stats["cases"] += 1
                if c["status"] != "ok":
                    stats["dropped: message not statically resolvable"] += 1
                    continue
                if c["has_context"]:
                    stats["dropped: needs earlier conversation turns"] += 1
                    continue
                if not c["funcs"]:
                    stats["dropped: expects no tool call"] += 1
                    continue
                gold, ok = [], True
                for f in c["funcs"]:
                    if not isinstance(f, FuncRef):
                        ok = False
                        break
                    t = tool_by_func.get((f.module.split(".")[0], f.func))
                    if t is None:
                        ok = False
                        break
                    if t["name"] not in gold:
                        gold.append(t["name"])
                if not ok:
                    stats["dropped: gold tool missing"] += 1
                    continue
                query = c["user_message"].strip()
                if not query:
                    stats["dropped: empty message"] += 1
                    continue
                key = (query, tuple(gold))
                if key in seen:
                    stats["dropped: duplicate of an earlier (message, gold)"] += 1
                    continue
                seen.add(key)
                rows.append(
                    {
                        "qid": f"arcade_{len(rows) + 1}",
                        "query": query,
                        "gold": gold,
                        "case": c["name"],
                        "source": f"{rel}:{c['line']}",
                    }
                )

    tools_out = []
    for t in all_tools:
        t = dict(t)
        t.pop("function")
        tools_out.append(t)
    write_jsonl(out / "tools.jsonl", tools_out)
    write_jsonl(out / "queries.jsonl", rows)
    servers = {t["server"] for t in tools_out}
    print(f"tools.jsonl: {len(tools_out)} tools, {len(servers)} toolkits")
    print(f"queries.jsonl: {len(rows)} queries")
    for k, v in sorted(stats.items()):
        print(f"  {k}: {v}")


if __name__ == "__main__":
    main()
