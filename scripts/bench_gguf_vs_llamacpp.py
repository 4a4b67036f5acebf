#!/usr/bin/python3
"""attnscope beside llama.cpp on the same GGUF file, same threads, in one run (issue 36's
performance figures): the first forward of L tokens with every map kept against llama.cpp's
prompt processing of L tokens, a generated token against llama.cpp's, and each one's peak
memory. llama.cpp is npm's node-llama-cpp (prebuilt CPU binary; F32 KV cache, flash attention
off), installed into BUILD/npm by scripts/llama-cpp-reference.sh. The two alternate, round by
round, so that both see the same machine; medians are printed with their ratio.

Usage: /usr/bin/python3 scripts/bench_gguf_vs_llamacpp.py MODEL.gguf [--tokens 512] [--threads 2]
       [--generate 16] [--rounds 3] [--build build] [--json]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def vocabulary(path, build):
    """Rows of token_embd.weight, read with llama.cpp's own gguf-py."""
    sys.path.insert(0, os.path.join(build, "npm", "llama.cpp-v0.5.0", "gguf-py"))
    import gguf  # pylint: disable=import-outside-toplevel
    for tensor in gguf.GGUFReader(path).tensors:
        if tensor.name == "token_embd.weight":
            return int(tensor.shape[1])
    raise SystemExit(f"{path}: no token_embd.weight")


def attnscope_round(binary, path, args):
    done = subprocess.run([binary, "bench", "--model", path, "--tokens", str(args.tokens), "--threads",
                           str(args.threads), "--generate", str(args.generate), "--json"],
                          capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit("attnscope bench failed: " + done.stderr.strip())
    return json.loads(done.stdout)[0]


def llama_round(package, path, args, vocab):
    done = subprocess.run(["node", os.path.join(ROOT, "scripts", "bench_llama_cpp.mjs"), package, path,
                           str(args.tokens), str(args.threads), str(args.generate), "1", str(vocab)],
                          capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit("node-llama-cpp failed: " + done.stderr.strip())
    return json.loads(done.stdout.strip().splitlines()[-1])


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("model")
    parser.add_argument("--tokens", type=int, default=512)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--generate", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--build", default=os.path.join(ROOT, "build"))
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    package = subprocess.run([os.path.join(ROOT, "scripts", "llama-cpp-reference.sh"), args.build],
                             capture_output=True, text=True, check=True).stdout.strip()
    package = os.path.join(package, "node_modules", "node-llama-cpp")
    vocab = vocabulary(args.model, args.build)
    ours, theirs = [], []
    for _ in range(args.rounds):
        ours.append(attnscope_round(os.path.join(args.build, "attnscope"), args.model, args))
        theirs.append(llama_round(package, args.model, args, vocab))
    row = {
        "model": args.model, "L": args.tokens, "threads": args.threads, "rounds": args.rounds,
        "attnscope_forward_ms": statistics.median(r["forward_ms"] for r in ours),
        "llamacpp_prompt_ms": statistics.median(r["prompt_ms"][0] for r in theirs),
        "attnscope_step_ms": statistics.median(r["step_ms"] for r in ours),
        "llamacpp_step_ms": statistics.median(r["step_ms"][0] for r in theirs if r["step_ms"]),
        "attnscope_peak_rss_mb": max(r["peak_rss_mb"] for r in ours),
        "llamacpp_peak_rss_mb": max(r["peak_rss_mb"] for r in theirs),
        "file_mb": os.path.getsize(args.model) / 2**20,
    }
    row["forward_ratio"] = row["attnscope_forward_ms"] / row["llamacpp_prompt_ms"]
    row["step_ratio"] = row["attnscope_step_ms"] / row["llamacpp_step_ms"]
    if args.json:
        print(json.dumps(row))
        return
    print(f"{os.path.basename(args.model)} ({row['file_mb']:.0f} MiB), L = {args.tokens}, {args.threads} threads, "
          f"{args.rounds} rounds (medians)")
    print(f"  first forward, every map kept: {row['attnscope_forward_ms']:.0f} ms   llama.cpp prompt: "
          f"{row['llamacpp_prompt_ms']:.0f} ms   ratio {row['forward_ratio']:.2f}x")
    print(f"  one generated token:           {row['attnscope_step_ms']:.1f} ms   llama.cpp: "
          f"{row['llamacpp_step_ms']:.1f} ms   ratio {row['step_ratio']:.2f}x")
    print(f"  peak RSS: attnscope {row['attnscope_peak_rss_mb']:.0f} MiB, llama.cpp (node) "
          f"{row['llamacpp_peak_rss_mb']:.0f} MiB")


if __name__ == "__main__":
    main()
