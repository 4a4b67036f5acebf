#!/usr/bin/python3
"""A model folder through attnscope and through plain eager PyTorch, in one run, with the ratio.

For each size L: `attnscope bench --model FOLDER --tokens L --rerun REPEAT --json` and a plain
eager PyTorch float32 implementation of the family on the CPU that does what transformers'
eager path does and returns every layer's attention weights and the last position's logits
(transformers' logits_to_keep=1, what the app shows first; --logits all: every position's, on
both sides) (GPT-2: Conv1D projections, gelu_new; llama / mistral / qwen2: RMSNorm, rotate-half
RoPE, repeat_kv for GQA, SiLU-gated MLP). Torch runs in its fastest correct configuration: a
float additive causal mask (-inf above the diagonal; a bool mask costs torch 1.13 up to 2x),
torch.no_grad, the same thread count, and glibc's allocator reusing freed blocks (--malloc
reuse, the default: scripts/peer_malloc.py; attnscope runs with the environment as given). Prints, per size, the
first full forward of each (torch's warm-up run; attnscope's forward_ms, which also populates
fresh memory for the maps), then the median of --repeat full forwards after it (torch's further runs;
attnscope's rerun_ms: each on another text, into the storage of the run before), each pair
with torch_ms / attnscope_ms, and attnscope's append_ms (one more token through the cache).

--make gpt2-small | llama-1b writes a random-weight folder of that size into FOLDER first
(GPT-2 small: 12 layers x 12 heads, D 768, V 50257, context 1024, F32; Llama-3.2-1B-sized:
16 layers, 32 heads, 8 KV heads, D 2048, MLP 8192, V 128256, BF16). Not for tests: minutes
and gigabytes.

Torch must use OpenBLAS (install libopenblas0-pthread); to measure both at full speed:
    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE /usr/bin/python3 scripts/bench_model_vs_torch.py FOLDER

Usage: scripts/bench_model_vs_torch.py FOLDER [--make gpt2-small|llama-1b] [--tokens 128,512]
       [--bin build/attnscope] [--threads 2] [--repeat 3] [--logits last|all] [--malloc reuse|default]
"""
import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import time

import torch
import torch.nn.functional as F

import peer_malloc

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "cli"))
import hf_reference  # noqa: E402  (safetensors writing and reading helpers only)

SIZES = {
    "gpt2-small": dict(family="gpt2", D=768, H=12, G=12, N=12, M=3072, V=50257, P=1024, dtype="F32"),
    "llama-1b": dict(family="llama", D=2048, H=32, G=8, N=16, M=8192, V=128256, P=2048, dtype="BF16"),
}


def make_folder(folder, size):
    s = SIZES[size]
    D, H, G, N, M, V, P = s["D"], s["H"], s["G"], s["N"], s["M"], s["V"], s["P"]
    gen = torch.Generator().manual_seed(0)

    def r(*shape, std=0.02):
        return torch.randn(*shape, generator=gen) * std

    t = {}
    if s["family"] == "gpt2":
        cfg = dict(model_type="gpt2", vocab_size=V, n_embd=D, n_layer=N, n_head=H, n_positions=P, n_inner=M,
                   layer_norm_epsilon=1e-5, activation_function="gelu_new")
        t["transformer.wte.weight"], t["transformer.wpe.weight"] = r(V, D), r(P, D, std=0.01)
        for i in range(N):
            h = "transformer.h.%d." % i
            t[h + "ln_1.weight"], t[h + "ln_1.bias"] = 1 + r(D), r(D)
            t[h + "attn.c_attn.weight"], t[h + "attn.c_attn.bias"] = r(D, 3 * D), r(3 * D)
            t[h + "attn.c_proj.weight"], t[h + "attn.c_proj.bias"] = r(D, D), r(D)
            t[h + "ln_2.weight"], t[h + "ln_2.bias"] = 1 + r(D), r(D)
            t[h + "mlp.c_fc.weight"], t[h + "mlp.c_fc.bias"] = r(D, M), r(M)
            t[h + "mlp.c_proj.weight"], t[h + "mlp.c_proj.bias"] = r(M, D), r(D)
        t["transformer.ln_f.weight"], t["transformer.ln_f.bias"] = 1 + r(D), r(D)
    else:
        d = D // H
        cfg = dict(model_type="llama", vocab_size=V, hidden_size=D, intermediate_size=M, num_attention_heads=H,
                   num_key_value_heads=G, num_hidden_layers=N, rms_norm_eps=1e-5, rope_theta=500000.0,
                   max_position_embeddings=P, tie_word_embeddings=True, hidden_act="silu")
        t["model.embed_tokens.weight"] = r(V, D)
        for i in range(N):
            h = "model.layers.%d." % i
            t[h + "input_layernorm.weight"] = 1 + r(D)
            t[h + "self_attn.q_proj.weight"], t[h + "self_attn.o_proj.weight"] = r(H * d, D), r(D, H * d)
            t[h + "self_attn.k_proj.weight"], t[h + "self_attn.v_proj.weight"] = r(G * d, D), r(G * d, D)
            t[h + "post_attention_layernorm.weight"] = 1 + r(D)
            t[h + "mlp.gate_proj.weight"], t[h + "mlp.up_proj.weight"] = r(M, D), r(M, D)
            t[h + "mlp.down_proj.weight"] = r(D, M)
        t["model.norm.weight"] = 1 + r(D)
    hf_reference.write_folder(folder, cfg, t, dtype=s["dtype"])


def load(folder):
    """config and float32 tensors (names without the base model's prefix)."""
    with open(os.path.join(folder, "config.json")) as f:
        cfg = json.load(f)
    with open(os.path.join(folder, "model.safetensors"), "rb") as f:
        data = f.read()
    n = int.from_bytes(data[:8], "little")
    header = json.loads(data[8:8 + n])
    types = {"F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16}
    tensors = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        a, b = info["data_offsets"]
        raw = bytearray(data[8 + n + a:8 + n + b])
        dtype = types[info["dtype"]]
        t = torch.frombuffer(raw, dtype=torch.int16 if dtype == torch.bfloat16 else dtype)
        t = t.view(torch.bfloat16) if dtype == torch.bfloat16 else t
        name = name.split("transformer.", 1)[-1].split("model.", 1)[-1]
        tensors[name] = t.reshape(info["shape"]).to(torch.float32)
    return cfg, tensors


def causal_mask(L, window=None):
    """float additive mask: -inf above the diagonal (and, with a window W, W or more keys back)."""
    mask = torch.full((L, L), float("-inf")).triu(1)
    return mask if not window else mask + torch.full((L, L), float("-inf")).tril(-window)


def gpt2_forward(cfg, w, ids, last_only=False):
    D, H, L = cfg["n_embd"], cfg["n_head"], len(ids)
    d, eps = D // H, cfg["layer_norm_epsilon"]
    mask = causal_mask(L)
    x = w["wte.weight"][ids] + w["wpe.weight"][:L]
    attns = []
    for i in range(cfg["n_layer"]):
        h = "h.%d." % i
        a = F.layer_norm(x, (D,), w[h + "ln_1.weight"], w[h + "ln_1.bias"], eps)
        qkv = torch.addmm(w[h + "attn.c_attn.bias"], a, w[h + "attn.c_attn.weight"])
        q, k, v = (t.view(L, H, d).transpose(0, 1) for t in qkv.split(D, dim=1))
        probs = torch.softmax(torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(d) + mask, dim=-1)
        attns.append(probs)
        ctx = torch.matmul(probs, v).transpose(0, 1).reshape(L, D)
        x = x + torch.addmm(w[h + "attn.c_proj.bias"], ctx, w[h + "attn.c_proj.weight"])
        m = F.layer_norm(x, (D,), w[h + "ln_2.weight"], w[h + "ln_2.bias"], eps)
        m = F.gelu(torch.addmm(w[h + "mlp.c_fc.bias"], m, w[h + "mlp.c_fc.weight"]), approximate="tanh")
        x = x + torch.addmm(w[h + "mlp.c_proj.bias"], m, w[h + "mlp.c_proj.weight"])
    x = F.layer_norm(x, (D,), w["ln_f.weight"], w["ln_f.bias"], eps)
    return (x[-1:] if last_only else x) @ w["wte.weight"].T, attns


def rms(x, weight, eps):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * weight


def llama_forward(cfg, w, ids, last_only=False):
    D, H, L = cfg["hidden_size"], cfg["num_attention_heads"], len(ids)
    G, eps = cfg.get("num_key_value_heads", H), cfg["rms_norm_eps"]
    d = cfg.get("head_dim", D // H)
    inv = 1.0 / (cfg.get("rope_theta", 10000.0) ** (torch.arange(0, d, 2, dtype=torch.float32) / d))
    angles = torch.outer(torch.arange(L, dtype=torch.float32), inv)
    cos, sin = torch.cat([angles.cos()] * 2, -1), torch.cat([angles.sin()] * 2, -1)

    def rope(x):
        x1, x2 = x[..., : d // 2], x[..., d // 2:]
        return x * cos + torch.cat([-x2, x1], -1) * sin

    def lin(name, x):  # qwen2's q, k, v have biases
        out = x @ w[name + ".weight"].T
        return out + w[name + ".bias"] if name + ".bias" in w else out

    mask = causal_mask(L, cfg.get("sliding_window") if cfg["model_type"] == "mistral" else None)
    x = w["embed_tokens.weight"][ids]
    attns = []
    for i in range(cfg["num_hidden_layers"]):
        h = "layers.%d." % i
        a = rms(x, w[h + "input_layernorm.weight"], eps)
        q = rope(lin(h + "self_attn.q_proj", a).view(L, H, d).transpose(0, 1))
        k = rope(lin(h + "self_attn.k_proj", a).view(L, G, d).transpose(0, 1))
        v = lin(h + "self_attn.v_proj", a).view(L, G, d).transpose(0, 1)
        k, v = k.repeat_interleave(H // G, 0), v.repeat_interleave(H // G, 0)
        probs = torch.softmax(torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(d) + mask, dim=-1)
        attns.append(probs)
        x = x + torch.matmul(probs, v).transpose(0, 1).reshape(L, H * d) @ w[h + "self_attn.o_proj.weight"].T
        m = rms(x, w[h + "post_attention_layernorm.weight"], eps)
        m = F.silu(m @ w[h + "mlp.gate_proj.weight"].T) * (m @ w[h + "mlp.up_proj.weight"].T)
        x = x + m @ w[h + "mlp.down_proj.weight"].T
    x = rms(x, w["norm.weight"], eps)
    head = w["lm_head.weight"] if "lm_head.weight" in w else w["embed_tokens.weight"]
    return (x[-1:] if last_only else x) @ head.T, attns


# qwen2 here without its optional sliding window (use_sliding_window is off in its configs).
FORWARDS = {"gpt2": gpt2_forward, "llama": llama_forward, "mistral": llama_forward, "qwen2": llama_forward}


def torch_ms(cfg, w, L, repeat, last_only):
    """The first run's time and the median of `repeat` runs after it."""
    forward = FORWARDS[cfg["model_type"]]
    ids = torch.randint(0, cfg["vocab_size"], (L,), generator=torch.Generator().manual_seed(L))
    times = []
    with torch.no_grad():
        for rep in range(repeat + 1):
            start = time.perf_counter()
            forward(cfg, w, ids, last_only)
            times.append(1e3 * (time.perf_counter() - start))
    return times[0], statistics.median(times[1:])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder")
    parser.add_argument("--make", choices=sorted(SIZES))
    parser.add_argument("--tokens", default="128,512")
    parser.add_argument("--bin", default=os.path.join(os.path.dirname(__file__), "..", "build", "attnscope"))
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--logits", choices=["last", "all"], default="last")
    peer_malloc.add_argument(parser)
    args = parser.parse_args()
    if args.repeat < 1:
        raise SystemExit("bench_model_vs_torch.py: --repeat must be at least 1")
    peer_malloc.reexec(args.malloc)
    if args.make:
        make_folder(args.folder, args.make)
    torch.set_num_threads(args.threads)
    cfg, w = load(args.folder)
    if cfg["model_type"] not in FORWARDS:
        raise SystemExit("bench_model_vs_torch.py: no eager implementation here for " + cfg["model_type"])
    sizes = [int(n) for n in args.tokens.split(",")]
    print("torch %s, %d threads, logits %s, %s; median of %d runs after the first" %
          (torch.__version__, args.threads, args.logits, peer_malloc.describe(), args.repeat))
    print("%6s %12s %12s %7s %12s %12s %7s %10s" % ("L", "torch_first", "ours_first", "ratio", "torch_ms",
                                                    "attnscope_ms", "ratio", "append_ms"))
    for L in sizes:
        out = subprocess.run([args.bin, "bench", "--model", args.folder, "--tokens", str(L), "--threads",
                              str(args.threads), "--logits", args.logits, "--rerun", str(args.repeat), "--json"],
                             capture_output=True, text=True, check=True, env=peer_malloc.attnscope_env())
        ours = json.loads(out.stdout)[0]
        first, median = torch_ms(cfg, w, L, args.repeat, args.logits == "last")
        print("%6d %12.1f %12.1f %6.2fx %12.1f %12.1f %6.2fx %10.1f" %
              (L, first, ours["forward_ms"], first / ours["forward_ms"], median, ours["rerun_ms"],
               median / ours["rerun_ms"], ours["append_ms"]), flush=True)


if __name__ == "__main__":
    main()
