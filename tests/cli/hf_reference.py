"""Random Hugging Face model folders written by hand (config.json, safetensors, no
`transformers` or `safetensors` package), and an independent float64 PyTorch forward pass
of each family, written from transformers' modeling_{gpt2,llama,mistral,qwen2,qwen3,smollm3,gemma2,gemma3,
olmo2,phi3,gpt_neox,bert}.py and modeling_rope_utils.py. Shares no code with attnscope.

Run with /usr/bin/python3 (the interpreter that has numpy and torch).
"""
import json
import math
import os
import struct

import numpy as np
import torch
import torch.nn.functional as F

# ---------------------------------------------------------------- safetensors writing

DTYPES = {"F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16}


def tensor_bytes(t, dtype):
    t = t.to(DTYPES[dtype]).contiguous()
    if dtype == "BF16":
        return t.view(torch.int16).numpy().tobytes()
    return t.numpy().tobytes()


def safetensors_bytes(tensors, dtype):
    """The file: 8-byte little-endian header length, JSON header padded with spaces, data."""
    header = {"__metadata__": {"format": "pt"}}
    blobs, offset = [], 0
    for name, t in tensors.items():
        raw = tensor_bytes(t, dtype)
        header[name] = {"dtype": dtype, "shape": list(t.shape), "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text + b"".join(blobs)


def write_folder(folder, config, tensors, dtype="F32", shards=1):
    """config.json plus model.safetensors, or `shards` files and model.safetensors.index.json.
    Returns the tensors as stored (rounded to dtype), in float64."""
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(config, f, indent=1)
    names = list(tensors)
    if shards == 1:
        with open(os.path.join(folder, "model.safetensors"), "wb") as f:
            f.write(safetensors_bytes(tensors, dtype))
    else:
        weight_map = {}
        for s in range(shards):
            part = names[s::shards]
            file = "model-%05d-of-%05d.safetensors" % (s + 1, shards)
            with open(os.path.join(folder, file), "wb") as f:
                f.write(safetensors_bytes({n: tensors[n] for n in part}, dtype))
            weight_map.update({n: file for n in part})
        with open(os.path.join(folder, "model.safetensors.index.json"), "w") as f:
            json.dump({"metadata": {"total_size": 0}, "weight_map": weight_map}, f)
    return {n: t.to(DTYPES[dtype]).to(torch.float64) for n, t in tensors.items()}


# ---------------------------------------------------------------- random models

class Rand:
    def __init__(self, seed):
        self.g = torch.Generator().manual_seed(seed)

    def __call__(self, *shape, std=0.3):
        return torch.randn(*shape, generator=self.g, dtype=torch.float64) * std

    def norm(self, D):
        return 1.0 + self(D, std=0.1)


def make_model(family, seed=0, D=32, H=4, G=None, N=2, M=64, V=97, P=16, prefix=True, spelling=4, **opt):
    """(config, tensors) of a random model of one family; opt: rope_type, factor, window,
    rotary, parallel, tied, head (bert), softcaps."""
    r = Rand(seed)
    G = G or H
    d = opt.get("head_dim", D // H)
    t = {}
    cfg = {"model_type": family, "vocab_size": V, "architectures": ["x"]}
    if family == "gpt2":
        cfg.update(n_embd=D, n_layer=N, n_head=H, n_positions=P, n_inner=M, layer_norm_epsilon=1e-5,
                   activation_function="gelu_new")
        p = "transformer." if prefix else ""
        t[p + "wte.weight"] = r(V, D, std=1.0)
        t[p + "wpe.weight"] = r(P, D, std=0.5)
        for i in range(N):
            h = p + "h.%d." % i
            t[h + "ln_1.weight"], t[h + "ln_1.bias"] = r.norm(D), r(D, std=0.1)
            t[h + "attn.c_attn.weight"], t[h + "attn.c_attn.bias"] = r(D, 3 * D), r(3 * D, std=0.1)
            t[h + "attn.c_proj.weight"], t[h + "attn.c_proj.bias"] = r(D, D), r(D, std=0.1)
            t[h + "ln_2.weight"], t[h + "ln_2.bias"] = r.norm(D), r(D, std=0.1)
            t[h + "mlp.c_fc.weight"], t[h + "mlp.c_fc.bias"] = r(D, M), r(M, std=0.1)
            t[h + "mlp.c_proj.weight"], t[h + "mlp.c_proj.bias"] = r(M, D, std=0.2), r(D, std=0.1)
        t[p + "ln_f.weight"], t[p + "ln_f.bias"] = r.norm(D), r(D, std=0.1)
        return cfg, t
    if family == "gpt_neox":
        cfg.update(hidden_size=D, num_hidden_layers=N, num_attention_heads=H, intermediate_size=M,
                   max_position_embeddings=P, layer_norm_eps=1e-5, hidden_act="gelu",
                   use_parallel_residual=opt.get("parallel", True), tie_word_embeddings=False)
        rotary = opt.get("rotary", 0.25)
        if spelling == 4:
            cfg.update(rotary_pct=rotary, rotary_emb_base=opt.get("theta", 10000))
        else:
            cfg["rope_parameters"] = {"rope_type": "default", "rope_theta": opt.get("theta", 10000),
                                      "partial_rotary_factor": rotary}
        p = "gpt_neox." if prefix else ""
        t[p + "embed_in.weight"] = r(V, D, std=1.0)
        for i in range(N):
            h = p + "layers.%d." % i
            t[h + "input_layernorm.weight"], t[h + "input_layernorm.bias"] = r.norm(D), r(D, std=0.1)
            t[h + "post_attention_layernorm.weight"], t[h + "post_attention_layernorm.bias"] = r.norm(D), r(D, std=0.1)
            t[h + "attention.query_key_value.weight"] = r(3 * D, D)
            t[h + "attention.query_key_value.bias"] = r(3 * D, std=0.1)
            t[h + "attention.dense.weight"], t[h + "attention.dense.bias"] = r(D, D), r(D, std=0.1)
            t[h + "mlp.dense_h_to_4h.weight"], t[h + "mlp.dense_h_to_4h.bias"] = r(M, D), r(M, std=0.1)
            t[h + "mlp.dense_4h_to_h.weight"], t[h + "mlp.dense_4h_to_h.bias"] = r(D, M, std=0.2), r(D, std=0.1)
        t[p + "final_layer_norm.weight"], t[p + "final_layer_norm.bias"] = r.norm(D), r(D, std=0.1)
        t["embed_out.weight"] = r(V, D, std=0.3)
        return cfg, t
    if family == "bert":
        cfg.update(hidden_size=D, num_hidden_layers=N, num_attention_heads=H, intermediate_size=M,
                   max_position_embeddings=P, layer_norm_eps=1e-12, hidden_act="gelu", type_vocab_size=2,
                   position_embedding_type="absolute")
        p = "bert." if prefix else ""
        e = p + "embeddings."
        t[e + "word_embeddings.weight"] = r(V, D, std=1.0)
        t[e + "position_embeddings.weight"] = r(P, D, std=0.5)
        t[e + "token_type_embeddings.weight"] = r(2, D, std=0.5)
        t[e + "LayerNorm.weight"], t[e + "LayerNorm.bias"] = r.norm(D), r(D, std=0.1)
        for i in range(N):
            h = p + "encoder.layer.%d." % i
            for n in ("query", "key", "value"):
                t[h + "attention.self.%s.weight" % n], t[h + "attention.self.%s.bias" % n] = r(D, D), r(D, std=0.1)
            t[h + "attention.output.dense.weight"], t[h + "attention.output.dense.bias"] = r(D, D), r(D, std=0.1)
            t[h + "attention.output.LayerNorm.weight"], t[h + "attention.output.LayerNorm.bias"] = r.norm(D), r(D, std=0.1)
            t[h + "intermediate.dense.weight"], t[h + "intermediate.dense.bias"] = r(M, D), r(M, std=0.1)
            t[h + "output.dense.weight"], t[h + "output.dense.bias"] = r(D, M, std=0.2), r(D, std=0.1)
            t[h + "output.LayerNorm.weight"], t[h + "output.LayerNorm.bias"] = r.norm(D), r(D, std=0.1)
        if opt.get("gamma_beta"):  # TensorFlow-era LayerNorm names
            t = {n.replace("LayerNorm.weight", "LayerNorm.gamma").replace("LayerNorm.bias", "LayerNorm.beta"): v
                 for n, v in t.items()}
        if opt.get("head", True):
            t["cls.predictions.transform.dense.weight"] = r(D, D)
            t["cls.predictions.transform.dense.bias"] = r(D, std=0.1)
            t["cls.predictions.transform.LayerNorm.weight"] = r.norm(D)
            t["cls.predictions.transform.LayerNorm.bias"] = r(D, std=0.1)
            t["cls.predictions.bias"] = r(V, std=0.1)
        return cfg, t
    if family == "phi3":
        return make_phi3(r, cfg, D, H, G, d, N, M, V, P, prefix, spelling, opt)
    # llama, mistral, qwen2, qwen3, smollm3, gemma2, gemma3_text, olmo2
    gemma = family in ("gemma2", "gemma3_text")
    cfg.update(hidden_size=D, num_hidden_layers=N, num_attention_heads=H, num_key_value_heads=G,
               intermediate_size=M, max_position_embeddings=P, rms_norm_eps=opt.get("eps", 1e-6),
               tie_word_embeddings=opt.get("tied", gemma or family == "qwen2"))
    if family == "gemma2":
        cfg.update(head_dim=d, hidden_activation="gelu_pytorch_tanh", query_pre_attn_scalar=opt.get("qpas", 24),
                   attn_logit_softcapping=opt.get("attn_cap", 1.5), final_logit_softcapping=opt.get("final_cap", 5.0))
    elif family == "gemma3_text":  # Gemma3TextConfig writes both soft-caps, null unless set
        cfg.update(head_dim=d, hidden_activation="gelu_pytorch_tanh", query_pre_attn_scalar=opt.get("qpas", 24),
                   attn_logit_softcapping=opt.get("attn_cap"), final_logit_softcapping=opt.get("final_cap"))
        if spelling == 4:
            cfg.update(sliding_window_pattern=opt.get("pattern", 6), rope_local_base_freq=opt.get("local_theta", 20.0))
    else:
        cfg["hidden_act"] = "silu"
        if "head_dim" in opt or family == "qwen3":  # Qwen3Config always writes head_dim
            cfg["head_dim"] = d
    if family == "smollm3":
        if "no_rope_layers" in opt:
            cfg["no_rope_layers"] = opt["no_rope_layers"]
        else:
            cfg["no_rope_layer_interval"] = opt.get("no_rope_interval", 4)
    if "window" in opt:
        cfg["sliding_window"] = opt["window"]
        if family in ("qwen2", "qwen3", "smollm3"):
            cfg.update(use_sliding_window=opt.get("use_sliding_window", True),
                       max_window_layers=opt.get("max_window_layers", 1))
    rope = {"rope_type": opt.get("rope_type", "default")}
    if rope["rope_type"] == "linear":
        rope["factor"] = opt.get("factor", 4.0)
    if rope["rope_type"] == "llama3":
        rope.update(factor=8.0, low_freq_factor=1.0, high_freq_factor=4.0, original_max_position_embeddings=8)
    theta = opt.get("theta", 500.0)
    if spelling == 4:
        cfg["rope_theta"] = theta
        if rope["rope_type"] != "default":
            cfg["rope_scaling"] = dict(rope, type=rope.pop("rope_type")) if opt.get("old_type_key") else rope
    elif family == "gemma3_text":  # transformers 5: one RoPE per layer type
        cfg["rope_parameters"] = {"full_attention": dict(rope, rope_theta=theta),
                                  "sliding_attention": {"rope_type": "default", "rope_theta": opt.get("local_theta", 20.0)}}
    else:
        cfg["rope_parameters"] = dict(rope, rope_theta=theta)
        if "layer_types" in opt:
            cfg["layer_types"] = opt["layer_types"]
    p = "model." if prefix else ""
    t[p + "embed_tokens.weight"] = r(V, D, std=1.0)
    bias = family == "qwen2"
    norm = (lambda n=D: r(n, std=0.2)) if gemma else (lambda n=D: r.norm(n))  # Gemma: x (1 + w)
    for i in range(N):
        h = p + "layers.%d." % i
        if family != "olmo2":  # OLMo 2 has no pre-norms
            t[h + "input_layernorm.weight"] = norm()
        t[h + "self_attn.q_proj.weight"] = r(H * d, D)
        t[h + "self_attn.k_proj.weight"] = r(G * d, D)
        t[h + "self_attn.v_proj.weight"] = r(G * d, D)
        if bias:
            t[h + "self_attn.q_proj.bias"] = r(H * d, std=0.2)
            t[h + "self_attn.k_proj.bias"] = r(G * d, std=0.2)
            t[h + "self_attn.v_proj.bias"] = r(G * d, std=0.2)
        t[h + "self_attn.o_proj.weight"] = r(D, H * d)
        if family in ("qwen3", "gemma3_text"):
            t[h + "self_attn.q_norm.weight"] = norm(d)
            t[h + "self_attn.k_norm.weight"] = norm(d)
        if family == "olmo2":  # over the whole projections
            t[h + "self_attn.q_norm.weight"] = norm(H * d)
            t[h + "self_attn.k_norm.weight"] = norm(G * d)
        t[h + "post_attention_layernorm.weight"] = norm()
        if gemma:
            t[h + "pre_feedforward_layernorm.weight"] = norm()
        if gemma or family == "olmo2":
            t[h + "post_feedforward_layernorm.weight"] = norm()
        t[h + "mlp.gate_proj.weight"] = r(M, D)
        t[h + "mlp.up_proj.weight"] = r(M, D)
        t[h + "mlp.down_proj.weight"] = r(D, M, std=0.2)
    t[p + "norm.weight"] = norm()
    if not cfg["tie_word_embeddings"]:
        t["lm_head.weight"] = r(V, D, std=0.3)
    return cfg, t


def make_phi3(r, cfg, D, H, G, d, N, M, V, P, prefix, spelling, opt):
    """Phi-3: fused qkv_proj (q, k, v rows) and gate_up_proj (gate rows first), partial rotary,
    longrope over an original context of P within max_position_embeddings 4 P."""
    partial = opt.get("rotary", 0.5)
    cfg.update(hidden_size=D, num_hidden_layers=N, num_attention_heads=H, num_key_value_heads=G, intermediate_size=M,
               max_position_embeddings=4 * P, rms_norm_eps=1e-5, hidden_act="silu", tie_word_embeddings=False)
    if "head_dim" in opt:
        cfg["head_dim"] = d
    if "window" in opt:
        cfg["sliding_window"] = opt["window"]
    pairs = int(d * partial) // 2
    rope = {"rope_type": "longrope", "short_factor": [1.0 + 0.5 * i for i in range(pairs)],
            "long_factor": [2.0 + i for i in range(pairs)]}
    theta = opt.get("theta", 500.0)
    if spelling == 4:
        cfg.update(rope_theta=theta, partial_rotary_factor=partial, original_max_position_embeddings=P,
                   rope_scaling=dict(rope, type=rope.pop("rope_type")))
    else:
        cfg["rope_parameters"] = dict(rope, rope_theta=theta, partial_rotary_factor=partial,
                                      original_max_position_embeddings=P)
    t = {}
    p = "model." if prefix else ""
    t[p + "embed_tokens.weight"] = r(V, D, std=1.0)
    for i in range(N):
        h = p + "layers.%d." % i
        t[h + "input_layernorm.weight"] = r.norm(D)
        t[h + "self_attn.qkv_proj.weight"] = r((H + 2 * G) * d, D)
        t[h + "self_attn.o_proj.weight"] = r(D, H * d)
        t[h + "post_attention_layernorm.weight"] = r.norm(D)
        t[h + "mlp.gate_up_proj.weight"] = r(2 * M, D)
        t[h + "mlp.down_proj.weight"] = r(D, M, std=0.2)
    t[p + "norm.weight"] = r.norm(D)
    t["lm_head.weight"] = r(V, D, std=0.3)
    return cfg, t


# ---------------------------------------------------------------- the reference forward pass

class Weights:
    """Stored tensors by name, with or without the base model's prefix."""

    def __init__(self, tensors, prefix):
        self.t, self.p = tensors, prefix

    def __call__(self, name):
        return self.head(self.p + name)

    def head(self, name):
        """A tensor outside the base model (None when absent); LayerNorm gamma/beta as weight/bias."""
        legacy = name.replace("LayerNorm.weight", "LayerNorm.gamma").replace("LayerNorm.bias", "LayerNorm.beta")
        return self.t.get(name, self.t.get(legacy))


def rope_inv_freq(cfg, head_dim, L=0):
    """modeling_rope_utils: default, linear, llama3, longrope (both config spellings) for a text
    of L tokens: longrope divides by long_factor once L passes original_max_position_embeddings
    (transformers' forward of the whole text), else by short_factor."""
    rp = cfg.get("rope_parameters") or {}
    scaling = rp or cfg.get("rope_scaling") or {}
    theta = rp.get("rope_theta", cfg.get("rope_theta", cfg.get("rotary_emb_base", 10000.0)))
    partial = rp.get("partial_rotary_factor", cfg.get("partial_rotary_factor", cfg.get("rotary_pct", 1.0)))
    dim = int(head_dim * partial)
    inv = 1.0 / (theta ** (torch.arange(0, dim, 2, dtype=torch.float64) / dim))
    kind = scaling.get("rope_type", scaling.get("type", "default"))
    if kind == "longrope":
        original = scaling.get("original_max_position_embeddings",
                               cfg.get("original_max_position_embeddings", cfg.get("max_position_embeddings")))
        factors = scaling["long_factor"] if L > original else scaling["short_factor"]
        inv = inv / torch.tensor(factors, dtype=torch.float64)
    if kind == "linear":
        inv = inv / scaling["factor"]
    elif kind == "llama3":
        factor, lo, hi = scaling["factor"], scaling["low_freq_factor"], scaling["high_freq_factor"]
        old = scaling["original_max_position_embeddings"]
        wavelen = 2 * math.pi / inv
        llama = torch.where(wavelen > old / lo, inv / factor, inv)
        smooth = (old / wavelen - lo) / (hi - lo)
        smoothed = (1 - smooth) * llama / factor + smooth * llama
        medium = ~(wavelen < old / hi) * ~(wavelen > old / lo)
        inv = torch.where(medium, smoothed, llama)
    return inv, dim


def layer_rope(cfg, head_dim, sliding, L=0):
    """A layer's (inverse frequencies, rotated features): Gemma 3 has one RoPE per layer type
    (transformers 5: rope_parameters keyed by layer type; 4.x: the global layers' rope_theta
    (default 1e6) and rope_scaling, the local ones' rope_local_base_freq (default 10000), unscaled)."""
    if cfg["model_type"] != "gemma3_text":
        return rope_inv_freq(cfg, head_dim, L)
    kind = "sliding_attention" if sliding else "full_attention"
    rp = cfg.get("rope_parameters") or {}
    if kind in rp:
        return rope_inv_freq({"rope_parameters": rp[kind]}, head_dim)
    if sliding:
        return rope_inv_freq({"rope_theta": cfg.get("rope_local_base_freq", 10000.0)}, head_dim)
    return rope_inv_freq(dict(cfg, rope_theta=cfg.get("rope_theta", 1e6)), head_dim)


def rope_attention_factor(cfg):
    """longrope's attention_factor on cos and sin: sqrt(1 + ln s / ln original), s the context's growth."""
    rp = cfg.get("rope_parameters") or {}
    scaling = rp or cfg.get("rope_scaling") or {}
    if scaling.get("rope_type", scaling.get("type")) != "longrope":
        return 1.0
    original = scaling.get("original_max_position_embeddings", cfg.get("original_max_position_embeddings"))
    s = cfg["max_position_embeddings"] / original
    return math.sqrt(1 + math.log(s) / math.log(original)) if s > 1 else 1.0


def rotate_half(x):
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def apply_rope(x, inv, dim, scale=1.0):
    """x [heads, L, d]: the first `dim` features rotated (NeoX partial rotary), rest passed;
    scale: cos and sin times it (longrope's attention factor)."""
    pos = torch.arange(x.shape[1], dtype=torch.float64)
    freqs = torch.outer(pos, inv)
    emb = torch.cat((freqs, freqs), dim=-1)
    rot, rest = x[..., :dim], x[..., dim:]
    return torch.cat((rot * (emb.cos() * scale) + rotate_half(rot) * (emb.sin() * scale), rest), dim=-1)


class Hooks:
    """Interventions for forward(), as TransformerLens hooks place them: hook_attn_scores
    (knockout: -inf before the softmax), hook_z (a head's output before o_proj: ablated or
    replaced) and hook_resid_pre (the residual stream entering a layer, replaced by rows).
    ablate: [(layer, head or None = every head, "zero" | "mean")]; knockout: [(layer, head or
    None, query, key)]; z: {(layer, head): [L, d]}; resid: {(layer, position): [D]}.
    Records each layer's own z [H, L, d] (before any edit) and input [L, D] in z_seen, resid_seen."""

    def __init__(self, ablate=(), knockout=(), z=None, resid=None):
        self.ablate, self.knockout = list(ablate), list(knockout)
        self.z_patch, self.resid_patch = z or {}, resid or {}
        self.z_seen, self.resid_seen = {}, {}

    def scores(self, layer, scores):
        scores = scores.clone()
        for (l, h, q, k) in self.knockout:
            if l == layer:
                for head in range(scores.shape[0]) if h is None else [h]:
                    scores[head, q, k] = float("-inf")
        return scores

    def z(self, layer, z):
        self.z_seen[layer] = z.clone()
        out = z.clone()
        for (l, h, mode) in self.ablate:
            if l == layer:
                for head in range(z.shape[0]) if h is None else [h]:
                    out[head] = z[head].mean(0, keepdim=True) if mode == "mean" else 0.0
        for (l, h), rows in self.z_patch.items():
            if l == layer:
                out[h] = torch.as_tensor(rows, dtype=torch.float64)
        return out

    def resid(self, layer, x):
        self.resid_seen[layer] = x.clone()
        x = x.clone()
        for (l, p), row in self.resid_patch.items():
            if l == layer:
                x[p] = torch.as_tensor(row, dtype=torch.float64)
        return x


def attend(q, k, v, scale, allowed, softcap=None, hooks=None, layer=0):
    """q [H, L, d], k/v [G, L, d]: probabilities [H, L, L] and context [L, H*d]."""
    H, G = q.shape[0], k.shape[0]
    k = k.repeat_interleave(H // G, dim=0)
    v = v.repeat_interleave(H // G, dim=0)
    scores = q @ k.transpose(1, 2) * scale
    if softcap is not None:
        scores = torch.tanh(scores / softcap) * softcap
    scores = scores.masked_fill(~allowed, float("-inf"))
    if hooks:
        scores = hooks.scores(layer, scores)
    probs = torch.softmax(scores, dim=-1)
    z = probs @ v  # [H, L, d]
    if hooks:
        z = hooks.z(layer, z)
    return probs, z.transpose(0, 1).reshape(q.shape[1], -1)


def causal(L, window=None, cache=None):
    """window: the model's sliding window (itself and window - 1 keys before). cache = (W, k):
    a KV cache's window and sinks (attnscope model generate --window W --sinks k): a query also
    sees at most itself and the W keys before it, except the first k keys, which stay visible."""
    i = torch.arange(L).unsqueeze(1)
    j = torch.arange(L).unsqueeze(0)
    recent = torch.ones(L, L, dtype=torch.bool)
    if window is not None:
        recent &= (i - j) < window
    if cache is not None:
        recent = (recent & ((i - j) <= cache[0])) | (j < cache[1])
    return (j <= i) & recent


def heads(x, n):
    return x.view(x.shape[0], n, -1).transpose(0, 1)


def gelu_tanh(x):
    return F.gelu(x, approximate="tanh")


def weights_of(cfg, tensors):
    prefix = {"gpt2": "transformer.", "gpt_neox": "gpt_neox.", "bert": "bert."}.get(cfg["model_type"], "model.")
    first = next(n for n in tensors if "emb" in n or "wte" in n)
    return Weights(tensors, prefix if first.startswith(prefix) else "")


def forward(cfg, tensors, ids, residuals=None, cache=None, hooks=None):
    """float64 logits [L, V] (None for an encoder without MLM head) and attention [N][H, L, L].
    residuals, a list: gets the embeddings and the residual stream after each layer, [L, D] each.
    cache = (W, k): every layer's mask also keeps a KV cache's window and sinks (causal()).
    hooks: a Hooks (interventions), or None."""
    kind = cfg["model_type"]
    fn = {"gpt2": forward_gpt2, "gpt_neox": forward_neox, "bert": forward_bert}.get(kind, forward_llama_like)
    keep = residuals.append if residuals is not None else (lambda x: None)
    return fn(cfg, weights_of(cfg, tensors), torch.tensor(ids), keep, cache, hooks)


def output_head(cfg, tensors, x):
    """The family's output head on residuals x [L, D]: logits [L, V] (None without one)."""
    kind = cfg["model_type"]
    fn = {"gpt2": head_gpt2, "gpt_neox": head_neox, "bert": head_bert}.get(kind, head_llama_like)
    return fn(cfg, weights_of(cfg, tensors), x)


def lens_probs(cfg, tensors, ids):
    """The logit lens: softmax of the output head on every residual, [N + 1, L, V] (float64)."""
    residuals = []
    forward(cfg, tensors, ids, residuals)
    return np.stack([torch.softmax(output_head(cfg, tensors, x), dim=-1).numpy() for x in residuals])


def forward_gpt2(cfg, w, ids, keep, cache=None, hooks=None):
    D, H, L = cfg["n_embd"], cfg["n_head"], len(ids)
    eps = cfg["layer_norm_epsilon"]
    x = w("wte.weight")[ids] + w("wpe.weight")[:L]
    keep(x)
    attns = []
    for i in range(cfg["n_layer"]):
        h = "h.%d." % i
        x = hooks.resid(i, x) if hooks else x
        a = F.layer_norm(x, (D,), w(h + "ln_1.weight"), w(h + "ln_1.bias"), eps)
        qkv = a @ w(h + "attn.c_attn.weight") + w(h + "attn.c_attn.bias")  # Conv1D: x W + b, W [in, out]
        q, k, v = (heads(t, H) for t in qkv.split(D, dim=1))
        probs, ctx = attend(q, k, v, 1.0 / math.sqrt(D // H), causal(L, cache=cache), hooks=hooks, layer=i)
        attns.append(probs)
        x = x + ctx @ w(h + "attn.c_proj.weight") + w(h + "attn.c_proj.bias")
        m = F.layer_norm(x, (D,), w(h + "ln_2.weight"), w(h + "ln_2.bias"), eps)
        m = gelu_tanh(m @ w(h + "mlp.c_fc.weight") + w(h + "mlp.c_fc.bias"))
        x = x + m @ w(h + "mlp.c_proj.weight") + w(h + "mlp.c_proj.bias")
        keep(x)
    return head_gpt2(cfg, w, x), attns


def head_gpt2(cfg, w, x):
    x = F.layer_norm(x, (cfg["n_embd"],), w("ln_f.weight"), w("ln_f.bias"), cfg["layer_norm_epsilon"])
    return x @ w("wte.weight").T


def rms(x, weight, eps, plus_one=False):
    y = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)
    return y * ((1.0 + weight) if plus_one else weight)


def rope_layers(cfg):
    """Which layers rotate q and k: SmolLM3 takes use_rope = no_rope_layers[layer] (1 = RoPE),
    by default every layer but each no_rope_layer_interval-th; every layer elsewhere."""
    N = cfg["num_hidden_layers"]
    if cfg["model_type"] != "smollm3":
        return [True] * N
    if "no_rope_layers" in cfg:
        return [bool(x) for x in cfg["no_rope_layers"]]
    interval = cfg.get("no_rope_layer_interval", 4)
    return [(i + 1) % interval != 0 for i in range(N)]


def sliding_layers(cfg):
    N = cfg["num_hidden_layers"]
    kind = cfg["model_type"]
    if kind in ("qwen3", "smollm3") and not cfg.get("use_sliding_window"):  # sliding_window = None
        return [False] * N
    if cfg.get("layer_types"):
        return [t == "sliding_attention" for t in cfg["layer_types"]]
    if kind == "mistral" or (kind == "phi3" and cfg.get("sliding_window")):
        return [True] * N
    if kind == "gemma2":
        return [not bool(i % 2) for i in range(N)]
    if kind == "gemma3_text":  # 4.x: every sliding_window_pattern-th layer is global
        return [bool((i + 1) % cfg.get("sliding_window_pattern", 6)) for i in range(N)]
    if kind in ("qwen2", "qwen3"):
        return [bool(cfg.get("use_sliding_window")) and i >= cfg.get("max_window_layers", N) for i in range(N)]
    if kind == "smollm3":  # the NoPE layers
        return [not rope for rope in rope_layers(cfg)]
    return [False] * N


def forward_llama_like(cfg, w, ids, keep, cache=None, hooks=None):
    kind = cfg["model_type"]
    D, H, L = cfg["hidden_size"], cfg["num_attention_heads"], len(ids)
    G = cfg.get("num_key_value_heads", H)
    d = cfg.get("head_dim", D // H)
    eps = cfg["rms_norm_eps"]
    gemma = kind in ("gemma2", "gemma3_text")
    scale = cfg.get("query_pre_attn_scalar", 256) ** -0.5 if gemma else 1.0 / math.sqrt(d)
    sliding = sliding_layers(cfg)
    rotates = rope_layers(cfg)
    x = w("embed_tokens.weight")[ids]
    if gemma:
        x = x * math.sqrt(D)
    keep(x)
    attns = []
    for i in range(cfg["num_hidden_layers"]):
        h = "layers.%d." % i
        x = hooks.resid(i, x) if hooks else x

        def lin(name, inp):
            out = inp @ w(h + name + ".weight").T
            b = w.t.get(w.p + h + name + ".bias")
            return out if b is None else out + b

        if kind == "olmo2":  # no pre-norm; q and k normed over the whole projection, then split
            a = x
            q = heads(rms(lin("self_attn.q_proj", a), w(h + "self_attn.q_norm.weight"), eps), H)
            k = heads(rms(lin("self_attn.k_proj", a), w(h + "self_attn.k_norm.weight"), eps), G)
        elif kind == "phi3":  # one qkv_proj: q, k, v rows one after another
            a = rms(x, w(h + "input_layernorm.weight"), eps)
            q, k, v = lin("self_attn.qkv_proj", a).split([H * d, G * d, G * d], dim=1)
            q, k = heads(q, H), heads(k, G)
        else:
            a = rms(x, w(h + "input_layernorm.weight"), eps, gemma)
            q, k = heads(lin("self_attn.q_proj", a), H), heads(lin("self_attn.k_proj", a), G)
        if kind in ("qwen3", "gemma3_text"):  # RMSNorm over each head's features, before RoPE
            q = rms(q, w(h + "self_attn.q_norm.weight"), eps, gemma)
            k = rms(k, w(h + "self_attn.k_norm.weight"), eps, gemma)
        if rotates[i]:
            inv, dim = layer_rope(cfg, d, sliding[i], L)
            factor = rope_attention_factor(cfg)
            q, k = apply_rope(q, inv, dim, factor), apply_rope(k, inv, dim, factor)
        v = heads(v if kind == "phi3" else lin("self_attn.v_proj", a), G)
        default_window = 4096 if kind == "gemma3_text" else None  # Gemma3TextConfig's sliding_window
        window = cfg.get("sliding_window", default_window) if sliding[i] else None
        probs, ctx = attend(q, k, v, scale, causal(L, window, cache), cfg.get("attn_logit_softcapping"), hooks, i)
        attns.append(probs)
        o = lin("self_attn.o_proj", ctx)
        if kind == "olmo2":  # x + norm(attn(x)), x + norm(mlp(x))
            x = x + rms(o, w(h + "post_attention_layernorm.weight"), eps)
            m = lin("mlp.down_proj", F.silu(lin("mlp.gate_proj", x)) * lin("mlp.up_proj", x))
            x = x + rms(m, w(h + "post_feedforward_layernorm.weight"), eps)
        elif gemma:
            o = rms(o, w(h + "post_attention_layernorm.weight"), eps, True)
            x = x + o
            m = rms(x, w(h + "pre_feedforward_layernorm.weight"), eps, True)
            m = lin("mlp.down_proj", gelu_tanh(lin("mlp.gate_proj", m)) * lin("mlp.up_proj", m))
            x = x + rms(m, w(h + "post_feedforward_layernorm.weight"), eps, True)
        elif kind == "phi3":  # gate_up_proj: gate rows first
            x = x + o
            gate, up = lin("mlp.gate_up_proj", rms(x, w(h + "post_attention_layernorm.weight"), eps)).chunk(2, dim=-1)
            x = x + lin("mlp.down_proj", up * F.silu(gate))
        else:
            x = x + o
            m = rms(x, w(h + "post_attention_layernorm.weight"), eps)
            x = x + lin("mlp.down_proj", F.silu(lin("mlp.gate_proj", m)) * lin("mlp.up_proj", m))
        keep(x)
    return head_llama_like(cfg, w, x), attns


def head_llama_like(cfg, w, x):
    gemma = cfg["model_type"] in ("gemma2", "gemma3_text")
    x = rms(x, w("norm.weight"), cfg["rms_norm_eps"], gemma)
    head = w("embed_tokens.weight") if cfg["tie_word_embeddings"] else w.head("lm_head.weight")
    logits = x @ head.T
    if gemma and cfg.get("final_logit_softcapping"):
        cap = cfg["final_logit_softcapping"]
        logits = torch.tanh(logits / cap) * cap
    return logits


def forward_neox(cfg, w, ids, keep, cache=None, hooks=None):
    D, H, L = cfg["hidden_size"], cfg["num_attention_heads"], len(ids)
    d, eps = D // H, cfg["layer_norm_eps"]
    inv, dim = rope_inv_freq(cfg, d)
    x = w("embed_in.weight")[ids]
    keep(x)
    attns = []
    for i in range(cfg["num_hidden_layers"]):
        h = "layers.%d." % i
        x = hooks.resid(i, x) if hooks else x
        a = F.layer_norm(x, (D,), w(h + "input_layernorm.weight"), w(h + "input_layernorm.bias"), eps)
        qkv = a @ w(h + "attention.query_key_value.weight").T + w(h + "attention.query_key_value.bias")
        qkv = qkv.view(L, H, 3 * d).transpose(0, 1)  # [H, L, 3d]: per head q, k, v
        q, k, v = qkv[..., :d], qkv[..., d:2 * d], qkv[..., 2 * d:]
        probs, ctx = attend(apply_rope(q, inv, dim), apply_rope(k, inv, dim), v, 1.0 / math.sqrt(d), causal(L, cache=cache),
                             hooks=hooks, layer=i)
        attns.append(probs)
        attn_out = ctx @ w(h + "attention.dense.weight").T + w(h + "attention.dense.bias")

        def mlp(inp):
            m = F.gelu(inp @ w(h + "mlp.dense_h_to_4h.weight").T + w(h + "mlp.dense_h_to_4h.bias"))
            return m @ w(h + "mlp.dense_4h_to_h.weight").T + w(h + "mlp.dense_4h_to_h.bias")

        ln2 = lambda t: F.layer_norm(t, (D,), w(h + "post_attention_layernorm.weight"),
                                     w(h + "post_attention_layernorm.bias"), eps)
        if cfg.get("use_parallel_residual", True):
            x = x + attn_out + mlp(ln2(x))
        else:
            x = x + attn_out
            x = x + mlp(ln2(x))
        keep(x)
    return head_neox(cfg, w, x), attns


def head_neox(cfg, w, x):
    x = F.layer_norm(x, (cfg["hidden_size"],), w("final_layer_norm.weight"), w("final_layer_norm.bias"),
                     cfg["layer_norm_eps"])
    return x @ w.head("embed_out.weight").T


def forward_bert(cfg, w, ids, keep, cache=None, hooks=None):
    D, H, L = cfg["hidden_size"], cfg["num_attention_heads"], len(ids)
    eps = cfg["layer_norm_eps"]
    e = "embeddings."
    x = w(e + "word_embeddings.weight")[ids] + w(e + "position_embeddings.weight")[:L] + \
        w(e + "token_type_embeddings.weight")[0]
    x = F.layer_norm(x, (D,), w(e + "LayerNorm.weight"), w(e + "LayerNorm.bias"), eps)
    keep(x)
    attns = []
    everything = torch.ones(L, L, dtype=torch.bool)
    for i in range(cfg["num_hidden_layers"]):
        h = "encoder.layer.%d." % i
        x = hooks.resid(i, x) if hooks else x
        lin = lambda name, t: t @ w(h + name + ".weight").T + w(h + name + ".bias")
        q, k, v = (heads(lin("attention.self." + n, x), H) for n in ("query", "key", "value"))
        probs, ctx = attend(q, k, v, 1.0 / math.sqrt(D // H), everything, hooks=hooks, layer=i)
        attns.append(probs)
        x = F.layer_norm(lin("attention.output.dense", ctx) + x, (D,), w(h + "attention.output.LayerNorm.weight"),
                         w(h + "attention.output.LayerNorm.bias"), eps)
        m = lin("output.dense", F.gelu(lin("intermediate.dense", x)))
        x = F.layer_norm(m + x, (D,), w(h + "output.LayerNorm.weight"), w(h + "output.LayerNorm.bias"), eps)
        keep(x)
    return head_bert(cfg, w, x), attns


def head_bert(cfg, w, x):
    D, eps, e = cfg["hidden_size"], cfg["layer_norm_eps"], "embeddings."
    if w.head("cls.predictions.transform.dense.weight") is None:
        return None
    t = F.gelu(x @ w.head("cls.predictions.transform.dense.weight").T + w.head("cls.predictions.transform.dense.bias"))
    t = F.layer_norm(t, (D,), w.head("cls.predictions.transform.LayerNorm.weight"),
                     w.head("cls.predictions.transform.LayerNorm.bias"), eps)
    return t @ w(e + "word_embeddings.weight").T + w.head("cls.predictions.bias")


# ---------------------------------------------------------------- small tokenizers

def bytes_to_unicode():
    """GPT-2's printable stand-in for each byte."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, map(chr, cs)))


def write_byte_level_bpe(folder, as_vocab_merges=False):
    """A byte-level BPE without merges: token id = byte value (ids = the UTF-8 bytes)."""
    vocab = {c: b for b, c in bytes_to_unicode().items()}
    if as_vocab_merges:  # GPT-2's original files
        with open(os.path.join(folder, "vocab.json"), "w", encoding="utf-8") as f:
            json.dump(vocab, f, ensure_ascii=False)
        with open(os.path.join(folder, "merges.txt"), "w", encoding="utf-8") as f:
            f.write("#version: 0.2\n")
        return
    level = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True}
    tok = {"version": "1.0", "truncation": None, "padding": None, "added_tokens": [], "normalizer": None,
           "pre_tokenizer": level, "post_processor": level, "decoder": level,
           "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
                     "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False, "vocab": vocab,
                     "merges": []}}
    with open(os.path.join(folder, "tokenizer.json"), "w", encoding="utf-8") as f:
        json.dump(tok, f, ensure_ascii=False)


WORDPIECE_WORDS = ["the", "attention", "head", "##s", "注", "意", "力", "a", "b", "##b", "x"]


def write_wordpiece(folder):
    """BERT's pipeline: [CLS] ... [SEP], lowercase, CJK characters split, unknown -> [UNK]."""
    vocab = {"[PAD]": 0, "[UNK]": 1, "[CLS]": 2, "[SEP]": 3, "[MASK]": 4}
    for w in WORDPIECE_WORDS:
        vocab[w] = len(vocab)
    special = [{"id": i, "content": s, "single_word": False, "lstrip": False, "rstrip": False, "normalized": False,
                "special": True} for s, i in vocab.items() if i < 5]
    tok = {"version": "1.0", "truncation": None, "padding": None, "added_tokens": special,
           "normalizer": {"type": "BertNormalizer", "clean_text": True, "handle_chinese_chars": True,
                          "strip_accents": None, "lowercase": True},
           "pre_tokenizer": {"type": "BertPreTokenizer"},
           "post_processor": {"type": "TemplateProcessing",
                              "single": [{"SpecialToken": {"id": "[CLS]", "type_id": 0}},
                                         {"Sequence": {"id": "A", "type_id": 0}},
                                         {"SpecialToken": {"id": "[SEP]", "type_id": 0}}],
                              "pair": [],
                              "special_tokens": {"[CLS]": {"id": "[CLS]", "ids": [2], "tokens": ["[CLS]"]},
                                                 "[SEP]": {"id": "[SEP]", "ids": [3], "tokens": ["[SEP]"]}}},
           "decoder": None,
           "model": {"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##",
                     "max_input_chars_per_word": 100, "vocab": vocab}}
    with open(os.path.join(folder, "tokenizer.json"), "w", encoding="utf-8") as f:
        json.dump(tok, f, ensure_ascii=False)


SENTENCEPIECE_WORDS = ["\u2581", "h", "i", "hi", "\u2581hi", "\u2581the", "\u2581a", "\u2581head"]


def write_sentencepiece_bpe(folder, words=SENTENCEPIECE_WORDS, byte_fallback=True):
    """Llama 2's pipeline (Prepend + Replace "▁", BPE with byte fallback, "<s> $A"): <unk> <s>
    </s>, then <0x00>..<0xFF> at ids 3..258 when byte_fallback, then `words` (merges: every
    word made of two others, e.g. "h i", "▁ hi")."""
    vocab = {"<unk>": 0, "<s>": 1, "</s>": 2}
    if byte_fallback:
        vocab.update({"<0x%02X>" % b: 3 + b for b in range(256)})
    for w in words:
        vocab[w] = len(vocab)
    merges = ["%s %s" % (w[:i], w[i:]) for w in words for i in range(1, len(w)) if w[:i] in vocab and w[i:] in vocab]
    special = [{"id": i, "content": s, "single_word": False, "lstrip": False, "rstrip": False, "normalized": False,
                "special": True} for s, i in (("<unk>", 0), ("<s>", 1), ("</s>", 2))]
    tok = {"version": "1.0", "truncation": None, "padding": None, "added_tokens": special,
           "normalizer": {"type": "Sequence", "normalizers": [
               {"type": "Prepend", "prepend": "\u2581"},
               {"type": "Replace", "pattern": {"String": " "}, "content": "\u2581"}]},
           "pre_tokenizer": None,
           "post_processor": {"type": "TemplateProcessing",
                              "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}},
                                         {"Sequence": {"id": "A", "type_id": 0}}],
                              "pair": [], "special_tokens": {"<s>": {"id": "<s>", "ids": [1], "tokens": ["<s>"]}}},
           "decoder": None,
           "model": {"type": "BPE", "dropout": None, "unk_token": "<unk>", "continuing_subword_prefix": None,
                     "end_of_word_suffix": None, "fuse_unk": True, "byte_fallback": byte_fallback,
                     "ignore_merges": False, "vocab": vocab, "merges": merges}}
    with open(os.path.join(folder, "tokenizer.json"), "w", encoding="utf-8") as f:
        json.dump(tok, f, ensure_ascii=False)
    return vocab
