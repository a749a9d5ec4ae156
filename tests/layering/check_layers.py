#!/usr/bin/env python3
"""Fails when a source file includes one from a layer above its own.

The layers, bottom to top, are the folders below (docs/design.md draws them). A file may include
files of its own layer and of layers below it. Tests (*_test.cc, *_fuzz.cc, *_perftest.cc and
testing/ folders) sit above everything they test, so they are not checked; neither are tests/.

Usage: check_layers.py [SOURCE_ROOT]    exit 0 when every include points down, 1 otherwise.
"""
import os
import re
import sys

# Bottom to top. A folder's layer is that of the longest prefix listed here.
LAYERS = [
    ("base", ["base"]),
    ("history", ["cli/history"]),
    ("emulator", ["emulator"]),
    ("provider", ["provider"]),
    ("reports", ["reports"]),
    ("image", ["cli/image"]),
    ("hosts", ["cli/hosts"]),
    ("benchmarks", ["cli/benchmarks"]),
    ("setup", ["cli/setup"]),
    ("emulators", ["cli/emulators"]),
    ("scenario", ["cli/scenario"]),
    ("plan", ["cli/plan"]),
    ("run", ["cli/run"]),
    ("commands", ["cli/commands", "cli/builtin_platform", "cli/main.cc"]),
]
# Where a quoted include is looked up, after the including file's own folder (the libraries'
# include directories).
INCLUDE_ROOTS = ["", "cli", "emulator", "reports", "provider"]
SOURCE_SUFFIXES = (".h", ".cc", ".c")
TEST_FILE = re.compile(r"_(test|fuzz|perftest)\.cc$|(^|/)testing/")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def layer_of(path):
    """(rank, name) of the layer a file is in; a prefix names a folder, or a file without its
    extension (cli/builtin_platform)."""
    best = None
    for rank, (name, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            inside = (path == prefix or path.startswith(prefix + "/") or
                      os.path.splitext(path)[0] == prefix)
            if inside and (best is None or len(prefix) > best[2]):
                best = (rank, name, len(prefix))
    return best and best[:2]


def resolve(root, including, included):
    candidates = [os.path.join(os.path.dirname(including), included)]
    candidates += [os.path.join(r, included) for r in INCLUDE_ROOTS]
    for candidate in candidates:
        candidate = os.path.normpath(candidate)
        if os.path.isfile(os.path.join(root, candidate)):
            return candidate
    return None


def sources(root):
    for top in {prefix.split("/")[0] for _, prefixes in LAYERS for prefix in prefixes}:
        for folder, _, names in os.walk(os.path.join(root, top)):
            for name in names:
                path = os.path.relpath(os.path.join(folder, name), root)
                if name.endswith(SOURCE_SUFFIXES) and not TEST_FILE.search(path):
                    yield path


def violations(root):
    found = []
    paths = sorted(sources(root))
    if not paths:
        return [f"{root}: no sources of any layer here (is it the source root?)"]
    for path in paths:
        own = layer_of(path)
        if own is None:
            found.append(f"{path}: in no layer (add its folder to LAYERS)")
            continue
        with open(os.path.join(root, path), encoding="utf-8", errors="replace") as source:
            for number, line in enumerate(source, 1):
                match = INCLUDE.match(line)
                if not match:
                    continue
                target = resolve(root, path, match.group(1))
                if target is None:
                    continue  # a system or generated header
                theirs = layer_of(target)
                if theirs is not None and theirs[0] > own[0]:
                    found.append(f"{path}:{number}: layer '{own[1]}' includes {target} of "
                                 f"layer '{theirs[1]}', which is above it")
    return found


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "..")
    found = violations(os.path.abspath(root))
    for line in found:
        print(line)
    if found:
        print(f"{len(found)} layering problem(s); docs/design.md says which way includes go")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
