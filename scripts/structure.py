"""The shape of the code, measured: modules and imports between them (function-level imports
included), import circles, imports that run up a layer, numba kernels with many arguments, task
names tested in the front-ends, and the size of ``cli.py``. ``tests/test_structure.py`` holds the
rules; this script prints the figures.

    python scripts/structure.py [--json]

Layers, from the ground up: the ground floor (``io``, ``eval``, ``text``, ``datasets``,
``learn`` (the learner registry, selection, the epoch loop), ``model``, ``jit``, ``vocab``,
``vectors``, ``config``, ``options``, ``tasks``), the wings (``sequence``, ``parse``, ``rerank``), the
front-ends (``api``, ``serve``, ``batch``, ``dump``, ``explain``, ``card``, ``recipes``, ...), and the command line
(``commands``, ``cli``). An import may run down or within a layer, never up.
"""
from __future__ import annotations

import argparse
import ast
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent / "structkit"
WINGS = ("sequence", "parse", "rerank", "tokenizer", "ud", "morph", "pipeline")
FRONT = ("api", "api_io", "serve", "batch", "dump", "explain", "distributed", "plot", "card", "recipes",
         "builds")
TOP = ("commands", "cli", "__main__", "structkit")
# Where a task's name may not be tested (``task == "parse"``, ``task in ("pos", ...)``).
NO_TASK_NAMES = ("cli", "commands", "api", "serve", "batch", "dump", "card")
TASK_NAMES = {"pos", "chunk", "ner", "parse", "rerank", "tokenize", "morph"}  # ("pipeline" is also an endpoint)
# The kinds of output the server once switched on (a task's ``Serving`` now runs and shows them).
OUTPUT_KINDS = {"tree", "analyses", "analysis", "labels", "choice"}
MAX_KERNEL_ARGS = 12


def layer(module: str) -> int:
    parts = module.split(".")
    head = parts[1] if len(parts) > 1 else parts[0]
    if module == "structkit" or head in TOP:
        return 3
    if head in FRONT:
        return 2
    if head in WINGS:
        return 1
    return 0


def modules(root: Path = ROOT) -> dict[str, Path]:
    out = {}
    for f in sorted(root.rglob("*.py")):
        parts = list(f.relative_to(root.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = f
    return out


def imports(mods: dict[str, Path]) -> dict[str, set[str]]:
    """Each module's imports of other modules of the package, wherever they stand in the file."""
    def resolve(name: str) -> str | None:
        while name and name not in mods:
            name = name.rsplit(".", 1)[0] if "." in name else ""
        return name or None

    edges: dict[str, set[str]] = {m: set() for m in mods}
    for m, f in mods.items():
        for node in ast.walk(ast.parse(f.read_text(encoding="utf-8"))):
            targets = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    pkg = m.split(".") if f.name == "__init__.py" else m.split(".")[:-1]
                    pkg = pkg[:len(pkg) - node.level + 1]
                    base = ".".join(pkg + ([base] if base else []))
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in mods else base for a in node.names]
            for t in targets:
                r = resolve(t)
                if r and r != m and r != "structkit":
                    edges[m].add(r)
    return edges


def circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(edges[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(max(10000, sys.getrecursionlimit()))
    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out


def upward(edges: dict[str, set[str]]) -> list[tuple[str, str]]:
    return sorted((a, b) for a, bs in edges.items() for b in bs if layer(b) > layer(a))


def _is_kernel(fn: ast.FunctionDef) -> bool:
    for d in fn.decorator_list:
        target = d.func if isinstance(d, ast.Call) else d
        name = target.attr if isinstance(target, ast.Attribute) else getattr(target, "id", "")
        if name in ("njit", "jit", "kernel"):
            return True
    return False


def kernels(mods: dict[str, Path]) -> list[tuple[str, str, int]]:
    """(module, function, arguments) of every function decorated as a numba kernel."""
    out = []
    for m, f in mods.items():
        for node in ast.walk(ast.parse(f.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef) and _is_kernel(node):
                a = node.args
                n = len(a.posonlyargs) + len(a.args) + len(a.kwonlyargs) + bool(a.vararg) + bool(a.kwarg)
                out.append((m, node.name, n))
    return out


def _names_a_task(node: ast.AST) -> bool:
    if isinstance(node, ast.Constant):
        return node.value in TASK_NAMES or node.value in OUTPUT_KINDS
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return any(_names_a_task(e) for e in node.elts)
    return False


def task_name_tests(mods: dict[str, Path]) -> list[tuple[str, int, str]]:
    """Comparisons with a task's name in the modules that must ask the task instead."""
    out = []
    for m, f in mods.items():
        head = m.split(".")[1] if "." in m else m
        if head not in NO_TASK_NAMES:
            continue
        src = f.read_text(encoding="utf-8")
        for node in ast.walk(ast.parse(src)):
            if isinstance(node, ast.Compare) and any(_names_a_task(x) for x in [node.left, *node.comparators]):
                out.append((m, node.lineno, ast.get_source_segment(src, node) or ""))
    return out


def measure(root: Path = ROOT) -> dict:
    mods = modules(root)
    edges = imports(mods)
    ks = kernels(mods)
    return {
        "modules": len(mods),
        "imports": sum(len(e) for e in edges.values()),
        "circles": circles(edges),
        "upward_imports": upward(edges),
        "kernels": len(ks),
        "kernels_over_limit": [k for k in ks if k[2] > MAX_KERNEL_ARGS],
        "most_kernel_args": max((k[2] for k in ks), default=0),
        "task_name_tests": task_name_tests(mods),
        "cli_lines": len((root / "cli.py").read_text(encoding="utf-8").splitlines()),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    r = measure()
    if args.json:
        print(json.dumps(r, indent=2))
        return 0
    print(f"{r['modules']} modules, {r['imports']} imports between them")
    print(f"import circles: {len(r['circles'])}")
    for c in r["circles"]:
        print("  " + " <-> ".join(c))
    print(f"imports running up a layer: {len(r['upward_imports'])}")
    for a, b in r["upward_imports"]:
        print(f"  {a} -> {b}")
    print(f"numba kernels: {r['kernels']}, most arguments {r['most_kernel_args']}, "
          f"over {MAX_KERNEL_ARGS}: {len(r['kernels_over_limit'])}")
    for m, fn, n in r["kernels_over_limit"]:
        print(f"  {m}.{fn}: {n}")
    print(f"task names tested in {', '.join(NO_TASK_NAMES)}: {len(r['task_name_tests'])}")
    for m, line, text in r["task_name_tests"]:
        print(f"  {m}:{line}: {text}")
    print(f"cli.py: {r['cli_lines']} lines")
    return 0


if __name__ == "__main__":
    sys.exit(main())
