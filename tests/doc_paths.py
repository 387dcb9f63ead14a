#!/usr/bin/env python3
"""Every file path a reference document names exists in the tree.

Usage: doc_paths.py <repo root> <doc>...

A path is a `backticked` token that names a file (it ends in a source, script or document
extension) or a folder (it ends in "/"). Tokens with a placeholder (<family>, {a,b}, *, ...) are
patterns, not paths, and are skipped. A path with a "/" must exist relative to the repository
root, include/lutkit/, include/ or the document's own folder; a bare file name must be the name of
some file in the tree. Exit status 1 with one line per missing path.
"""
import os
import re
import sys

# folders a path may start with (others ending in "/" are benchmark names and the like)
TOP = {"include", "tests", "docs", "scripts", "benchmarks", "examples", "cmake", "core", "quant", "gemv", "gemm",
       "decode", "attention", "sampling", "packing", "targets", "io", "plan", "lutkit", ".ci"}
EXT = (".hpp", ".h", ".inl", ".cpp", ".cmake", ".md", ".py", ".sh", ".txt", ".json")


def tree_names(root):
    names = set()
    for d, dirs, files in os.walk(root):
        dirs[:] = [x for x in dirs if not x.startswith(".") and not x.startswith("build")]
        names.update(files)
    return names


def main():
    root = os.path.abspath(sys.argv[1])
    names = tree_names(root)
    missing, checked = [], 0
    for doc in sys.argv[2:]:
        doc_dir = os.path.dirname(os.path.abspath(doc))
        text = open(doc, encoding="utf-8").read()
        # fenced code blocks hold commands and diagrams, not references
        text = re.sub(r"```.*?```", "", text, flags=re.S)
        for lineno, line in enumerate(text.splitlines(), 1):
            for tok in re.findall(r"`([^`\s]+)`", line):
                tok = tok.strip().rstrip(".,;:")
                tok = re.sub(r"(:\d+)+$", "", tok)  # file:line
                if any(c in tok for c in "<>{}*$") or "..." in tok or tok.startswith(("-", "http")):
                    continue
                if tok.startswith("build/"):
                    continue  # build outputs
                if not (tok.endswith(EXT) or (tok.endswith("/") and tok.split("/")[0] in TOP)):
                    continue
                if "(" in tok or "::" in tok:
                    continue
                checked += 1
                if "/" in tok.rstrip("/"):
                    bases = [root, os.path.join(root, "include", "lutkit"), os.path.join(root, "include"), doc_dir]
                    if not any(os.path.exists(os.path.join(b, tok)) for b in bases):
                        missing.append(f"{os.path.relpath(doc, root)}:{lineno}: `{tok}` does not exist")
                elif tok.endswith("/"):
                    if not any(os.path.isdir(os.path.join(b, tok)) for b in
                               [root, os.path.join(root, "include", "lutkit"), doc_dir]):
                        missing.append(f"{os.path.relpath(doc, root)}:{lineno}: folder `{tok}` does not exist")
                elif tok not in names:
                    missing.append(f"{os.path.relpath(doc, root)}:{lineno}: no file named `{tok}` in the tree")
    for m in missing:
        print(m)
    print(f"doc paths: {checked} paths checked in {len(sys.argv) - 2} documents, {len(missing)} missing")
    return 1 if missing or checked == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
