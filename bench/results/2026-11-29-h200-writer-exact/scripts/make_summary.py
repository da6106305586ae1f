#!/usr/bin/env python3
"""summary.json from medians.json (run scripts/summarize.py first): the checks, predictions and the figures NOTES
quotes. Run from this folder: python3 scripts/make_summary.py"""
import json
m = json.load(open('medians.json'))
c = [x for v in m['ceilings'].values() for x in v]
SKEW = 'b128 batch/32 sequences at cache_len, the rest at 511'
S = {"device": "NVIDIA H200 (132 SMs, 1980 MHz max SM clock, 700 W)", "date": "2026-11-29", "commit_base": "20b12a2",
     "ceilings_measured": {"copy_TBps": [round(min(x['copy_TBps'] for x in c), 2), round(max(x['copy_TBps'] for x in c), 2)],
                           "cublas_bf16_gemm_TFLOPs": [round(min(x['gemm_bf16_TFLOPs'] for x in c)), round(max(x['gemm_bf16_TFLOPs'] for x in c))],
                           "note": "latte-bench's own ceilings, each run (medians.json: every run's); floors are from the same run as each figure"},
     "method": "latte-bench --only mla --quick --batch LIST (call 4: LATTE_BENCH_LENS=1024,1536,2048,4096,6144): CUDA-graph "
               "replay medians, phases from a graph with event nodes; new and base interleaved within one device call",
     "variants": {"call0": "new = the prepared patch (exact pricing of equal lengths, fixed cost 12; general bound for unequal lengths), base = 20b12a2",
                  "call1": "new = exact pricing without the general bound (committed as 1st commit), base = 20b12a2; dev kN = LATTE_MLA_FORCE_PIECES=N",
                  "call3": "as call 1, other batches",
                  "call4": "new = exact pricing with kMlaEqualItemFixedQ = 20 (2nd commit), base = the 1st commit's writer",
                  "call5": "new = the review's refactor (mla_schedule_equal_size, one FORCE_PIECES helper; only mla_schedule_split's PTX differs), base = d3bfcb2"},
     "checks": {"call0": {"gpu_attention": "36/36", "gpu_mla_quick": "2059/2059", "gpu_mla_tuned": "1326/1326"},
                "call1": {"gpu_attention": "36/36", "gpu_mla_quick": "2059/2059", "gpu_mla_tuned": "1326/1326"},
                "call2": {"new_check_over_old_writer": "FAIL as expected: batch 67 / 576, busiest CTA 114 quarter tiles against whole items' 104",
                          "new_check_over_new_writer": "1/1", "racecheck_equal_length_piece_cases": "2/2, 0 hazards"},
                "call4": {"gpu_attention": "36/36", "gpu_mla_quick": "2059/2059", "gpu_mla_tuned": "1326/1326"},
                "call5": {"gpu_attention": "36/36", "gpu_mla_quick": "2059/2059", "gpu_mla_tuned": "1326/1326"}},
     "predictions_attention_us": {
         "calls0-1": {"b48 len 4096": "~170 -> ~143", "b100 len 4096": "~326 -> ~277", "b100 len 2048": "~197 -> ~165",
                      "b72 len 4096": "-11%", "b8-32, b128": "unchanged"},
         "call4": {"b40 len 1024": "54 -> 46", "b40 len 1536": "70 -> 62", "b48 len 4096": "155 -> 144", "b72 len 1024": "100 -> 85",
                   "b72 len 1536": "141 -> 115", "b72 len 4096": "242 -> 233", "b79 len 1024": "102 -> 86", "b79 len 1536": "144 -> 117",
                   "b79 len 4096": "248 -> 237", "b100 len 4096": "296 -> 284", "others": "unchanged"}},
     "outcome_medians": {}}
for call, cases in m.items():
    if call == 'ceilings':
        continue
    for case, vs in cases.items():
        S["outcome_medians"].setdefault(call, {})[case] = {
            v: {"layer_us": round(r["layer_us_median"], 1), "attention_us": round(r["attention_us_median"], 1),
                "floor_us": round(r["floor_us_median"], 1), "rounds": r["rounds"]} for v, r in vs.items()}
S["skewed_b128_force_pieces_attention_us"] = {k: m['call1'][SKEW]['dev ' + k]['attention_us_median']
                                             for k in ('k0', 'k3', 'k4', 'k5', 'k6', 'k8', 'k10', 'k16')}
S["fit"] = {"data": "attention phase of 30 equal-length cases, calls 0-3, batches 48-128",
            "one_term": "t = 0.529 x busiest + 0.2 (quarter tiles; whole item fixed 20, piece 22): rms 5.3 us; with 12 / 14: 7.3",
            "two_term": "t = 0.40 x busiest + 0.14 x average + 6.2 (whole 14, piece 22): rms 3.3 us (used for call 4's predictions)"}
json.dump(S, open('summary.json', 'w'), indent=1)
