#!/usr/bin/env python3
"""Import circles between the files of src/: an arrow a.c -> b.c when a's
object uses a symbol b's object defines (nm, after `make all`); prints
every strongly connected set of two or more files, and with --check fails
when there is one."""
import glob, os, subprocess, sys

def symbols(obj):
    defined, undefined = set(), set()
    for line in subprocess.run(["nm", obj], capture_output=True, text=True, check=True).stdout.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0] == "U":
            undefined.add(parts[1])
        elif len(parts) == 3 and parts[1] in "TDBRC":
            defined.add(parts[2])
    return defined, undefined

def circles(objs):
    syms = {o: symbols(o) for o in objs}
    owner = {}
    for o, (defined, _) in syms.items():
        for s in defined:
            owner.setdefault(s, o)
    edges = {o: {owner[s] for s in syms[o][1] if s in owner and owner[s] != o} for o in objs}
    index, low, stack, on, out, n = {}, {}, [], set(), [], [0]
    def visit(v):
        index[v] = low[v] = n[0]; n[0] += 1; stack.append(v); on.add(v)
        for w in edges[v]:
            if w not in index:
                visit(w); low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop(); on.discard(w); comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))
    sys.setrecursionlimit(10000)
    for v in objs:
        if v not in index:
            visit(v)
    return out

def main():
    os.chdir(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    found = []
    for folder in sorted(glob.glob("build/lib")) + sorted(glob.glob("build/sbx-*/")):
        objs = sorted(o for o in glob.glob(os.path.join(folder, "*.o"))
                      if os.path.exists("src/" + o[len("build/"):-2] + ".c"))
        for c in circles(objs):
            found.append(" ".join("src/" + o[len("build/"):-2] + ".c" for o in c))
    for f in found:
        print("circle: " + f)
    print("%d circle(s) of imports between files" % len(found))
    return 1 if "--check" in sys.argv and found else 0

sys.exit(main())
