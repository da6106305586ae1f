#!/usr/bin/env python3
"""summary.json of bench/results/2026-12-08-checks/ from the calls' files (run from the folder: python3 scripts/summary.py)."""
import glob, json, os, re

def tests(folder):
    out = {}
    for f in sorted(glob.glob(os.path.join(folder, "gpu_*.log"))):
        lines = open(f, errors="replace").read().splitlines()
        name = os.path.basename(f)[:-4]
        out[name] = {"last_line": lines[-1] if lines else "", "fail_lines": sum(l.startswith("FAIL") for l in lines),
                     "ok_lines": sum(l.startswith("ok") for l in lines),
                     "exact_check": [l.strip() for l in lines if "whole sequences of 2-8 tokens" in l]}
    return out

def oracle(folder):
    out = {}
    for f in sorted(glob.glob(os.path.join(folder, "oracle_json", "*.json"))):
        d = json.load(open(f))
        cases = {}
        for c in d["cases"]:
            keep = {k: c[k] for k in ("y_misses", "y_miss_lengths", "y_miss_where", "torch_absorbed_misses",
                                      "torch_absorbed_miss_lengths", "torch_flash_misses", "y_rel_err",
                                      "torch_absorbed_rel_err", "ok", "informational") if k in c}
            cases[c["name"]] = keep
        out[os.path.basename(f)[:-5]] = {"gpu": d["gpu"], "seed": d["seed"], "sample": d["sample"],
                                         "failures": d["failures"], "cases": cases}
    log = os.path.join(folder, "oracle.log")
    if os.path.exists(log):
        t = open(log).read()
        m = re.search(r"timing \(us.*?copy ([\d.]+) TB/s, GEMM ([\d.]+) TFLOP/s\n(.*?)\nqknorm", t, re.S)
        if m:
            rows = [l.split() for l in m.group(3).splitlines()[1:]]
            out["timing_graph_replay_batch128"] = {
                "ceilings": {"copy_TBps": float(m.group(1)), "gemm_bf16_TFLOPs": float(m.group(2))},
                "columns": ["len", "floor_us", "latte_us", "torch_absorbed_us", "latte_keys_stored_rotated_us",
                            "torch_keys_stored_rotated_us"],
                "rows": [[float(v) for v in r] for r in rows]}
    return out

def main():
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    s = {"folder": "bench/results/2026-12-08-checks", "calls": {}}
    for call in sorted(glob.glob(os.path.join(here, "call*"))):
        c = {"tests": tests(call) or tests(os.path.join(call, "tests")), "oracle": oracle(call)}
        for ab in ("ab", "gemv"):
            p = os.path.join(call, ab, "ab_summary.json")
            if os.path.exists(p):
                c[ab + "_summary"] = json.load(open(p))
        s["calls"][os.path.basename(call)] = c
        if "ab_summary" in c:
            s.setdefault("device", c["ab_summary"]["device"])
            s.setdefault("ceilings_per_round", {})[os.path.basename(call)] = c["ab_summary"]["ceilings_per_round"]
    s["not_run"] = ["call2.sh, call3.sh: never started (no machine)", "call4.sh: refused (device time)",
                    "dev/gemv_x_ahead_not_run.patch: compiled only",
                    "tests: the threaded float64 references (for_each_host_thread) compiled only"]
    json.dump(s, open(os.path.join(here, "summary.json"), "w"), indent=1)

if __name__ == "__main__":
    main()
