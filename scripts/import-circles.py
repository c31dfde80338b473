#!/usr/bin/env python3
"""Import circles between the files of each crate: every `crate::`, `super::` and `self::` path
(in `use` lines and in code, braces expanded) is resolved to the module file it names, and each
strongly connected group of two or more files is printed. A name imported through a `pub use`
re-export counts as a use of the file that defines it; the re-export itself is not a use. Test
modules (`#[cfg(test)] mod tests`) are left out: they import their own file's parent by design.

Usage: python3 scripts/import-circles.py [crate-dir ...]   (default: every workspace crate)
Exit status 0; the last line counts the circles.
"""
import os
import re
import sys

DEFAULT = ["io", "engine", "plan", "plan-wasm", "codec", "constrain", "runtime", "server", "store",
           "remote", "synth", "app", "cli", "src-tauri", "tests"]


def module_files(src):
    """module path (tuple) -> file, for every .rs under src."""
    mods = {}
    for root, _, files in os.walk(src):
        for f in files:
            if not f.endswith(".rs"):
                continue
            rel = os.path.relpath(os.path.join(root, f), src)
            parts = rel[:-3].split(os.sep)
            if parts[-1] in ("mod", "lib", "main"):
                parts = parts[:-1]
            mods[tuple(parts)] = os.path.join(root, f)
    return mods


def path_attrs(text, file, src):
    """`#[path = "..."] mod name;` declarations: module name -> file they point to."""
    out = {}
    for m in re.finditer(r'#\[path\s*=\s*"([^"]+)"\]\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+(\w+)', text):
        out[m.group(2)] = os.path.normpath(os.path.join(os.path.dirname(file), m.group(1)))
    return out


def strip_tests(text):
    m = re.search(r"#\[cfg\(test\)\]\s*(?:pub\s+)?mod\s+\w+\s*\{", text)
    return text[: m.start()] if m else text


def strip_comments(text):
    """Without comments and `pub(in path)` visibilities: neither is a use."""
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    text = re.sub(r"//[^\n]*", "", text)
    return re.sub(r"pub\(in [^)]*\)", "pub", text)


def expand(text, i):
    """Paths starting at text[i] (just after `crate`/`super`/`self`), braces expanded."""
    paths, cur = [], []
    while i < len(text):
        if text.startswith("::", i):
            i += 2
            if i < len(text) and text[i] == "{":
                depth, j = 1, i + 1
                while j < len(text) and depth:
                    depth += {"{": 1, "}": -1}.get(text[j], 0)
                    j += 1
                inner = text[i + 1: j - 1]
                for part in split_top(inner):
                    part = part.strip()
                    for sub in expand("::" + part, 0) if part else []:
                        paths.append(cur + sub)
                return paths
            m = re.match(r"\w+", text[i:])
            if not m:
                break
            cur.append(m.group(0))
            i += len(m.group(0))
        else:
            break
    paths.append(cur)
    return paths


def split_top(s):
    parts, depth, start = [], 0, 0
    for k, c in enumerate(s):
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
        elif c == "," and depth == 0:
            parts.append(s[start:k])
            start = k + 1
    parts.append(s[start:])
    return parts


def resolve(segments, mods, reexports=None, depth=0):
    """The file that defines what `segments` names: the longest module prefix, followed
    through that module's `pub use` re-exports when the next segment is one."""
    for n in range(len(segments), 0, -1):
        if tuple(segments[:n]) in mods:
            file = mods[tuple(segments[:n])]
            if reexports and depth < 8 and n < len(segments) and segments[n] in reexports.get(file, {}):
                deeper = resolve(reexports[file][segments[n]], mods, reexports, depth + 1)
                return deeper or file
            return file
    return None


def absolute(kind, mod, is_dir_mod, segs):
    """`crate::`/`super::`/`self::` + segs as a path from the crate root."""
    base = {"crate": (), "self": mod, "super": mod[:-1]}[kind]
    b, segs = list(base), list(segs)
    while segs and segs[0] == "super":
        b, segs = b[:-1], segs[1:]
    return b + segs


def reexports_of(text, mod, is_dir_mod, mods):
    """Names a file brings in with `use` (public or not: a child module sees both): name ->
    absolute path of what it names, so an import through the file resolves past it."""
    out = {}
    for m in re.finditer(r"\buse\s+(\w+)(?=::)", text):
        first = m.group(1)
        for segs in expand(text, m.end()):
            if not segs:
                continue
            if first in ("crate", "super", "self"):
                path = absolute(first, mod, is_dir_mod, segs)
            elif tuple(mod) + (first,) in mods:
                path = list(mod) + [first] + list(segs)
            else:
                continue
            out[segs[-1]] = path
    return out


def crate_graph(src):
    mods = module_files(src)
    by_file = {f: m for m, f in mods.items()}
    # `#[path]` modules are reached under the declaring module's path.
    for f in list(by_file):
        text = open(f, encoding="utf-8").read()
        for name, target in path_attrs(text, f, src).items():
            if os.path.isfile(target):
                mods[by_file[f] + (name,)] = target
    by_file = {f: m for m, f in mods.items()}
    texts = {f: strip_comments(strip_tests(open(f, encoding="utf-8").read())) for f in by_file}
    dir_mod = {f: os.path.basename(f) in ("mod.rs", "lib.rs", "main.rs") for f in by_file}
    reexports = {f: reexports_of(texts[f], by_file[f], dir_mod[f], mods) for f in by_file}
    edges = {f: set() for f in by_file}
    for f, mod in by_file.items():
        # A file's own `pub use` lines are its API, not uses: they count only when something
        # imports a name through them (resolved to the file that defines it).
        text = re.sub(r"\bpub(?:\([^)]*\))?\s+use\s[^;]*;", "", texts[f])
        for m in re.finditer(r"\b(crate|super|self)(?=::)", text):
            for segs in expand(text, m.end()):
                target = resolve(absolute(m.group(1), mod, dir_mod[f], segs), mods, reexports)
                if target and target != f:
                    edges[f].add(target)
        # `child::X` (in a `use` or in code) names a child module relative to this one.
        for m in re.finditer(r"(?<![:\w])(\w+)(?=::)", text):
            if m.group(1) in ("crate", "super", "self") or tuple(mod) + (m.group(1),) not in mods:
                continue
            for segs in expand(text, m.end()):
                target = resolve(list(mod) + [m.group(1)] + list(segs), mods, reexports)
                if target and target != f:
                    edges[f].add(target)
    return edges


def sccs(edges):
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges[v]:
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
            out.append(comp)

    sys.setrecursionlimit(10000)
    for v in edges:
        if v not in index:
            visit(v)
    return [c for c in out if len(c) > 1]


def main():
    crates = sys.argv[1:] or DEFAULT
    total = 0
    for c in crates:
        src = os.path.join(c, "src")
        if not os.path.isdir(src):
            continue
        for comp in sorted(sccs(crate_graph(src)), key=len, reverse=True):
            total += 1
            print(f"{c}: {len(comp)} files: " + ", ".join(sorted(os.path.relpath(f, src) for f in comp)))
    print(f"{total} import circles")


if __name__ == "__main__":
    main()
