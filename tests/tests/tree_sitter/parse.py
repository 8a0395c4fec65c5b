"""Parses files with the loam tree-sitter grammar, for tests/tests/tree_sitter.rs.

Usage: parse.py PARSER.so QUERY.scm... -- FILE...
Prints one JSON object: "queries", the error of each query that does not compile against the
grammar (empty when all do), and "files", for each file whether its tree has no ERROR or
MISSING node.
"""

import ctypes
import json
import sys

import tree_sitter


def language(path):
    library = ctypes.cdll.LoadLibrary(path)
    library.tree_sitter_loam.restype = ctypes.c_void_p
    pointer = library.tree_sitter_loam()
    # py-tree-sitter takes the language as a capsule named "tree_sitter.Language".
    new_capsule = ctypes.pythonapi.PyCapsule_New
    new_capsule.restype = ctypes.py_object
    new_capsule.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
    return tree_sitter.Language(new_capsule(pointer, b"tree_sitter.Language", None))


def main():
    args = sys.argv[1:]
    split = args.index("--")
    lang = language(args[0])
    queries = {}
    for path in args[1:split]:
        with open(path, encoding="utf-8") as f:
            try:
                tree_sitter.Query(lang, f.read())
            except Exception as error:  # any failure to compile is reported, whatever its type
                queries[path] = str(error)
    parser = tree_sitter.Parser(lang)
    files = {}
    for path in args[split + 1:]:
        with open(path, "rb") as f:
            tree = parser.parse(f.read())
        files[path] = not tree.root_node.has_error
    print(json.dumps({"queries": queries, "files": files}))


main()
