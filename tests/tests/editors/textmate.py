"""Checks the TextMate grammar's regular expressions, for tests/tests/editors.rs.

Usage: textmate.py GRAMMAR.json
Prints one JSON object: "errors", the patterns that do not compile, and "samples", for each
sample text the scope names the grammar's rule for it captures, in order.
"""

import json
import re
import sys


def patterns(node):
    """Every `match`, `begin` and `end` expression below `node`, with where it is."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key in ("match", "begin", "end") and isinstance(value, str):
                yield key, value
            else:
                yield from patterns(value)
    elif isinstance(node, list):
        for item in node:
            yield from patterns(item)


def main():
    with open(sys.argv[1], encoding="utf-8") as f:
        grammar = json.load(f)
    errors = []
    for key, expression in patterns(grammar):
        try:
            re.compile(expression)
        except re.error as error:
            errors.append(f"{key} {expression!r}: {error}")
    repository = grammar["repository"]
    samples = {}
    for rule, text in [
        ("quantity", "48TB"),
        ("quantity", "3.35TB/s"),
        ("quantity", "1_024"),
        ("money", "20M CNY"),
        ("block", 'job "llama" {'),
        ("block", "model {"),
        ("attribute", "global_batch = 1024"),
        ("comment", "# a comment"),
    ]:
        found = re.match(repository[rule]["match"], text)
        captured = []
        if found:
            captured.append(found.group(0))
            for number, scope in sorted(repository[rule].get("captures", {}).items()):
                group = found.group(int(number))
                if group is not None:
                    captured.append(f"{scope['name']}={group}")
        samples[f"{rule}: {text}"] = captured
    print(json.dumps({"errors": errors, "samples": samples}))


main()
