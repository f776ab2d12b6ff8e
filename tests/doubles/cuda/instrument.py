#!/usr/bin/env python3
"""Prepares a CUDA source for the CPU emulator: what compute-sanitizer gets by instrumenting
machine code, the emulator gets by rewriting three constructs of the source, nothing else.

  __shared__ T name[A][B];        -> static ::ringdp::doubles::SharedArray<T[A][B]> name("name");
      every access then goes through bounds-checked, race-checked element references;
  __launch_bounds__(N) k(...) {   -> k(...) { RINGDP_EMU_LAUNCH_BOUNDS(N, "N");
      every thread checks at entry that the launch stays within the declared bound;
  #include "kernels/cuda/x.cuh"   -> #include "emu_x.cuh" (the instrumented copy of the header).

Line numbers are kept (no line is added or removed) and a #line directive names the original
file, so compiler errors and assertion messages point at the real source. A `__shared__` or
`__launch_bounds__` this script cannot parse is an error: nothing may slip through unchecked.

usage: instrument.py INPUT OUTPUT
"""
import os
import re
import sys

SHARED = re.compile(r"__shared__\s+(?P<type>[A-Za-z_][\w:<>, ]*?)\s+(?P<name>[A-Za-z_]\w*)\s*(?P<dims>(?:\[[^\]]+\]\s*)+);")
CUH_INCLUDE = re.compile(r'#include\s+"kernels/cuda/(?P<base>\w+)\.cuh"')


def fail(path, text, pos, what):
    line = text.count("\n", 0, pos) + 1
    sys.exit(f"{path}:{line}: instrument.py: {what}")


def matching(text, open_pos, path):
    """Index just past the parenthesis that closes the one at open_pos."""
    depth = 0
    for i in range(open_pos, len(text)):
        if text[i] == "(":
            depth += 1
        elif text[i] == ")":
            depth -= 1
            if depth == 0:
                return i + 1
    fail(path, text, open_pos, "unbalanced parentheses")


def first_argument(args):
    depth = 0
    for i, c in enumerate(args):
        if c in "(<[":
            depth += 1
        elif c in ")>]":
            depth -= 1
        elif c == "," and depth == 0:
            return args[:i].strip()
    return args.strip()


def rewrite_shared(text, path):
    out, pos = [], 0
    for m in SHARED.finditer(strip_comments(text)):
        dims = re.sub(r"\s+", "", m.group("dims"))
        out.append(text[pos:m.start()])
        out.append(f'static ::ringdp::doubles::SharedArray<{m.group("type").strip()}{dims}> {m.group("name")}("{m.group("name")}");')
        pos = m.end()
    out.append(text[pos:])
    text = "".join(out)
    # What the pattern did not take (extern, initialisers, odd spelling) must not compile unchecked.
    leftover = re.search(r"\b__shared__\b", strip_comments(text))
    if leftover:
        fail(path, text, leftover.start(), "a __shared__ declaration the emulator cannot instrument "
             "(write `__shared__ T name[N]...;`, or RINGDP_DYNAMIC_SHARED for extern shared memory)")
    return text


def strip_comments(text):
    """The text with comments and string literals blanked out (same length, so positions match)."""
    def blank(m):
        return re.sub(r"[^\n]", " ", m.group(0))
    return re.sub(r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"', blank, text, flags=re.S)


def rewrite_launch_bounds(text, path):
    out, pos = [], 0
    code = strip_comments(text)
    for m in re.finditer(r"\b__launch_bounds__\s*\(", code):
        if m.start() < pos:
            continue
        args_end = matching(code, m.end() - 1, path)
        bound = first_argument(text[m.end():args_end - 1])
        params_open = code.find("(", args_end)
        if params_open < 0:
            fail(path, text, m.start(), "__launch_bounds__ without a kernel after it")
        body_open = matching(code, params_open, path)
        brace = re.compile(r"\s*\{").match(code, body_open)
        if not brace:
            fail(path, text, m.start(), "__launch_bounds__ on a declaration: the emulator needs the definition")
        # Drop the attribute and open the body with the check, on the same line.
        out.append(text[pos:m.start()])
        out.append(text[args_end:brace.end()])
        out.append(f' RINGDP_EMU_LAUNCH_BOUNDS(({bound}), "{bound}");')
        pos = brace.end()
    out.append(text[pos:])
    return "".join(out)


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    source, target = sys.argv[1], sys.argv[2]
    with open(source, encoding="utf-8") as f:
        text = f.read()
    text = rewrite_shared(text, source)
    text = rewrite_launch_bounds(text, source)
    text = CUH_INCLUDE.sub(lambda m: f'#include "emu_{m.group("base")}.cuh"', text)
    with open(target + ".tmp", "w", encoding="utf-8") as f:
        f.write(f'#line 1 "{os.path.abspath(source)}"\n')
        f.write(text)
    os.replace(target + ".tmp", target)


if __name__ == "__main__":
    main()
