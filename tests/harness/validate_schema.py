#!/usr/bin/env python3
"""Checks a JSON file against a JSON Schema, in the draft the schema's $schema names.

usage: validate_schema.py FILE.json SCHEMA.json

Prints one line per violation ("path: message") and exits 1; prints nothing and exits 0
when the file matches. The tests run it with Debian's python3-jsonschema
(tests/harness/schema_check.h).
"""
import json
import sys

import jsonschema


def main(argv):
    if len(argv) != 3:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    with open(argv[1]) as f:
        instance = json.load(f)
    with open(argv[2]) as f:
        schema = json.load(f)
    cls = jsonschema.validators.validator_for(schema)
    # A schema with a misspelt keyword is itself invalid and would otherwise accept too much.
    cls.check_schema(schema)
    errors = sorted(cls(schema).iter_errors(instance), key=lambda e: [str(p) for p in e.absolute_path])
    for e in errors:
        where = "/".join(str(p) for p in e.absolute_path) or "(root)"
        # A message can quote a whole row; the path already says where.
        print(f"{where}: {e.message[:300]}")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
