#!/usr/bin/env python3
"""tests/tools/check_safetensors_torch.py: shows that ddpc checkpoints load in PyTorch and back.

For every .safetensors file given (or found in a given checkpoint directory) it loads the tensors with
safetensors.torch.load_file, prints them as NAME=DTYPE[shape] lines with the file's metadata, checks them
against the expected list (--expect, --expect-file: the same NAME=DTYPE[d0,d1] lines, e.g. what
`test_checkpoint --sample DIR` prints), saves them back with safetensors.torch.save_file (same metadata),
reloads the copy and compares every tensor bit for bit, then prints OK. With --save-back DIR the copies are
kept, so ddpc can read the PyTorch-written files in turn (`test_checkpoint --verify DIR`).

    build/tests/test_checkpoint --sample /tmp/ck > /tmp/ck.expect
    python3 tests/tools/check_safetensors_torch.py /tmp/ck --expect-file /tmp/ck.expect --exact --save-back /tmp/ck2
    build/tests/test_checkpoint --verify /tmp/ck2
"""
import argparse
import os
import re
import sys
import tempfile

import torch
from safetensors import safe_open
from safetensors.torch import load_file, save_file

NAMES = {
    torch.float32: "F32", torch.bfloat16: "BF16", torch.float16: "F16", torch.float64: "F64",
    torch.int32: "I32", torch.int64: "I64", torch.int16: "I16", torch.int8: "I8", torch.uint8: "U8",
    torch.bool: "BOOL",
}
for _name, _st in (("uint16", "U16"), ("uint32", "U32"), ("uint64", "U64")):
    if hasattr(torch, _name):
        NAMES[getattr(torch, _name)] = _st
SPEC = re.compile(r"^\s*(\S+)=([A-Z0-9_]+)\[([0-9, ]*)\]\s*$")


def describe(t):
    return "%s[%s]" % (NAMES.get(t.dtype, str(t.dtype)), ",".join(str(d) for d in t.shape))


def parse_specs(lines, where):
    """NAME=DTYPE[d0,d1] lines; other lines (headings, blank, '#') are skipped."""
    out = {}
    for line in lines:
        m = SPEC.match(line)
        if not m:
            continue
        dims = [d for d in m.group(3).replace(" ", "").split(",") if d]
        out[m.group(1)] = "%s[%s]" % (m.group(2), ",".join(str(int(d)) for d in dims))
    if not out and where:
        sys.exit("%s: no NAME=DTYPE[shape] lines" % where)
    return out


def files_of(paths):
    files = []
    for p in paths:
        if os.path.isdir(p):
            found = sorted(f for f in os.listdir(p) if f.endswith(".safetensors") and not f.startswith("."))
            if not found:
                sys.exit("%s: no .safetensors files" % p)
            files += [os.path.join(p, f) for f in found]
        elif os.path.isfile(p):
            files.append(p)
        else:
            sys.exit("%s: no such file or directory" % p)
    return files


def same_bits(a, b):
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    return torch.equal(a.contiguous().reshape(-1).view(torch.uint8), b.contiguous().reshape(-1).view(torch.uint8))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("paths", nargs="+", help="checkpoint directories or .safetensors files")
    ap.add_argument("--expect", action="append", default=[], help="NAME=DTYPE[d0,d1] (repeatable)")
    ap.add_argument("--expect-file", help="a file of NAME=DTYPE[d0,d1] lines")
    ap.add_argument("--exact", action="store_true", help="the files hold no tensor beyond the expected ones")
    ap.add_argument("--save-back", metavar="DIR", help="keep the PyTorch-written copies in DIR")
    args = ap.parse_args()

    expect = parse_specs(args.expect, "--expect" if args.expect else None)
    if args.expect_file:
        with open(args.expect_file) as f:
            expect.update(parse_specs(f, args.expect_file))

    out_dir = args.save_back
    tmp = None
    if out_dir:
        os.makedirs(out_dir, exist_ok=True)
    else:
        tmp = tempfile.TemporaryDirectory()
        out_dir = tmp.name

    problems = []
    seen = {}
    for path in files_of(args.paths):
        tensors = load_file(path)
        with safe_open(path, framework="pt") as f:
            meta = f.metadata() or {}
        print("%s: %d tensors, metadata %s" % (path, len(tensors), meta))
        for name in sorted(tensors):
            print("  %s=%s" % (name, describe(tensors[name])))
            if name in seen:
                problems.append("%s: tensor %s also in %s" % (path, name, seen[name][0]))
            seen[name] = (path, describe(tensors[name]))
        copy = os.path.join(out_dir, os.path.basename(path))
        save_file(tensors, copy, metadata=meta or None)
        back = load_file(copy)
        with safe_open(copy, framework="pt") as f:
            meta_back = f.metadata() or {}
        if sorted(back) != sorted(tensors):
            problems.append("%s: the saved-back copy holds other tensor names" % copy)
        for name, t in tensors.items():
            if name in back and not same_bits(t, back[name]):
                problems.append("%s: tensor %s changed in the save-back round trip" % (copy, name))
        if meta_back != meta:
            problems.append("%s: metadata changed in the save-back round trip" % copy)

    for name, want in sorted(expect.items()):
        if name not in seen:
            problems.append("missing tensor %s (expected %s)" % (name, want))
            continue
        where, got = seen[name]
        if got != want:
            problems.append("%s: tensor %s is %s, expected %s" % (where, name, got, want))
    if args.exact:
        for name in sorted(set(seen) - set(expect)):
            problems.append("%s: unexpected tensor %s" % (seen[name][0], name))

    if tmp:
        tmp.cleanup()
    for p in problems:
        print("FAIL: " + p)
    if problems:
        return 1
    print("%d tensors checked%s, saved back%s and reloaded bit for bit: OK"
          % (len(seen), " against %d expected" % len(expect) if expect else "",
             " to %s" % args.save_back if args.save_back else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
