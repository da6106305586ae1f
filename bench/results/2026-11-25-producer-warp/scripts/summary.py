#!/usr/bin/env python3
"""summary.py: medians of every variant's rounds in logs/call{1,2,4,7}_stdout.log (attention alone, and the layer with its
graph attention phase), and the ceilings latte-bench measured in the same calls (from the calls' logs.tgz); writes
summary.json beside this folder's README. Usage: python3 scripts/summary.py (from the folder)."""
import io, json, re, statistics, tarfile

CALLS = {
    "call1": "producer warpgroup (128 = copies posted to a 4th warpgroup, setmaxnreg 240/24)",
    "call2": "release before the tables' loads (128)",
    "call4": "release deferred behind the next S's first chunk (128 WG0, 256 WG1, 384 both)",
    "call7": "WG1's k_pe chunk rotated and multiplied first in its S, buffer 1's chunk 8 copied first (128)",
}


def medians(path):
    att, layer = {}, {}
    for line in open(path):
        m = re.match(r"exp (\d+) r\d+ (attention|layer): (.*)", line)
        if not m:
            continue
        exp, kind, rest = m.groups()
        for k, v in re.findall(r"(\S+(?: stored(?:-rotated)?| mixed| 124x511)?)=([0-9.]+(?:\([0-9.]+\))?)", rest):
            k = k.strip()
            if kind == "attention":
                att.setdefault(exp, {}).setdefault(k, []).append(float(v))
            else:
                total, phase = re.match(r"([0-9.]+)\(([0-9.]+)\)", v).groups()
                d = layer.setdefault(exp, {}).setdefault(k, {"layer": [], "attention_phase": []})
                d["layer"].append(float(total))
                d["attention_phase"].append(float(phase))
    med = lambda xs: round(statistics.median(xs), 2)
    return ({e: {k: {"median_us": med(v), "rounds_us": v} for k, v in d.items()} for e, d in att.items()},
            {e: {k: {"layer_median_us": med(v["layer"]), "attention_phase_median_us": med(v["attention_phase"]),
                     "layer_rounds_us": v["layer"]} for k, v in d.items()} for e, d in layer.items()})


def ceilings(tgz):
    out = []
    with tarfile.open(tgz) as t:
        for m in t.getmembers():
            if m.name.startswith("ab_"):
                for line in io.TextIOWrapper(t.extractfile(m)):
                    c = re.match(r"ceilings: copy ([0-9.]+) TB/s .*GEMM ([0-9.]+) TFLOP/s", line)
                    if c:
                        out.append({"log": m.name, "copy_TBps": float(c.group(1)), "gemm_TFLOPs": float(c.group(2))})
    return out


summary = {"date": "2026-11-25", "device": "NVIDIA H200 (1980 MHz max SM clock)", "tree": "5064616 + each patch",
           "timing": "attention alone: tests/gpu_attention LATTE_ATTN_TIMING=2 (read-only L2 flush before each launch); "
                     "layer: latte-bench --only mla --quick, CUDA-graph replay medians; rounds interleaved",
           "calls": {}}
for call, what in CALLS.items():
    att, layer = medians(f"logs/{call}_stdout.log")
    summary["calls"][call] = {"experiment": what, "patch": {"call1": "patches/producer_warpgroup.patch",
                              "call2": "patches/release_before_tables.patch", "call4": "patches/deferred_release.patch",
                              "call7": "patches/wg1_kpe_first.patch"}[call],
                              "ceilings_same_call": ceilings(f"logs/{call}_logs.tgz"),
                              "attention_alone": att, "layer": layer}
summary["sanitizer"] = {
    "call3": "synccheck, --force-blocking-launches from the start (wrapper), gpu_mla and gpu_mla:wgmma2 two at once: "
             "pass, 0 errors, 85 / 87 s (2676 / 2677 checks)",
    "call5": "scripts/gpu_sanitize.sh with the change, same pair: gpu_mla:wgmma2 pass (186 s, 2678 checks); gpu_mla "
             "TIMEOUT at 503 s inside 'h64 b256 c0.1 tuned' (its tune)",
    "call6": "that case alone under synccheck + blocking launches: 26 s with the tuned engines and with cuBLASLt only "
             "(348 checks each, 0 errors); natively 2 s",
    "call9": "call 5 again on the final tree: gpu_mla:wgmma2 pass (195 s, 2678 checks); gpu_mla TIMEOUT at 496 s in the "
             "same case",
}
summary["harness"] = {"call8": "scripts/gpu_iter.sh ITER_STEPS=ab ITER_AB_EXPS=8 ITER_AB_ROUNDS=2 ITER_TRACES=8 on the "
                                "committed tree: checks pass, one line a run (logs/call8_gpu_iter_ab_smoke.tgz)"}
json.dump(summary, open("summary.json", "w"), indent=1)
print(json.dumps({c: {e: {k: v["median_us"] for k, v in d.items()} for e, d in s["attention_alone"].items()}
                  for c, s in summary["calls"].items()}, indent=1))
print(json.dumps({c: s["ceilings_same_call"][:1] for c, s in summary["calls"].items()}))
