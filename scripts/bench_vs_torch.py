#!/usr/bin/python3
"""attnscope bench and PyTorch 1.13 side by side, in one run, with their ratio.

Runs `attnscope bench --json` for the given sizes, then the same sizes through
torch.nn.MultiheadAttention (batch_first, need_weights=True, average_attn_weights=False:
per-head probabilities [B, H, L, S] as attnscope's views need) with the same mask (a float
additive mask for torch: its fastest correct form), batch and thread count, and prints both
medians and torch_ms / attnscope_ms.

Torch must use OpenBLAS (Debian's libblas.so.3 alternative; the reference BLAS makes any
comparison meaningless). The machines set OPENBLAS_CORETYPE/OPENBLAS_L2_SIZE, holding
OpenBLAS to AVX2; to measure both at full speed unset them for this one command:
    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE /usr/bin/python3 scripts/bench_vs_torch.py
Both programs inherit the same OpenBLAS settings, so the comparison stays fair either way.
--malloc reuse (the default) runs torch with glibc's allocator reusing freed blocks, its fastest
configuration (scripts/peer_malloc.py); --malloc default leaves glibc as configured. attnscope
runs with the environment the script was given.

Usage: scripts/bench_vs_torch.py [--bin build/attnscope] [--sizes L:S:D:H,...] [--batch B]
       [--repeat N] [--threads T] [--mask causal|none] [--malloc reuse|default] [--json]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import peer_malloc

DEFAULT_SIZES = "512:512:512:8,1024:1024:768:12,2048:2048:1024:16"


def parse_sizes(text):
    sizes = []
    for item in text.split(","):
        parts = item.split(":")
        if len(parts) != 4 or not all(p.isdigit() and int(p) > 0 for p in parts):
            raise SystemExit(f"bench_vs_torch.py: --sizes: '{item}' is not L:S:D:H")
        sizes.append(tuple(int(p) for p in parts))
    return sizes


def loaded_blas():
    """The BLAS libraries this process has mapped (torch's, through libblas.so.3)."""
    with open("/proc/self/maps") as maps:
        libs = {os.path.realpath(line.split()[-1]) for line in maps if "blas" in line.lower() and "/" in line}
    return ", ".join(sorted(libs)) or "none found"


def torch_median_ms(torch, L, S, D, H, B, mask, repeat):
    torch.manual_seed(0)
    mha = torch.nn.MultiheadAttention(D, H, batch_first=True).eval()
    x = torch.randn(B, L, D)
    kv = x if L == S else torch.randn(B, S, D)
    # Causal, top-left aligned as attnscope's, as a float additive mask (-inf above the
    # diagonal): torch 1.13 runs it up to 2x faster than the equivalent bool mask, so the
    # peer is timed in its fastest correct configuration.
    attn_mask = None
    if mask == "causal":
        attn_mask = torch.zeros(L, S).masked_fill(torch.ones(L, S, dtype=torch.bool).triu(1), float("-inf"))
    times = []
    with torch.no_grad():
        for rep in range(repeat + 1):  # the first run warms up allocator and threads
            start = time.perf_counter()
            out, weights = mha(x, kv, kv, need_weights=True, average_attn_weights=False, attn_mask=attn_mask)
            elapsed = time.perf_counter() - start
            if rep > 0:
                times.append(elapsed * 1e3)
    assert tuple(weights.shape) == (B, H, L, S)
    return statistics.median(times)


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bin", default=os.path.join(here, "..", "build", "attnscope"))
    parser.add_argument("--sizes", default=DEFAULT_SIZES)
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    parser.add_argument("--mask", choices=["causal", "none"], default="causal")
    parser.add_argument("--json", action="store_true", help="print one JSON array instead of the table")
    peer_malloc.add_argument(parser)
    args = parser.parse_args()
    peer_malloc.reexec(args.malloc)
    sizes = parse_sizes(args.sizes)

    try:
        import torch
    except ImportError:
        raise SystemExit("bench_vs_torch.py: python3-torch is not installed (apt-get install python3-torch)")
    torch.set_num_threads(args.threads)
    torch.ones(64, 64) @ torch.ones(64, 64)  # loads the BLAS torch links (libblas.so.3)

    cmd = [args.bin, "bench", "--json", "--sizes", args.sizes, "--batch", str(args.batch), "--repeat",
           str(args.repeat), "--threads", str(args.threads), "--mask", args.mask, "--mode", "full"]
    run = subprocess.run(cmd, capture_output=True, text=True, env=peer_malloc.attnscope_env())
    if run.returncode != 0:
        raise SystemExit(f"bench_vs_torch.py: {' '.join(cmd)} failed: {run.stderr.strip()}")
    ours = json.loads(run.stdout)

    rows = []
    for (L, S, D, H), mine in zip(sizes, ours):
        torch_ms = torch_median_ms(torch, L, S, D, H, args.batch, args.mask, args.repeat)
        rows.append({"L": L, "S": S, "D": D, "H": H, "B": args.batch, "attnscope_ms": mine["median_ms"],
                     "torch_ms": torch_ms, "speedup": torch_ms / mine["median_ms"], "gflops": mine["gflops"],
                     "gemm_peak_gflops": mine["gemm_peak_gflops"],
                     "of_gemm_peak": mine["gflops"] / mine["gemm_peak_gflops"], "peak_rss_mb": mine["peak_rss_mb"],
                     "torch_glibc_tunables": peer_malloc.torch_tunables()})
    if args.json:
        print(json.dumps(rows, indent=2))
        return
    core = ours[0]["blas_core"] if ours else "?"
    print(f"attnscope vs torch {torch.__version__} nn.MultiheadAttention (need_weights, per-head), "
          f"B={args.batch}, mask {args.mask}, {args.threads} threads, median of {args.repeat}")
    print(f"OpenBLAS core (attnscope): {core}; OPENBLAS_CORETYPE={os.environ.get('OPENBLAS_CORETYPE', '(unset)')}; "
          f"torch BLAS: {loaded_blas()}; {peer_malloc.describe()}")
    print(f"{'L':>6} {'S':>6} {'D':>5} {'H':>3}  {'attnscope ms':>12} {'torch ms':>9} {'speedup':>8} "
          f"{'GFLOP/s':>8} {'of GEMM peak':>12}")
    for r in rows:
        print(f"{r['L']:>6} {r['S']:>6} {r['D']:>5} {r['H']:>3}  {r['attnscope_ms']:>12.1f} {r['torch_ms']:>9.1f} "
              f"{r['speedup']:>7.2f}x {r['gflops']:>8.1f} {100 * r['of_gemm_peak']:>11.0f}%")
    print(f"GEMM peak (float32 2048x1024x1024, same run): {ours[0]['gemm_peak_gflops']:.0f} GFLOP/s")


if __name__ == "__main__":
    sys.exit(main())
