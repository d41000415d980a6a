#!/usr/bin/env python3
"""Compare the scale model's per-rank tallies with a traced run of the live
engine (tests/scripts/test_scale_model.sh).

usage: model_trace.py LAYOUT COLLECTIVE SIZES MODEL_OUT TRACE_FILE...

LAYOUT is the --domains list ("4,2"), COLLECTIVE the model's label
(AllReduce, ..., SendRecv), SIZES the sizes in call order, comma separated
(bytes), MODEL_OUT the output of `hetccl-model --per-rank` for them. Per
rank and call, from the trace: distinct peers of another domain that link
messages went to or came from, bytes sent and received over those links,
collective-library phases (`vendor` spans), and link phases (`link` spans).
Exit 1 on any difference.
"""
import json
import sys
from collections import defaultdict


def main():
    layout, label, sizes, model_out = sys.argv[1], sys.argv[2], sys.argv[3].split(","), sys.argv[4]
    files = sys.argv[5:]
    domain_of = []
    for d, n in enumerate(int(x) for x in layout.split(",")):
        domain_of += [d] * n
    names = ("Send", "Recv") if label == "SendRecv" else (label,)
    want = {}
    for line in open(model_out):
        f = line.split()
        if len(f) < 16 or f[0] != "rank" or f[1] != layout or f[2] != label:
            continue
        rank = int(f[5])
        want[(f[4], rank)] = {"links": int(f[7]), "sent": int(f[9]), "recvd": int(f[11]), "vendor": int(f[13]),
                              "steps": int(f[15])}
    errors = []
    seen = 0
    for path in files:
        doc = json.load(open(path))
        rank = doc["otherData"]["hetccl"]["rank"]
        evs = [e for e in doc["traceEvents"] if e["ph"] != "M"]
        # The calls of this collective in order (a Send/Recv group counts once, by its first call).
        firsts, batch_of = [], {}
        for e in sorted(evs, key=lambda e: e["ts"]):
            a = e.get("args", {})
            if e.get("cat") == "call" and e["ph"] == "B" and e["name"] in names:
                first = a.get("first", a["call"])
                batch_of[a["call"]] = first
                if first not in firsts:
                    firsts.append(first)
        # hetccl-perf makes each size's call out of place, then in place (as nccl-tests).
        if not firsts or len(firsts) % len(sizes):
            errors.append("rank %d: %d %s calls traced, %d sizes asked for" % (rank, len(firsts), label, len(sizes)))
            continue
        per_size = len(firsts) // len(sizes)
        got = {f: {"peers": set(), "sent": 0, "recvd": 0, "vendor": 0, "steps": 0} for f in firsts}
        for e in evs:
            a = e.get("args", {})
            g = got.get(batch_of.get(a.get("call")))
            if g is None:
                continue
            cat = e.get("cat")
            if cat == "vendor" and e["ph"] == "B":
                g["vendor"] += 1
            elif cat == "link" and e["ph"] == "B":
                g["steps"] += 1
            elif cat == "chunk" and e["ph"] == "e" and domain_of[a["peer"]] != domain_of[rank]:
                g["peers"].add(a["peer"])
                g["sent" if a.get("send") else "recvd"] += a["bytes"]
        for i, first in enumerate(firsts):
            size = sizes[i // per_size]
            g = got[first]
            traced = {"links": len(g["peers"]), "sent": g["sent"], "recvd": g["recvd"], "vendor": g["vendor"],
                      "steps": g["steps"]}
            m = want.get((size, rank))
            if m is None:
                errors.append("rank %d size %s: no model line" % (rank, size))
            elif m != traced:
                errors.append("rank %d size %s (%s place): model %s, traced %s" %
                              (rank, size, "in" if i % per_size else "out of", m, traced))
            seen += 1
    for e in errors:
        print("FAIL: %s %s: %s" % (layout, label, e))
    if not errors:
        print("ok: %s %s: %d rank-calls equal the model" % (layout, label, seen))
    return 1 if errors or not seen else 0


if __name__ == "__main__":
    sys.exit(main())
