"""Bundles and independent references for `attnscope compute`.

Two references, neither sharing code with attnscope:
  numpy_reference: float64 NumPy, straight from the formulas (nn.Linear: y = x W^T + b).
  torch_reference: PyTorch 1.13 nn.MultiheadAttention loaded with the bundle's weights
                   (or, when Dq != D, which nn.MultiheadAttention cannot take, the same
                   pipeline written with torch ops in float32).
Masks are rebuilt here from the spec text, independently of core/mask.cpp.

Run with /usr/bin/python3 (the interpreter that has numpy and torch).
"""
import json
import math
import os
import shutil
import subprocess

import numpy as np

BIN = os.environ.get("ATTNSCOPE_BIN", "")
TMP = os.environ.get("ATTNSCOPE_TEST_TMP", "/tmp/attnscope-tests")

OUTPUT_FILES = ["scores.npy", "probs.npy", "output.npy", "q.npy", "k.npy", "v.npy",
                "context.npy", "mask.npy", "fully_masked.npy", "shapes.json"]


def case_dir(group, name):
    """An empty folder TMP/group/name for one test case (what an earlier run left is removed)."""
    path = os.path.join(TMP, group, name)
    shutil.rmtree(path, ignore_errors=True)
    os.makedirs(path)
    return path


def export_map(bundle, out, what, fmt, b, layer=0, head=0):
    """The .FMT file that `attnscope export BUNDLE --what WHAT` writes for one map of batch item b."""
    proc = subprocess.run([BIN, "export", bundle, "--what", what, "--layers", str(layer), "--heads", str(head),
                           "--batch", str(b), "--format", fmt, "--out", out], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return [p for p in proc.stdout.split() if p.endswith("." + fmt)][0]


def csv_axes(path):
    """(query labels, key labels) of an exported .csv (labels hold no commas here)."""
    with open(path, encoding="utf-8") as f:
        rows = [line.rstrip("\n").split(",") for line in f]
    return [r[0] for r in rows[1:]], rows[0][1:]


# ---------------------------------------------------------------- bundles

def xavier(rng, rows, cols):
    bound = math.sqrt(6.0 / (rows + cols))
    return rng.uniform(-bound, bound, size=(rows, cols)).astype(np.float32)


def make_case(seed, B=2, L=5, S=None, D=8, Dq=None, Dk=None, Dv=None, bias=True, cross=None,
              two_d_query=False):
    """Random inputs and weights as float32 arrays. cross=None means cross iff S/Dk/Dv given."""
    rng = np.random.default_rng(seed)
    Dq = D if Dq is None else Dq
    if cross is None:
        cross = S is not None or Dk is not None or Dv is not None
    S = L if S is None else S
    Dk = Dq if Dk is None else Dk
    Dv = Dq if Dv is None else Dv
    case = {"query": rng.standard_normal((B, L, Dq)).astype(np.float32)}
    if cross:
        case["key"] = rng.standard_normal((B, S, Dk)).astype(np.float32)
        case["value"] = rng.standard_normal((B, S, Dv)).astype(np.float32)
    case["w_q"] = xavier(rng, D, Dq)
    case["w_k"] = xavier(rng, D, Dk)
    case["w_v"] = xavier(rng, D, Dv)
    case["w_o"] = rng.uniform(-1 / math.sqrt(D), 1 / math.sqrt(D), size=(D, D)).astype(np.float32)
    if bias:
        for name in ("b_q", "b_k", "b_v", "b_o"):
            case[name] = (0.1 * rng.standard_normal(D)).astype(np.float32)
    if two_d_query:
        assert B == 1
        case["query"] = case["query"][0]
    return case


def write_bundle(path, arrays, meta=None, texts=None):
    """arrays: name -> ndarray (saved as name.npy); texts: file name -> str."""
    os.makedirs(path, exist_ok=True)
    for name, array in arrays.items():
        np.save(os.path.join(path, name + ".npy"), array)
    if meta is not None:
        with open(os.path.join(path, "bundle.json"), "w") as f:
            json.dump(meta, f)
    for name, text in (texts or {}).items():
        with open(os.path.join(path, name), "w") as f:
            f.write(text)
    return path


def run_compute(args, timeout=120):
    return subprocess.run([BIN, "compute"] + list(args), capture_output=True, text=True,
                          errors="backslashreplace", timeout=timeout)


def load_outputs(out_dir):
    result = {}
    for name in OUTPUT_FILES:
        full = os.path.join(out_dir, name)
        if name.endswith(".npy"):
            result[name[:-4]] = np.load(full)
        else:
            with open(full) as f:
                result["shapes"] = json.load(f)
    dropped = os.path.join(out_dir, "probs_dropped.npy")
    if os.path.exists(dropped):
        result["probs_dropped"] = np.load(dropped)
    return result


# ---------------------------------------------------------------- masks

def segment_ids(sizes, n):
    ids = np.empty(n, dtype=np.int64)
    pos = 0
    for seg, size in enumerate(sizes):
        ids[pos:min(pos + size, n)] = seg
        pos += size
        if pos >= n:
            break
    if pos < n:
        ids[pos:] = len(sizes)  # everything past the listed sizes: one trailing segment
    return ids


def _padding_rule(i, j, arg, sink, valid_lens, key_padding):
    if valid_lens is not None:
        return np.arange(j.shape[1])[None, None, :] < np.asarray(valid_lens)[:, None, None]
    return key_padding[:, None, :]


def _segments_rule(i, j, arg, sink, valid_lens, key_padding):
    sizes = [int(x) for x in arg.split(",")]
    q, k = segment_ids(sizes, i.shape[0]), segment_ids(sizes, j.shape[1])
    return (q[:, None] == k[None, :])[None]


# One rule per mask term (core/attention/mask.h), written independently of the core's table:
# (i [L, 1], j [1, S], the term's argument, sink [1, S], valid_lens, key_padding) -> allowed,
# [L, S] or [B, L, S]. test_compute_errors checks that every term --mask names has a rule.
# sinks:K blocks nothing itself: it keeps keys j < K visible through the window terms.
MASK_TERM_RULES = {
    "causal": lambda i, j, arg, sink, *_: j <= i,
    "causal-br": lambda i, j, arg, sink, *_: j <= i + j.shape[1] - i.shape[0],
    "window": lambda i, j, arg, sink, *_: (np.abs(i - j) <= int(arg)) | sink,
    "causal-window": lambda i, j, arg, sink, *_: (j <= i) & ((j >= i - int(arg)) | sink),
    "sinks": lambda i, j, arg, sink, *_: np.ones((i.shape[0], j.shape[1]), dtype=bool),
    "prefix": lambda i, j, arg, sink, *_: (j < int(arg)) | (j <= i),
    "segments": _segments_rule,
    "padding": _padding_rule,
}


def spec_mask(spec, B, L, S, valid_lens=None, key_padding=None):
    """allowed [B, L, S] for the text spec, True = may attend."""
    i = np.arange(L)[:, None]
    j = np.arange(S)[None, :]
    allowed = np.ones((B, L, S), dtype=bool)
    if spec in (None, "", "none"):
        return allowed
    sink = np.zeros((1, S), dtype=bool)
    for term in spec.split("+"):
        if term.startswith("sinks:"):
            sink = (j < int(term.partition(":")[2]))
    for term in spec.split("+"):
        name, _, arg = term.partition(":")
        if name not in MASK_TERM_RULES:
            raise ValueError("unknown mask term " + term)
        rule = MASK_TERM_RULES[name](i, j, arg, sink, valid_lens, key_padding)
        allowed &= rule if rule.ndim == 3 else rule[None]
    return allowed


def combined_mask(spec, B, L, S, valid_lens=None, key_padding=None, attn_mask=None):
    """Spec terms AND the bundle's attn_mask [L,S]/[B,L,S] AND key_padding [B,S]."""
    allowed = spec_mask(spec, B, L, S, valid_lens, key_padding)
    if attn_mask is not None:
        allowed &= attn_mask if attn_mask.ndim == 3 else attn_mask[None]
    if key_padding is not None:
        allowed &= key_padding[:, None, :]
    return allowed


# ---------------------------------------------------------------- references

def _inputs(case):
    query = case["query"]
    if query.ndim == 2:
        query = query[None]
    key = case.get("key", query)
    value = case.get("value", query)
    if key.ndim == 2:
        key, value = key[None], value[None]
    return query, key, value


def numpy_reference(case, heads, allowed, scale=None, fill="inf", probs_dropped=None):
    """float64 reference. scale None = 1/sqrt(d); masked scores = fill; a fully masked row
    gets probabilities 0 with -inf (uniform with -1e9, since every entry equals -1e9)."""
    query, key, value = (x.astype(np.float64) for x in _inputs(case))
    w = {n: case[n].astype(np.float64) for n in ("w_q", "w_k", "w_v", "w_o")}
    D = w["w_q"].shape[0]
    b = {n: case[n].astype(np.float64) if n in case else np.zeros(D) for n in ("b_q", "b_k", "b_v", "b_o")}
    B, L, _ = query.shape
    S = key.shape[1]
    H = heads
    d = D // H
    scale = 1.0 / math.sqrt(d) if scale is None else scale

    def split(x, T):
        return x.reshape(B, T, H, d).transpose(0, 2, 1, 3)

    q = split(query @ w["w_q"].T + b["b_q"], L)
    k = split(key @ w["w_k"].T + b["b_k"], S)
    v = split(value @ w["w_v"].T + b["b_v"], S)
    scores = np.einsum("bhld,bhsd->bhls", q, k) * scale
    mask4 = np.broadcast_to(allowed[:, None], scores.shape)
    fill_value = -np.inf if fill == "inf" else -1e9
    scores = np.where(mask4, scores, fill_value)
    row_any = mask4.any(axis=-1, keepdims=True)
    if fill == "inf":
        safe = np.where(mask4, scores, -np.inf)
        row_max = np.where(row_any, safe.max(axis=-1, keepdims=True, initial=-np.inf), 0.0)
        e = np.where(mask4, np.exp(np.where(mask4, scores, 0.0) - row_max), 0.0)
        total = e.sum(axis=-1, keepdims=True)
        probs = np.where(row_any, e / np.where(total == 0, 1, total), 0.0)
    else:
        m = scores.max(axis=-1, keepdims=True)
        e = np.exp(scores - m)
        probs = e / e.sum(axis=-1, keepdims=True)
    used = probs if probs_dropped is None else probs_dropped.astype(np.float64)
    context_heads = np.einsum("bhls,bhsd->bhld", used, v)
    context = context_heads.transpose(0, 2, 1, 3).reshape(B, L, D)
    output = context @ w["w_o"].T + b["b_o"]
    return {"q": q, "k": k, "v": v, "scores": scores, "probs": probs, "context": context,
            "output": output, "fully_masked": ~allowed.any(axis=-1)}


def torch_reference(torch, case, heads, allowed, scale=None, fill="inf"):
    """PyTorch 1.13. Returns probs [B,H,L,S] and output [B,L,D] as float64 NumPy arrays
    (NaN where torch gives NaN: rows whose keys are all masked)."""
    query, key, value = _inputs(case)
    B, L, Dq = query.shape
    S, Dk, Dv = key.shape[1], key.shape[2], value.shape[2]
    D = case["w_q"].shape[0]
    d = D // heads
    # nn.MultiheadAttention always divides by sqrt(d): fold another scale into W_q and b_q.
    q_factor = 1.0 if scale is None else scale * math.sqrt(d)
    has_bias = any(n in case for n in ("b_q", "b_k", "b_v", "b_o"))
    zeros = np.zeros(D, dtype=np.float32)
    bias = {n: case.get(n, zeros) for n in ("b_q", "b_k", "b_v", "b_o")}
    t = lambda x: torch.from_numpy(np.ascontiguousarray(x, dtype=np.float32))  # noqa: E731
    blocked = torch.from_numpy(~allowed)  # torch bool masks: True = NOT allowed
    if fill == "inf":
        attn_mask = blocked.repeat_interleave(heads, dim=0)  # [B*H, L, S], index b*H + h
    else:  # additive -1e9, as masked_fill(mask == 0, -1e9) in seeds 000/003
        attn_mask = (blocked.float() * -1e9).repeat_interleave(heads, dim=0)

    with torch.no_grad():
        if Dq == D:
            mha = torch.nn.MultiheadAttention(D, heads, bias=has_bias, batch_first=True, kdim=Dk, vdim=Dv)
            mha.eval()
            w_q = t(case["w_q"] * q_factor)
            if mha._qkv_same_embed_dim:
                mha.in_proj_weight.copy_(torch.cat([w_q, t(case["w_k"]), t(case["w_v"])]))
            else:
                mha.q_proj_weight.copy_(w_q)
                mha.k_proj_weight.copy_(t(case["w_k"]))
                mha.v_proj_weight.copy_(t(case["w_v"]))
            mha.out_proj.weight.copy_(t(case["w_o"]))
            if has_bias:
                mha.in_proj_bias.copy_(torch.cat([t(bias["b_q"] * q_factor), t(bias["b_k"]), t(bias["b_v"])]))
                mha.out_proj.bias.copy_(t(bias["b_o"]))
            output, probs = mha(t(query), t(key), t(value), attn_mask=attn_mask, need_weights=True,
                                average_attn_weights=False)
        else:
            # Dq != D: nn.MultiheadAttention needs query size == D, so spell the pipeline out.
            F = torch.nn.functional
            q = F.linear(t(query), t(case["w_q"]), t(bias["b_q"]))
            k = F.linear(t(key), t(case["w_k"]), t(bias["b_k"]))
            v = F.linear(t(value), t(case["w_v"]), t(bias["b_v"]))
            q = q.view(B, L, heads, d).transpose(1, 2)
            k = k.view(B, S, heads, d).transpose(1, 2)
            v = v.view(B, S, heads, d).transpose(1, 2)
            scores = torch.matmul(q, k.transpose(-2, -1)) * (1 / math.sqrt(d) if scale is None else scale)
            mask4 = attn_mask.view(B, heads, L, S)
            if fill == "inf":
                scores = scores.masked_fill(mask4, float("-inf"))
            else:
                scores = scores + mask4
            probs = torch.softmax(scores, dim=-1)
            context = torch.matmul(probs, v).transpose(1, 2).contiguous().view(B, L, D)
            output = F.linear(context, t(case["w_o"]), t(bias["b_o"]))
    return {"probs": probs.double().numpy(), "output": output.double().numpy()}
