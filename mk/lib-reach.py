#!/usr/bin/env python3
"""For every object in build/lib, the programs that reach it through their
own objects' undefined symbols (transitively); --check fails if a file in
src/lib is reached by fewer than two programs (it belongs in a program's room)."""
import glob, os, re, subprocess, sys

def symbols(obj):
    defined, undefined = set(), set()
    out = subprocess.run(["nm", obj], capture_output=True, text=True, check=True).stdout
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0] == "U":
            undefined.add(parts[1])
        elif len(parts) == 3 and parts[1] in "TDBRVWC" + "tdbr".upper():
            defined.add(parts[2])
    return defined, undefined

def main():
    os.chdir(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    lib = {}
    for obj in sorted(glob.glob("build/lib/*.o")):
        name = os.path.basename(obj)[:-2]
        if not os.path.exists("src/lib/%s.c" % name):
            continue
        lib[name] = symbols(obj)
    owner = {}
    for name, (defined, _) in lib.items():
        for s in defined:
            owner[s] = name
    reach = {name: set() for name in lib}
    for main_c in sorted(glob.glob("src/sbx-*/main.c")):
        prog = main_c.split("/")[1]
        todo = []
        for obj in glob.glob("build/%s/*.o" % prog):
            todo.extend(symbols(obj)[1])
        seen = set()
        while todo:
            s = todo.pop()
            name = owner.get(s)
            if name is None or name in seen:
                continue
            seen.add(name)
            todo.extend(lib[name][1])
        for name in seen:
            reach[name].add(prog)
    # sbx-report is compiled whole from its sources (static, for sandboxes).
    mk = open("Makefile").read()
    start = mk.index("REPORT_SRC :=")
    text = mk[start:mk.index(")", start)]
    for name in re.findall(r"(\w+)\.c", text):
        if name in reach:
            reach[name].add("sbx-report")
    lines = {name: sum(1 for _ in open("src/lib/%s.c" % name)) for name in lib}
    lonely = []
    for name in sorted(lib, key=lambda n: (len(reach[n]), n)):
        progs = sorted(reach[name])
        print("%-18s %5d  %2d  %s" % (name + ".c", lines[name], len(progs), " ".join(p[4:] for p in progs)))
        if len(progs) < 2:
            lonely.append(name)
    total_lib = sum(sum(1 for _ in open(f)) for f in glob.glob("src/lib/*.[ch]"))
    total = sum(sum(1 for _ in open(f)) for f in glob.glob("src/*/*.[ch]"))
    print("src/lib: %d of %d lines (%.0f %%)" % (total_lib, total, 100.0 * total_lib / total))
    if "--check" in sys.argv and lonely:
        print("lib-reach: reached by fewer than two programs: %s" % " ".join(n + ".c" for n in lonely))
        return 1
    return 0

sys.exit(main())
