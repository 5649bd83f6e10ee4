"""The import graph of ``pbsim`` has no cycles and respects the layers.

How the graph is built (statically, with :mod:`ast`; nothing is imported):

- Nodes are the modules of ``pbsim/`` (``pbsim.a.b`` for ``pbsim/a/b.py``, ``pbsim.a`` for
  ``pbsim/a/__init__.py``).
- Every ``import`` / ``from ... import`` statement anywhere in a module counts, at module level
  or inside a function, class, ``if`` or ``try`` (a function-level import is a real dependency
  that only runs later; it does not break a cycle).  Relative imports are resolved against the
  importing module's package.  ``from pbsim.a import b`` is an edge to ``pbsim.a.b`` when that
  is a module, else to ``pbsim.a``.  Imports under ``if TYPE_CHECKING:`` do not count.
- Importing ``pbsim.a.b`` first runs ``pbsim/a/__init__``: for the cycle check that is an edge to
  ``pbsim.a`` as well, except (1) to the importer's own ancestor packages, which are already
  being imported when its code runs: a package importing its own submodules
  (``pbsim.integrators`` -> ``pbsim.integrators.base``) is not a loop, and (2) to the root
  ``pbsim``, the facade that re-exports everything and always runs first.  An *explicit* import
  of an ancestor (``import pbsim.integrators`` inside ``pbsim.integrators.base``) is an ordinary
  edge, so a submodule that imports its own package back is a cycle.  The layer check uses the
  explicit edges only (importing ``pbsim.jit`` runs ``pbsim/jit/__init__``, which re-exports its
  submodules: that package is layer 0 like they are).
- Names computed at run time (``importlib.import_module(f"...{name}")``, the integrator
  registry's discovery of its plugin modules) are not edges.

The test fails listing every strongly connected component of more than one module and every
self-loop; and every import that goes from a lower layer (:data:`LAYERS`) to a higher one.
"""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
ROOT = REPO / "pbsim"
# the packages of the whole tree (the package, the generated models, the viewer) and the scripts
PACKAGES = {
    "pbsim": ROOT,
    "pbsim_models": REPO / "models" / "pbsim_models",
    "pbsim_viewer": REPO / "viewer" / "pbsim_viewer",
}
TOP = tuple(PACKAGES)

# layer of a module: the longest prefix listed here; lower numbers may not import higher ones
LAYERS = {
    "pbsim.errors": 0,
    "pbsim.jit": 0,  # the @kernel decorator / compile machinery: below everything
    "pbsim.model": 1,
    "pbsim.io": 1,
    "pbsim.dynamics": 1,
    "pbsim.contact": 1,
    "pbsim.control": 1,
    "pbsim.optim": 1,
    "pbsim.integrators": 2,
    "pbsim.backends": 3,  # batched CPU/CUDA drivers of the integrators' kernels
    "pbsim.trajectory": 4,
    "pbsim.rollout": 4,
    "pbsim.rollout_gpu": 4,
    "pbsim.warmup": 4,
    "pbsim.envs": 5,  # gymnasium environments over rollout/backends/integrators
    "pbsim.sweep": 5,  # parameter sweeps of batched rollouts on Ray (above rollout)
    "pbsim.args": 5,  # the model/motion arguments the CLI and the viewer share
    "pbsim": 5,  # the facade package __init__
    "pbsim_models": 2,  # generated models: built with pbsim.model / io only
    "pbsim_viewer": 6,  # the viewer: above the package, never imports the CLI
    "pbsim.cli": 7,  # the entry point: dispatches to every command, the viewer included
    "pbsim.__main__": 7,
    "scripts": 8,  # benchmarks, figures, examples: leaves
}


def module_files() -> dict[str, Path]:
    mods = {}
    for root in PACKAGES.values():
        for p in root.rglob("*.py"):
            rel = p.relative_to(root.parent).with_suffix("")
            parts = list(rel.parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            mods[".".join(parts)] = p
    for p in (REPO / "scripts").rglob("*.py"):  # not a package: each script a module of its own
        mods["scripts." + ".".join(p.relative_to(REPO / "scripts").with_suffix("").parts)] = p
    return mods


def _tracked(name: str) -> bool:
    return any(name == t or name.startswith(t + ".") for t in TOP)


def _is_package(mod: str, mods: dict[str, Path]) -> bool:
    return mods[mod].name == "__init__.py"


def _type_checking_nodes(tree) -> set[int]:
    skip = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for sub in node.body:
                skip.update(id(n) for n in ast.walk(sub))
    return skip


def imports_of(mod: str, mods: dict[str, Path]) -> set[str]:
    """The pbsim modules ``mod`` imports anywhere in its source."""
    tree = ast.parse(mods[mod].read_text(), str(mods[mod]))
    skip = _type_checking_nodes(tree)
    pkg = mod if _is_package(mod, mods) else mod.rpartition(".")[0]
    out = set()

    def resolve(name):  # longest existing module prefix of a dotted name
        while name and name not in mods:
            name = name.rpartition(".")[0]
        return name or None

    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Import):
            for a in node.names:
                if _tracked(a.name):
                    out.add(resolve(a.name))
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = pkg.split(".")
                base = base[: len(base) - (node.level - 1)]
                src = ".".join(base + ([node.module] if node.module else []))
            else:
                src = node.module or ""
            if not _tracked(src):
                continue
            for a in node.names:
                sub = f"{src}.{a.name}"
                out.add(sub if sub in mods else resolve(src))
    out.discard(None)
    return out


def import_graph(implicit: bool = False) -> dict[str, set[str]]:
    """``{module: modules it imports}``; ``implicit``: add the parent packages each import runs."""
    mods = module_files()
    g = {m: imports_of(m, mods) for m in sorted(mods)}
    if implicit:
        for m, deps in g.items():
            own = {m.rsplit(".", k)[0] for k in range(m.count(".") + 1)}
            for d in list(deps):
                parents = {d.rsplit(".", k)[0] for k in range(1, d.count(".") + 1)}
                deps |= parents - own - set(TOP)
    return g


def strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's algorithm (iterative): the SCCs of ``graph``."""
    index, low, on, stack, out = {}, {}, set(), [], []
    counter = [0]
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter[0]
        counter[0] += 1
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(graph.get(w, ())))))
                    break
                if w in on:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    comp = []
                    while True:
                        w = stack.pop()
                        on.discard(w)
                        comp.append(w)
                        if w == v:
                            break
                    out.append(sorted(comp))
    return out


def layer(mod: str) -> int | None:
    """The layer of ``mod``: its longest prefix in :data:`LAYERS` (the root ``pbsim`` only as
    itself, so a new top-level module has none until it is placed)."""
    keys = [k for k in LAYERS if mod == k or (k != "pbsim" and mod.startswith(k + "."))]
    return LAYERS[max(keys, key=len)] if keys else None


def _edge_lines(graph, comp):
    return [f"  {a} -> {b}" for a in comp for b in sorted(graph[a]) if b in comp]


def test_graph_sees_function_level_imports():
    """Sanity of the walker: it resolves relative and function-level imports, across the tree."""
    g = import_graph()
    assert "pbsim.args" in g["pbsim_viewer.app"] and "pbsim_viewer" in g["pbsim.cli"]
    assert "pbsim.cli" not in g["pbsim_viewer.app"]  # the viewer does not import the CLI
    assert any(m.startswith("scripts.") for m in g)
    assert "pbsim.integrators.base" in g["pbsim.integrators"]
    assert "pbsim.integrators.driver" in g["pbsim.backends.cuda"]  # imported inside functions only
    assert "pbsim.jit" in g["pbsim.dynamics.aba"]
    assert all(m in g for deps in g.values() for m in deps)


def test_no_import_cycles():
    g = import_graph(implicit=True)
    bad = [c for c in strongly_connected(g) if len(c) > 1 or c[0] in g[c[0]]]
    msg = "\n".join(f"cycle {' <-> '.join(c)}:\n" + "\n".join(_edge_lines(g, c)) for c in bad)
    assert not bad, "import cycles in the tree (pbsim, pbsim_models, pbsim_viewer, scripts):\n" + msg


def test_every_module_has_a_layer():
    missing = [m for m in import_graph() if layer(m) is None]
    assert not missing, f"place these modules in tests/test_imports.py LAYERS: {missing}"


def test_layers():
    g = import_graph()
    bad = [
        f"{a} (layer {layer(a)}) -> {b} (layer {layer(b)})"
        for a, deps in g.items()
        for b in sorted(deps)
        if layer(b) > layer(a)
    ]
    assert not bad, "lower layers import higher ones:\n" + "\n".join(bad)
