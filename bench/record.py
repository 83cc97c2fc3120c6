#!/usr/bin/python3
"""The shell leaves' small JSON records (a boot's boot.json, a fetched
package's package.json, the accelerator probe's cache), written and read by
a serializer, so that no value (a console cause, a QEMU path, a tool's
version line) can break a file or be misread. A run's own records are the
orchestrator's (bench/plan/model.py).

  record.py write ARG...      one JSON object on stdout, its keys in the
                              order given: KEY=STRING, KEY:=JSON (a number,
                              list or object; a number bc prints, as .5,
                              too), KEY[]=STRING and KEY[]:=JSON append to
                              the list KEY
  record.py get FILE KEY      the value of KEY (a string as it is, anything
                              else as JSON) on stdout; exit 3, naming the
                              key on stderr, if FILE has no KEY; KEY/SUB
                              is SUB of the object KEY
"""
import json
import sys


def parse_json(value):
    try:
        return json.loads(value)
    except ValueError:
        return float(value)


def write(args):
    doc = {}
    for arg in args:
        if "=" not in arg:
            raise SystemExit("record.py write: %r is not KEY=VALUE" % arg)
        key, value = arg.split("=", 1)
        if key.endswith(":"):
            key, value = key[:-1], parse_json(value)
        if key.endswith("[]"):
            doc.setdefault(key[:-2], []).append(value)
        else:
            doc[key] = value
    sys.stdout.write(json.dumps(doc, indent=2) + "\n")


def get(path, key):
    with open(path) as f:
        value = json.load(f)
    for part in key.split("/"):
        if not isinstance(value, dict) or part not in value:
            sys.stderr.write("record.py: %s has no %r\n" % (path, key))
            return 3
        value = value[part]
    sys.stdout.write(value if isinstance(value, str) else json.dumps(value))
    sys.stdout.write("\n")
    return 0


def main(argv):
    if len(argv) >= 1 and argv[0] == "write":
        write(argv[1:])
        return 0
    if len(argv) == 3 and argv[0] == "get":
        return get(argv[1], argv[2])
    sys.stderr.write(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
