#!/usr/bin/env python3
"""The layering of docs/architecture.md ("Layout"), checked over the tree.

Usage: scripts/check_layering.py [REPO_ROOT]   (default: the folder above scripts/)
       scripts/check_layering.py --self-test  (the checks on a small tree with known faults)

Three checks, each failure printed as one line, exit code 1 when there is any:
1. Includes: a file of src/<area>/ or include/omnidp/<area>/ includes "omnidp/<other>/..."
   only from its own level or a lower one.
2. Link lists: a library (omnidp_library, add_library) defined under src/<area>/ links only
   omnidp libraries of its own level or lower, and every include of another level is backed
   by a link path (direct or transitive) from the including level to that level.
3. Cycles: no two files' units include each other, directly or through others (a unit is
   include/omnidp/<p>.hpp with src/<p>.cpp): inside one level too, every arrow runs one way.

Levels, lowest first. The models folder holds two of them: its top-level files are the
torch-free model API (omnidp::model_api, what the runtime sees); its subfolders hold the
libtorch model libraries, themselves ordered (a lower subfolder never includes a higher one).
"""

import os
import re
import sys
from collections import defaultdict

LEVELS = ["common", "config", "manifest", "collective", "model_api", "results", "export", "runtime", "models",
          "refcheck", "cli", "apps"]
MODEL_SUBLEVELS = ["layers", "weights", "schedulers", "text", "vision", "pipelines", "wan", "hv15",
                   "registry"]
RANK = {name: i for i, name in enumerate(LEVELS)}
SOURCE_SUFFIXES = (".cpp", ".hpp", ".h", ".cu", ".in")
INCLUDE = re.compile(r'^\s*#\s*include\s+"omnidp/([^"]+)"')


def level_of(parts):
    """(level, model sublevel or None) of a path below include/omnidp/ or src/ given as parts."""
    area = parts[0]
    if area == "models":
        if len(parts) <= 2:
            return "model_api", None
        return "models", parts[1]
    return area, None


def scan_includes(root):
    """Yields (file, line number, from (level, sub), to (level, sub), the included path)."""
    for base in ("include/omnidp", "src"):
        top = os.path.join(root, base)
        for dirpath, _, files in os.walk(top):
            for name in sorted(files):
                if not name.endswith(SOURCE_SUFFIXES):
                    continue
                path = os.path.join(dirpath, name)
                rel = os.path.relpath(path, top).split(os.sep)
                if len(rel) < 2:
                    continue
                source = level_of(rel)
                with open(path, encoding="utf-8", errors="replace") as f:
                    for number, line in enumerate(f, 1):
                        m = INCLUDE.match(line)
                        if m:
                            target = level_of(m.group(1).split("/"))
                            yield os.path.relpath(path, root), number, source, target, m.group(1)


def unit_of(path):
    """The unit of a file below include/omnidp/ or src/ ("models/cost" for both cost.hpp and
    cost.cpp), or None for a file outside both."""
    rel = path.replace(os.sep, "/")
    for base in ("include/omnidp/", "src/"):
        if rel.startswith(base):
            return os.path.splitext(rel[len(base):])[0]
    return None


def include_cycles(root):
    """One failure line per set of units that include each other (a strongly connected
    component of the unit include graph with two or more units), naming one cycle in it."""
    edges, where = defaultdict(set), {}
    for path, number, _, _, included in scan_includes(root):
        source = unit_of(path)
        target = os.path.splitext(included)[0]
        if source and target != source:
            edges[source].add(target)
            where.setdefault((source, target), f"{path}:{number}")
    index, low, stack, on_stack, components = {}, {}, [], set(), []

    def connect(v):  # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges[v]):
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                components.append(sorted(component))

    for v in sorted(list(edges)):
        if v not in index:
            connect(v)
    failures = []
    for component in sorted(components):
        members = set(component)
        cycle, seen = [component[0]], {component[0]}
        while True:  # walk inside the component until a unit repeats
            nxt = sorted(w for w in edges[cycle[-1]] if w in members)[0]
            if nxt in seen:
                cycle = cycle[cycle.index(nxt):] + [nxt]
                break
            cycle.append(nxt)
            seen.add(nxt)
        steps = "; ".join(where[(a, b)] for a, b in zip(cycle, cycle[1:]))
        failures.append(f"include cycle {' -> '.join(cycle)} ({steps})")
    return failures


def strip_comments(text):
    return "\n".join(line.split("#", 1)[0] for line in text.splitlines())


def balanced_calls(text, command):
    """The argument texts of every `command(...)` in CMake text (nested parentheses allowed)."""
    for m in re.finditer(r"\b" + command + r"\s*\(", text):
        depth, i = 1, m.end()
        while i < len(text) and depth:
            depth += {"(": 1, ")": -1}.get(text[i], 0)
            i += 1
        yield text[m.end():i - 1]


def scan_libraries(root):
    """{library name (without omnidp_): (level, sub, deps, CMakeLists path)}."""
    libs = {}
    links = defaultdict(set)
    top = os.path.join(root, "src")
    for dirpath, _, files in os.walk(top):
        if "CMakeLists.txt" not in files:
            continue
        cmake = os.path.join(dirpath, "CMakeLists.txt")
        rel = os.path.relpath(dirpath, top).split(os.sep)
        if rel == ["."]:
            where = ("manifest", None)  # omnidp::core: common + config + manifest
        else:
            where = level_of(rel + ["x"])
        with open(cmake, encoding="utf-8") as f:
            text = strip_comments(f.read())
        for args in balanced_calls(text, "omnidp_library"):
            tokens = args.split()
            name = tokens[0]
            libs[name] = (where[0], where[1], os.path.relpath(cmake, root))
            links[name] |= dependencies(tokens[1:])
        for args in balanced_calls(text, "add_library"):
            name = args.split()[0]
            if name.startswith("omnidp_") and "ALIAS" not in args.split():
                libs.setdefault(name[len("omnidp_"):], (where[0], where[1], os.path.relpath(cmake, root)))
        for args in balanced_calls(text, "target_link_libraries"):
            tokens = args.split()
            target = tokens[0]
            if target.startswith("omnidp_"):
                links[target[len("omnidp_"):]] |= dependencies(tokens[1:])
            elif target.startswith("omni-dp-"):
                libs.setdefault(target, ("apps", None, os.path.relpath(cmake, root)))
                links[target] |= dependencies(tokens[1:])
    return libs, links


def dependencies(tokens):
    out = set()
    for token in tokens:
        for m in re.finditer(r"omnidp(?:::|_)(cli_\$\{app\}|[A-Za-z0-9_]+)", token):
            out.add(m.group(1))
    return out


def resolve(name, libs):
    """Library names a dependency token stands for (cli_${app}: every cli_ library)."""
    if name.endswith("${app}"):
        prefix = name[: -len("${app}")]
        return [n for n in libs if n.startswith(prefix)]
    return [name] if name in libs else []


def rank(level, sub):
    return (RANK[level], MODEL_SUBLEVELS.index(sub) if sub in MODEL_SUBLEVELS else -1)


def check(root):
    """The failure lines for the tree at root (empty: it is layered)."""
    failures = []
    include_edges = {}
    for path, number, source, target, _ in scan_includes(root):
        for level in (source[0], target[0]):
            if level not in RANK:
                failures.append(f"{path}:{number}: unknown area '{level}' (docs/architecture.md lists the areas)")
        if source[0] not in RANK or target[0] not in RANK:
            continue
        if source[0] != target[0]:
            include_edges.setdefault((source[0], target[0]), f"{path}:{number}")
        lower_level = RANK[target[0]] < RANK[source[0]]
        same_level = target[0] == source[0]
        if same_level and source[0] == "models":
            if source[1] in MODEL_SUBLEVELS and target[1] in MODEL_SUBLEVELS and \
                    rank(*target) > rank(*source):
                failures.append(f"{path}:{number}: models/{source[1]} includes the higher models/{target[1]}")
        elif not same_level and not lower_level:
            failures.append(f"{path}:{number}: {source[0]} includes the higher area {target[0]}")

    libs, links = scan_libraries(root)
    level_links = defaultdict(set)
    for name, deps in sorted(links.items()):
        if name not in libs:
            continue
        level, sub, cmake = libs[name]
        for dep_token in sorted(deps):
            for dep in resolve(dep_token, libs):
                dep_level, dep_sub, _ = libs[dep]
                if dep_level != level:
                    level_links[level].add(dep_level)
                if RANK[dep_level] > RANK[level] or (dep_level == level and rank(dep_level, dep_sub) > rank(level, sub)):
                    failures.append(f"{cmake}: {name} ({level}{'/' + sub if sub else ''}) links the higher "
                                    f"{dep} ({dep_level}{'/' + dep_sub if dep_sub else ''})")

    def reaches(a, b):
        seen, todo = set(), [a]
        while todo:
            cur = todo.pop()
            for nxt in level_links[cur]:
                if nxt == b:
                    return True
                if nxt not in seen:
                    seen.add(nxt)
                    todo.append(nxt)
        return False

    for (a, b), where in sorted(include_edges.items()):
        if RANK[b] < RANK[a] and not reaches(a, b):
            failures.append(f"{where}: {a} includes {b}, but no {a} library links one of {b}")

    failures += include_cycles(root)
    return failures, len(libs), len(include_edges)


def self_test():
    """Every kind of fault in a small tree is reported, exactly once, and a clean tree passes."""
    import tempfile

    files = {
        "src/CMakeLists.txt": "",
        "src/common/CMakeLists.txt": "omnidp_library(common SOURCES a.cpp PUBLIC_DEPS omnidp::cli)\n",
        "src/common/a.cpp": '#include "omnidp/cli/b.hpp"\n',
        "src/cli/CMakeLists.txt": "omnidp_library(cli SOURCES b.cpp PUBLIC_DEPS omnidp::common)\n",
        "src/cli/b.cpp": '#include "omnidp/common/a.hpp"\n#include "omnidp/results/r.hpp"\n',
        "src/models/layers/CMakeLists.txt": "omnidp_library(layers SOURCES l.cpp)\n",
        "src/models/layers/l.cpp": '#include "omnidp/models/wan/w.hpp"\n#include "omnidp/models/pipeline.hpp"\n',
        "src/models/wan/CMakeLists.txt": "omnidp_library(wan SOURCES w.cpp PRIVATE_DEPS omnidp::layers)\n",
        "src/models/wan/w.cpp": '#include "omnidp/models/wan/v.hpp"\n',
        "include/omnidp/models/wan/v.hpp": '#include "omnidp/models/wan/u.hpp"\n',
        "src/models/wan/u.cpp": '#include "omnidp/models/wan/w.hpp"\n',
    }
    expected = [
        "src/common/a.cpp:1: common includes the higher area cli",
        "src/models/layers/l.cpp:1: models/layers includes the higher models/wan",
        "src/common/CMakeLists.txt: common (common) links the higher cli (cli)",
        "src/cli/b.cpp:2: cli includes results, but no cli library links one of results",
        "src/models/layers/l.cpp:2: models includes model_api, but no models library links one of model_api",
        "include cycle cli/b -> common/a -> cli/b (src/cli/b.cpp:1; src/common/a.cpp:1)",
        "include cycle models/wan/u -> models/wan/w -> models/wan/v -> models/wan/u "
        "(src/models/wan/u.cpp:1; src/models/wan/w.cpp:1; include/omnidp/models/wan/v.hpp:1)",
    ]
    with tempfile.TemporaryDirectory() as root:
        for rel, text in files.items():
            os.makedirs(os.path.dirname(os.path.join(root, rel)), exist_ok=True)
            with open(os.path.join(root, rel), "w", encoding="utf-8") as f:
                f.write(text)
        failures, _, _ = check(root)
        if sorted(failures) != sorted(expected):
            print("self-test: expected\n  " + "\n  ".join(sorted(expected)) + "\ngot\n  " + "\n  ".join(sorted(failures)))
            return 1
        with open(os.path.join(root, "src/common/a.cpp"), "w", encoding="utf-8") as f:
            f.write('#include "omnidp/common/x.hpp"\n')
        with open(os.path.join(root, "src/common/CMakeLists.txt"), "w", encoding="utf-8") as f:
            f.write("omnidp_library(common SOURCES a.cpp)\n")
        if check(root)[0] == []:
            print("self-test: a tree with faults left passed")
            return 1
    print(f"self-test ok: {len(expected)} faults found")
    return 0


def main():
    if sys.argv[1:] == ["--self-test"]:
        return self_test()
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), ".."))
    failures, libraries, edges = check(root)
    for line in failures:
        print(line)
    if failures:
        print(f"{len(failures)} layering violation(s); the order is " + " < ".join(LEVELS))
        return 1
    print(f"layering ok: {libraries} libraries, {edges} cross-area include edges, order " + " < ".join(LEVELS))
    return 0


if __name__ == "__main__":
    sys.exit(main())
