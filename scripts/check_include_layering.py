#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Checks every `#include "..."` of the sources against the layering of docs/architecture.md.

The "Folders" table of docs/architecture.md says, in its "knows" column, which folders each folder
builds on; a folder may include its own headers and those of every folder it knows, directly or
through the folders those know. An include that reaches any other folder (one beside it, or one
above it) is reported with the file, the line and what the folder may include, and the exit code
is 1. Includes resolve as the build resolves them: the including file's folder first, then the
repository root, include/, tests/ and examples/ (the include paths the CMake targets set); an
include that resolves to no file of the repository (a system or third-party header) is not the
layering's business.

  check_include_layering.py [--root DIR]     DIR: the repository (default: this script's parent)
"""
import argparse
import pathlib
import re
import sys

SOURCE_SUFFIXES = {".c", ".cc", ".cpp", ".cu", ".cuh", ".h", ".hpp"}
# Where the build looks for "..." includes after the including file's own folder.
INCLUDE_ROOTS = ["", "include", "tests", "examples"]
ARCHITECTURE = "docs/architecture.md"

INCLUDE_LINE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
FOLDER_CELL = re.compile(r"`([A-Za-z0-9_.-]+)/[^`]*`")


class LayeringError(Exception):
    pass


def top_folder(path: str) -> str:
    return path.strip("`").split("/", 1)[0]


def read_layering(root: pathlib.Path) -> dict:
    """{folder: set of folders it knows directly}, from the Folders table's first and knows columns."""
    text = (root / ARCHITECTURE).read_text(encoding="utf-8")
    knows = {}
    column = None
    for line in text.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")] if line.startswith("|") else None
        if cells is None:
            column = None
            continue
        if column is None:
            if cells and cells[0] == "folder" and "knows" in cells:
                column = cells.index("knows")
            continue
        if set(cells[0]) <= set("-: "):
            continue  # the header's rule
        folder_match = FOLDER_CELL.search(cells[0])
        if folder_match is None:
            raise LayeringError(f"{ARCHITECTURE}: a row of the Folders table names no folder: {line}")
        cell = cells[column] if column < len(cells) else ""
        knows[folder_match.group(1)] = {match.group(1) for match in FOLDER_CELL.finditer(cell)}
    if not knows:
        raise LayeringError(f"{ARCHITECTURE}: no table with the columns 'folder' ... 'knows'")
    for folder, known in knows.items():
        for other in known:
            if other not in knows:
                raise LayeringError(f"{ARCHITECTURE}: {folder}/ knows {other}/, which has no row")
    return knows


def closure(knows: dict) -> dict:
    """{folder: every folder it may include}: itself and all it knows, directly or not."""
    allowed = {}
    for folder in knows:
        seen, stack = {folder}, [folder]
        while stack:
            for other in knows[stack.pop()]:
                if other not in seen:
                    seen.add(other)
                    stack.append(other)
        allowed[folder] = seen
    # A cycle makes two folders each other's dependency: the layering says which is lower.
    for folder, reach in allowed.items():
        for other in reach - {folder}:
            if folder in allowed[other]:
                raise LayeringError(f"{ARCHITECTURE}: {folder}/ and {other}/ know each other")
    return allowed


def resolve(root: pathlib.Path, source: pathlib.Path, name: str):
    for base in [source.parent] + [root / folder for folder in INCLUDE_ROOTS]:
        candidate = (base / name).resolve()
        if candidate.is_file() and root in candidate.parents:
            return candidate
    return None


def unplaced_folders(root: pathlib.Path, allowed: dict):
    """Top-level folders holding sources that the table has no row for: nothing could check them."""
    for folder in sorted(path for path in root.iterdir() if path.is_dir()):
        if folder.name in allowed or folder.name.startswith((".", "build")):
            continue  # hidden folders, and build outputs and tools (build/, build-tools/)
        if (folder / "CMakeCache.txt").exists():
            continue  # a build folder of another name
        sources = [path for path in folder.rglob("*") if path.suffix in SOURCE_SUFFIXES]
        if sources:
            yield (f"{sources[0].relative_to(root)}: {folder.name}/ holds sources but has no row "
                   f"in the Folders table of {ARCHITECTURE}: add one, with what it knows")


def violations(root: pathlib.Path, allowed: dict):
    yield from unplaced_folders(root, allowed)
    for folder in sorted(allowed):
        for source in sorted((root / folder).rglob("*")):
            if source.suffix not in SOURCE_SUFFIXES or not source.is_file():
                continue
            lines = source.read_text(encoding="utf-8", errors="replace").splitlines()
            for number, line in enumerate(lines, start=1):
                match = INCLUDE_LINE.match(line)
                if match is None:
                    continue
                target = resolve(root, source, match.group(1))
                if target is None:
                    continue
                target_folder = target.relative_to(root).parts[0]
                if target_folder not in allowed[folder]:
                    may = ", ".join(f"{other}/" for other in sorted(allowed[folder]))
                    yield (f"{source.relative_to(root)}:{number}: includes \"{match.group(1)}\" "
                           f"({target_folder}/): {folder}/ may include only {may} ({ARCHITECTURE})")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=pathlib.Path,
                        default=pathlib.Path(__file__).resolve().parent.parent)
    root = parser.parse_args().root.resolve()
    try:
        allowed = closure(read_layering(root))
    except (LayeringError, OSError) as error:
        print(f"check_include_layering: {error}", file=sys.stderr)
        return 2
    found = list(violations(root, allowed))
    for line in found:
        print(line)
    checked = ", ".join(f"{folder}/" for folder in sorted(allowed))
    if found:
        print(f"check_include_layering: {len(found)} include(s) against the layering")
        return 1
    print(f"check_include_layering: every include follows the layering ({checked})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
