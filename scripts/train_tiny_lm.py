#!/usr/bin/python3
"""Trains the tiny transformers that attnscope ships in assets/models/ (CPU, Debian's torch 1.13).

  python-code     character-level model of Python source, trained on the standard library
                  Debian installs (/usr/lib/python3.11/*.py, a fixed held-out file set). 10% of
                  the training windows carry a random string repeated twice, so that an
                  induction (copying) head forms.
  reverse-digits  algorithmic model: "31415=51413." (a digit string, '=', the string reversed,
                  '.'); its copying head draws an anti-diagonal.

Each model is written in the attnscope-model/1 folder format (see docs/models.md, "Model folders"):
config.json, vocab.json, one float32 .npy per tensor, plus
  training.json   steps, wall time, corpus files and sha256, final train / validation loss in
                  bits per character, per-head pattern scores and the probe texts they used;
  validation.txt  (python-code) the fixed held-out text the validation loss is measured on;
  eval.txt        (reverse-digits) the fixed test strings the accuracy is measured on.
Seeded and deterministic for a fixed thread count. Run with the environment
  MALLOC_MMAP_MAX_=0 MALLOC_TRIM_THRESHOLD_=100000000000
(otherwise fresh tensors page-fault on every step and training runs several times slower).

  /usr/bin/python3 scripts/train_tiny_lm.py python-code --out assets/models --threads 2
  /usr/bin/python3 scripts/train_tiny_lm.py reverse-digits --out assets/models --threads 1
"""
import argparse
import glob
import hashlib
import json
import math
import os
import random
import shutil
import string
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

LN2 = math.log(2.0)
UNK_LABEL = "\ufffd"  # the vocabulary entry of the unknown id (never matched by a character)


# ---------------------------------------------------------------- model

class Softmax(torch.autograd.Function):
    """Softmax over the last axis; torch 1.13's own backward is very slow on this build."""

    @staticmethod
    def forward(ctx, x):
        a = torch.softmax(x, dim=-1)
        ctx.save_for_backward(a)
        return a

    @staticmethod
    def backward(ctx, g):
        (a,) = ctx.saved_tensors
        return a * (g - (g * a).sum(dim=-1, keepdim=True))


def sinusoidal(max_len, d):
    """pe[p, 2i] = sin(p / 10000^(2i/d)), pe[p, 2i+1] = cos(same) (seed 003)."""
    position = torch.arange(max_len, dtype=torch.float64).unsqueeze(1)
    div_term = torch.exp(torch.arange(0, d, 2, dtype=torch.float64) * -(math.log(10000.0) / d))
    pe = torch.zeros(max_len, d, dtype=torch.float64)
    pe[:, 0::2] = torch.sin(position * div_term)
    pe[:, 1::2] = torch.cos(position * div_term)[:, :d // 2]
    return pe.float()


class Block(torch.nn.Module):
    def __init__(self, cfg):
        super().__init__()
        D, M = cfg["d_model"], cfg["d_mlp"]
        self.H = cfg["n_heads"]
        self.eps = cfg["ln_eps"]
        self.ln1 = torch.nn.LayerNorm(D, eps=self.eps)
        self.q = torch.nn.Linear(D, D)
        self.k = torch.nn.Linear(D, D)
        self.v = torch.nn.Linear(D, D)
        self.o = torch.nn.Linear(D, D)
        self.mlp = cfg["mlp"]
        if self.mlp:
            self.ln2 = torch.nn.LayerNorm(D, eps=self.eps)
            self.w_in = torch.nn.Linear(D, M)
            self.w_out = torch.nn.Linear(M, D)

    def forward(self, x, keep_probs=False):
        B, L, D = x.shape
        H, d = self.H, D // self.H
        h = self.ln1(x)
        # q, k, v: [B, H, L, d]
        q = self.q(h).view(B, L, H, d).transpose(1, 2)
        k = self.k(h).view(B, L, H, d).transpose(1, 2)
        v = self.v(h).view(B, L, H, d).transpose(1, 2)
        scores = (q @ k.transpose(-1, -2)) / math.sqrt(d)  # [B, H, L, L]
        causal = torch.ones(L, L, dtype=torch.bool).triu(1)
        probs = Softmax.apply(scores.masked_fill(causal, float("-inf")))
        ctx = (probs @ v).transpose(1, 2).reshape(B, L, D)
        x = x + self.o(ctx)
        if self.mlp:
            x = x + self.w_out(F.gelu(self.w_in(self.ln2(x))))
        return x, (probs if keep_probs else None)


class TinyLM(torch.nn.Module):
    """GPT-2 style decoder in the layout of the attnscope-model/1 format (learned positions)."""

    def __init__(self, cfg):
        super().__init__()
        V, D = cfg["vocab_size"], cfg["d_model"]
        self.tok_emb = torch.nn.Parameter(torch.randn(V, D) * 0.02)
        self.learned_positions = cfg.get("positional", "learned") == "learned"
        if self.learned_positions:
            self.pos_emb = torch.nn.Parameter(torch.randn(cfg["max_len"], D) * 0.02)
        else:  # seed 003's table, added unscaled (a buffer: not trained, not exported)
            self.register_buffer("pos_emb", sinusoidal(cfg["max_len"], D))
        self.blocks = torch.nn.ModuleList(Block(cfg) for _ in range(cfg["n_layers"]))
        self.ln_f = torch.nn.LayerNorm(D, eps=cfg["ln_eps"])
        self.lm_head = torch.nn.Parameter(torch.randn(V, D) * 0.02)
        for blk in self.blocks:  # GPT-2: residual projections scaled down with depth
            torch.nn.init.normal_(blk.o.weight, std=0.02 / math.sqrt(2 * cfg["n_layers"]))

    def forward(self, ids, keep_probs=False):
        L = ids.shape[1]
        x = self.tok_emb[ids] + self.pos_emb[:L]
        probs = []
        for blk in self.blocks:
            x, p = blk(x, keep_probs)
            probs.append(p)
        logits = self.ln_f(x) @ self.lm_head.t()  # [B, L, V]
        return logits, probs

    def format_parameters(self):
        """name -> parameter, named as the attnscope-model/1 format names its .npy files."""
        t = {"tok_emb": self.tok_emb, "ln_f.weight": self.ln_f.weight, "ln_f.bias": self.ln_f.bias,
             "lm_head": self.lm_head}
        if self.learned_positions:
            t["pos_emb"] = self.pos_emb
        for i, blk in enumerate(self.blocks):
            p = f"blocks.{i}."
            t[p + "ln1.weight"], t[p + "ln1.bias"] = blk.ln1.weight, blk.ln1.bias
            for n in "qkvo":
                lin = getattr(blk, n)
                t[p + f"attn.w_{n}"], t[p + f"attn.b_{n}"] = lin.weight, lin.bias
            if blk.mlp:
                t[p + "ln2.weight"], t[p + "ln2.bias"] = blk.ln2.weight, blk.ln2.bias
                t[p + "mlp.w_in"], t[p + "mlp.b_in"] = blk.w_in.weight, blk.w_in.bias
                t[p + "mlp.w_out"], t[p + "mlp.b_out"] = blk.w_out.weight, blk.w_out.bias
        return t

    def export_tensors(self):
        return {k: v.detach().numpy().astype(np.float32) for k, v in self.format_parameters().items()}

    def import_tensors(self, folder):
        """Continues from a model folder written by export_tensors (same configuration)."""
        with torch.no_grad():
            for name, param in self.format_parameters().items():
                param.copy_(torch.from_numpy(np.load(os.path.join(folder, name + ".npy"))))


def cosine_lr(step, steps, peak, warmup):
    if step < warmup:
        return peak * (step + 1) / warmup
    progress = (step - warmup) / max(1, steps - warmup)
    return peak * (0.1 + 0.9 * 0.5 * (1.0 + math.cos(math.pi * progress)))


def make_optimizer(model, lr):
    decay = [p for n, p in model.named_parameters() if p.dim() == 2]
    no_decay = [p for n, p in model.named_parameters() if p.dim() != 2]
    return torch.optim.AdamW([{"params": decay, "weight_decay": 0.1},
                              {"params": no_decay, "weight_decay": 0.0}], lr=lr, betas=(0.9, 0.95))


# ---------------------------------------------------------------- pattern scores
# Per-head scores, each a mean attention probability over the query positions where the
# pattern is defined (training.json "pattern_definitions" says the same in words).

def train_step(model, opt, ids, step, args, mask=None):
    """One optimiser step on next-token prediction over ids [B, W]: the loss on every position,
    or only where mask [B, W-1] is True. Returns the loss (nats)."""
    for g in opt.param_groups:
        g["lr"] = cosine_lr(step, args.steps, args.lr, 100)
    logits, _ = model(ids[:, :-1])
    targets = ids[:, 1:]
    if mask is None:
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))
    else:
        loss = F.cross_entropy(logits[mask], targets[mask])
    opt.zero_grad(set_to_none=True)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
    return loss


def scan_python(text):
    """Per position: (opener of the string it is inside or -1, innermost open bracket or -1).

    A small scanner, not a parser: '#' starts a comment to the end of the line; ' or " (or a
    triple of them) opens a string, closed by the same quote(s); a backslash inside a string
    escapes the next character; a newline ends a single-quoted string. Brackets ([{ nest
    outside strings and comments. Positions of the opener itself and of closing quotes are
    not "inside"."""
    n = len(text)
    in_string, in_bracket = [-1] * n, [-1] * n
    stack = []
    i = 0
    while i < n:
        c = text[i]
        if c == "#":
            while i < n and text[i] != "\n":
                i += 1
            continue
        if c in "'\"":
            quote = c * 3 if text[i:i + 3] == c * 3 else c
            opener = i
            i += len(quote)
            while i < n:
                if text[i] == "\\":
                    in_string[i] = opener
                    if i + 1 < n:
                        in_string[i + 1] = opener
                    i += 2
                    continue
                if text[i:i + len(quote)] == quote:
                    i += len(quote)
                    break
                if text[i] == "\n" and len(quote) == 1:
                    break
                in_string[i] = opener
                i += 1
            continue
        if c in "([{":
            stack.append(i)
        elif c in ")]}":
            if stack:
                stack.pop()
        elif stack:
            in_bracket[i] = stack[-1]
        i += 1
    return in_string, in_bracket


def code_pattern_targets(text):
    """pattern -> list of (query, key) pairs for one input window."""
    in_string, in_bracket = scan_python(text)
    pairs = {"previous_token": [(t, t - 1) for t in range(1, len(text))],
             "in_string": [(t, o) for t, o in enumerate(in_string) if o >= 0],
             "open_bracket": [(t, o) for t, o in enumerate(in_bracket) if o >= 0],
             "newline": []}
    last_newline = -1
    for t, c in enumerate(text):
        if last_newline >= 0:
            pairs["newline"].append((t, last_newline))
        if c == "\n":
            last_newline = t
    return pairs


def induction_targets(text):
    """A string s repeated twice: query t in the second copy -> key t - n + 1."""
    n = len(text) // 2
    return {"induction": [(t, t - n + 1) for t in range(n, 2 * n)]}


def reverse_targets(text):
    """'digits=reversed': the query predicting reversed[j] -> the key holding digits[n-1-j]."""
    n = text.index("=")
    return {"reverse_source": [(n + j, n - 1 - j) for j in range(n)]}


def accumulate_scores(sums, counts, probs, pairs):
    """probs: list over layers of [H, L, L] arrays; adds attention at the pairs per head."""
    for name, pp in pairs.items():
        if not pp:
            continue
        q = np.array([a for a, _ in pp])
        k = np.array([b for _, b in pp])
        for layer, p in enumerate(probs):
            sums.setdefault(name, np.zeros((len(probs), p.shape[0])))
            counts[name] = counts.get(name, 0)
            sums[name][layer] += p[:, q, k].sum(axis=1)
        counts[name] += len(pp)


def finish_scores(sums, counts):
    return {name: np.round(sums[name] / counts[name], 6).tolist() for name in sums}


# ---------------------------------------------------------------- shared helpers

def sha256(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def encode(text, stoi, unk_id):
    return [stoi.get(c, unk_id) for c in text]


def write_model_folder(out_dir, model, cfg, vocab, training, extra_files):
    """Writes into a staging folder and renames it into place (never a half-written model)."""
    staging = out_dir + ".staging"
    shutil.rmtree(staging, ignore_errors=True)
    os.makedirs(staging)
    with open(os.path.join(staging, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2)
        f.write("\n")
    with open(os.path.join(staging, "vocab.json"), "w") as f:
        json.dump(vocab, f, ensure_ascii=True)
        f.write("\n")
    for name, arr in model.export_tensors().items():
        np.save(os.path.join(staging, name + ".npy"), arr)
    for name, content in extra_files.items():
        with open(os.path.join(staging, name), "w", encoding="utf-8", newline="") as f:
            f.write(content)
    with open(os.path.join(staging, "training.json"), "w") as f:
        json.dump(training, f, indent=2)
        f.write("\n")
    shutil.rmtree(out_dir, ignore_errors=True)
    os.rename(staging, out_dir)


def seed_everything(seed, threads):
    torch.manual_seed(seed)
    random.seed(seed)
    np.random.seed(seed)
    torch.set_num_threads(threads)


def log(msg):
    print(msg, flush=True)


# ---------------------------------------------------------------- python-code

STDLIB = "/usr/lib/python3.11"
HELD_OUT = ["bisect.py", "calendar.py", "colorsys.py", "fnmatch.py", "glob.py", "heapq.py",
            "queue.py", "shlex.py", "string.py", "textwrap.py"]
VALIDATION_WINDOWS = 64   # the shipped validation text: 64 windows of max_len + 1 characters
INDUCTION_PROBES = 32
INDUCTION_LEN = 48        # probe = 48 random characters repeated twice (96 characters)
PROBE_ALPHABET = string.ascii_letters + string.digits


def windows_of(text, max_len):
    """Window k = text[k*max_len : k*max_len + max_len + 1]: input = its first max_len
    characters, targets = its last max_len; every character but the first is predicted once."""
    return [text[k * max_len:k * max_len + max_len + 1] for k in range((len(text) - 1) // max_len)]


def read_corpus():
    files = sorted(glob.glob(os.path.join(STDLIB, "*.py")))
    if not files:
        sys.exit(f"error: no Python files in {STDLIB}")
    texts = {}
    for path in files:
        with open(path, encoding="utf-8", errors="replace") as f:
            texts[os.path.basename(path)] = f.read()
    missing = [h for h in HELD_OUT if h not in texts]
    if missing:
        sys.exit(f"error: held-out files missing from {STDLIB}: {', '.join(missing)}")
    return files, texts


def code_vocab(train_text):
    counts = {}
    for c in train_text:
        counts[c] = counts.get(c, 0) + 1
    chars = sorted(c for c, n in counts.items() if n >= 50 and c != UNK_LABEL)
    return [UNK_LABEL] + chars  # unk_id = 0


def validation_text(texts, max_len):
    """From each held-out file, a contiguous slice starting a third of the way in."""
    per_file = (VALIDATION_WINDOWS * max_len) // len(HELD_OUT)
    parts = []
    for name in HELD_OUT:
        t = texts[name]
        start = len(t) // 3
        parts.append(t[start:start + per_file])
    text = "".join(parts)
    need = VALIDATION_WINDOWS * max_len + 1
    return (text + texts[HELD_OUT[0]])[:need]


def model_probs(model, ids):
    """ids [L] -> (logits [L, V], list of [H, L, L] numpy arrays) for one text."""
    with torch.no_grad():
        logits, probs = model(torch.tensor([ids]), keep_probs=True)
    return logits[0], [p[0].numpy() for p in probs]


def bits_per_char(model, windows, stoi, unk_id, batch=32):
    """Mean next-character cross-entropy in bits over every target of every window."""
    total, count = 0.0, 0
    with torch.no_grad():
        for b in range(0, len(windows), batch):
            ids = torch.tensor([encode(w, stoi, unk_id) for w in windows[b:b + batch]])
            logits, _ = model(ids[:, :-1])
            loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), ids[:, 1:].reshape(-1),
                                   reduction="sum")
            total += loss.item()
            count += ids[:, 1:].numel()
    return total / count / LN2


def code_scores(model, val_windows, probes, stoi, unk_id):
    sums, counts = {}, {}
    for w in val_windows:
        text = w[:-1]
        _, probs = model_probs(model, encode(text, stoi, unk_id))
        accumulate_scores(sums, counts, probs, code_pattern_targets(text))
    correct = total = 0
    for text in probes:
        ids = encode(text, stoi, unk_id)
        logits, probs = model_probs(model, ids)
        accumulate_scores(sums, counts, probs, induction_targets(text))
        n = len(text) // 2
        pred = logits.argmax(-1).numpy()
        correct += int((pred[n:-1] == np.array(ids[n + 1:])).sum())
        total += n - 1
    return finish_scores(sums, counts), correct / total


def best_head(scores):
    arr = np.array(scores)
    layer, head = np.unravel_index(arr.argmax(), arr.shape)
    return {"layer": int(layer), "head": int(head), "score": float(arr[layer, head])}


PATTERN_NAMES = {"previous_token": "previous token", "in_string": "in-string",
                 "open_bracket": "open bracket", "newline": "last newline", "induction": "induction"}
CLEAR_HEAD = 0.3  # a head is named in the caption when its mean attention reaches this


def code_caption(training):
    """What the app shows: corpus, loss, and the heads whose pattern score is clear."""
    notable = training["notable_heads"]
    clear = [f"{PATTERN_NAMES[n]} L{h['layer']}H{h['head']} ({h['score']:.2f})"
             for n, h in notable.items() if h["score"] >= CLEAR_HEAD]
    weak = [f"{PATTERN_NAMES[n]} {h['score']:.2f}" for n, h in notable.items() if h["score"] < CLEAR_HEAD]
    return (f"Trained on the Python standard library ({len(training['corpus']['train_files'])} files); "
            f"{training['validation_bpc']:.2f} bits/char on held-out files. Clear heads: "
            f"{', '.join(clear) or 'none'}. Weaker patterns (best head): {', '.join(weak)}.")


def recaption(folder):
    """Rewrites training.json's caption of an existing python-code folder with code_caption."""
    path = os.path.join(folder, "training.json")
    with open(path) as f:
        training = json.load(f)
    training["caption"] = code_caption(training)
    with open(path, "w") as f:
        json.dump(training, f, indent=2)
        f.write("\n")
    log(training["caption"])


def train_code(args):
    seed_everything(args.seed, args.threads)
    files, texts = read_corpus()
    train_names = [n for n in sorted(texts) if n not in HELD_OUT]
    train_text = "\n\n".join(texts[n] for n in train_names)
    max_len = 128
    vocab = code_vocab(train_text)
    stoi = {c: i for i, c in enumerate(vocab) if i != 0}
    unk_id = 0
    cfg = {"format": "attnscope-model/1", "name": "python-code",
           "description": "Character-level model of Python source code, trained on the Python "
                          "standard library that Debian installs",
           "n_layers": 2, "n_heads": 4, "d_model": args.d_model, "d_mlp": 4 * args.d_model,
           "max_len": max_len,
           "vocab_size": len(vocab), "tokenizer": "chars", "unk_id": unk_id,
           "positional": "learned", "activation": "gelu", "ln_eps": 1e-5,
           "tied_embeddings": False, "mlp": True}
    data = np.array(encode(train_text, stoi, unk_id), dtype=np.int64)
    val_text = validation_text(texts, max_len)
    val_windows = windows_of(val_text, max_len)
    held_out_full = windows_of("\n\n".join(texts[n] for n in HELD_OUT), max_len)
    rng = np.random.default_rng(args.seed)
    probes = []
    for _ in range(INDUCTION_PROBES):
        s = "".join(rng.choice(list(PROBE_ALPHABET), INDUCTION_LEN))
        probes.append(s + s)
    train_eval = [train_text[i:i + max_len + 1]
                  for i in rng.integers(0, len(train_text) - max_len - 1, 256)]
    random_alphabet = np.array([stoi[c] for c in string.ascii_letters + string.digits +
                                string.punctuation + " " if c in stoi])

    model = TinyLM(cfg)
    init_training = None
    if args.init:  # a second stage: continue from an earlier run's model folder
        model.import_tensors(args.init)
        with open(os.path.join(args.init, "training.json")) as f:
            init_training = {k: v for k, v in json.load(f).items()
                             if k not in ("corpus", "probes", "pattern_scores", "history")}
        log(f"continuing from {args.init} ({init_training['steps']} steps)")
    opt = make_optimizer(model, args.lr)
    batch, W = args.batch, max_len + 1
    log(f"python-code: {len(train_names)} training files ({len(train_text)} chars), "
        f"vocab {len(vocab)}, {sum(p.numel() for p in model.parameters())} parameters")
    start = time.time()
    history = []
    for step in range(args.steps):
        offsets = rng.integers(0, len(data) - W, batch)
        x = np.stack([data[o:o + W] for o in offsets])
        for b in range(batch):  # a random string repeated twice, somewhere in the window
            if rng.random() < args.repeat_fraction:
                r = int(rng.integers(8, 61))
                s = rng.choice(random_alphabet, r)
                at = int(rng.integers(0, W - 2 * r + 1))
                x[b, at:at + r] = s
                x[b, at + r:at + 2 * r] = s
        loss = train_step(model, opt, torch.from_numpy(x), step, args)
        if step % 50 == 0:
            log(f"step {step} loss {loss.item() / LN2:.3f} bpc  {time.time() - start:.0f} s")
        if (step + 1) % args.eval_every == 0 or step + 1 == args.steps:
            model.eval()
            scores, copy_acc = code_scores(model, val_windows, probes[:8], stoi, unk_id)
            val = bits_per_char(model, held_out_full[:256], stoi, unk_id)
            model.train()
            entry = {"step": step + 1, "seconds": round(time.time() - start, 1),
                     "validation_bpc": round(val, 4),
                     "induction": best_head(scores["induction"])["score"],
                     "previous_token": best_head(scores["previous_token"])["score"]}
            history.append(entry)
            log(f"eval {json.dumps(entry)}")
    wall = time.time() - start

    model.eval()
    scores, copy_acc = code_scores(model, val_windows, probes, stoi, unk_id)
    notable = {name: best_head(s) for name, s in scores.items()}
    training = {
        "model": "python-code", "script": "scripts/train_tiny_lm.py", "seed": args.seed,
        "threads": args.threads, "torch": torch.__version__,
        "steps": args.steps, "batch": batch, "context": max_len, "optimizer":
            f"AdamW lr {args.lr} (100 warm-up steps, cosine decay to 10%), weight decay 0.1 on "
            "matrices, betas (0.9, 0.95), gradient clip 1.0",
        "repeat_fraction": args.repeat_fraction, "wall_seconds": round(wall, 1),
        "corpus": {"root": STDLIB,
                   "train_files": [{"name": n, "sha256": sha256(os.path.join(STDLIB, n))}
                                   for n in train_names],
                   "held_out_files": [{"name": n, "sha256": sha256(os.path.join(STDLIB, n))}
                                      for n in HELD_OUT]},
        "train_bpc": round(bits_per_char(model, train_eval, stoi, unk_id), 6),
        "validation_bpc": round(bits_per_char(model, val_windows, stoi, unk_id), 6),
        "held_out_bpc": round(bits_per_char(model, held_out_full, stoi, unk_id), 6),
        "validation": {"file": "validation.txt", "windows": len(val_windows),
                       "definition": "window k = text[k*max_len : k*max_len + max_len + 1]; "
                                     "input = its first max_len characters, targets = the next "
                                     "character at every position; mean cross-entropy in bits"},
        "induction_copy_accuracy": round(copy_acc, 6),
        "pattern_scores": scores,
        "notable_heads": notable,
        "pattern_definitions": {
            "previous_token": "validation windows: mean attention from position t to t-1",
            "newline": "validation windows: mean attention to the most recent newline before t",
            "in_string": "validation windows: inside a string literal, mean attention to its "
                         "opening quote (scanner: '#' comments, ' \" and triples, backslash "
                         "escapes, a newline ends a single-quoted string)",
            "open_bracket": "validation windows: inside ([{ (outside strings and comments), mean "
                            "attention to the innermost open bracket",
            "induction": "probes (a random string s of 48 letters/digits, text = s + s): query t "
                         "in the second copy, mean attention to t - 48 + 1",
        },
        "probes": {"induction": probes},
        "history": history,
    }
    if init_training:
        training["continued_from"] = init_training
    training["caption"] = code_caption(training)
    out = os.path.join(args.out, "python-code")
    write_model_folder(out, model, cfg, vocab, training, {"validation.txt": val_text})
    log(f"wrote {out}: {json.dumps({k: training[k] for k in ('train_bpc', 'validation_bpc', 'held_out_bpc', 'wall_seconds')})}")
    log("notable heads: " + json.dumps(notable))


# ---------------------------------------------------------------- reverse-digits

REV_DIGITS = 10  # a fixed length: each output position copies from one fixed input position


def reverse_example(rng):
    n = REV_DIGITS
    digits = "".join(str(d) for d in rng.integers(0, 10, n))
    return digits + "=" + digits[::-1] + "."


def reverse_batch(rng, batch, stoi, width):
    """ids [batch, width] padded with '.', and a mask of the targets that count (the reversed
    digits and the final '.')."""
    ids = np.full((batch, width), stoi["."], dtype=np.int64)
    mask = np.zeros((batch, width - 1), dtype=bool)
    for b in range(batch):
        text = reverse_example(rng)
        ids[b, :len(text)] = encode(text, stoi, 0)
        n = text.index("=")
        mask[b, n:len(text) - 1] = True
    return ids, mask


def reverse_eval(model, examples, stoi):
    """Accuracy: the argmax at every target position is right (= greedy decoding solves it)."""
    sums, counts = {}, {}
    solved = 0
    for text in examples:
        inp = text[:-1]
        logits, probs = model_probs(model, encode(inp, stoi, 0))
        n = text.index("=")
        pred = logits.argmax(-1).numpy()[n:]
        solved += int((pred == np.array(encode(text[n + 1:], stoi, 0))).all())
        accumulate_scores(sums, counts, probs, reverse_targets(inp))
    return solved / len(examples), finish_scores(sums, counts)


def train_reverse(args):
    seed_everything(args.seed, args.threads)
    vocab = [UNK_LABEL] + list("0123456789=.")
    stoi = {c: i for i, c in enumerate(vocab) if i != 0}
    width = 2 * REV_DIGITS + 2
    cfg = {"format": "attnscope-model/1", "name": "reverse-digits",
           "description": f"Reverses a string of {REV_DIGITS} digits: type them and '=', it "
                          "writes them backwards",
           "n_layers": args.layers, "n_heads": args.heads, "d_model": 64,
           "d_mlp": 256 if args.mlp else 0, "max_len": width, "vocab_size": len(vocab), "tokenizer": "chars", "unk_id": 0,
           "positional": "learned", "activation": "gelu", "ln_eps": 1e-5,
           "tied_embeddings": False, "mlp": args.mlp}
    rng = np.random.default_rng(args.seed)
    eval_rng = np.random.default_rng(args.seed + 1)
    examples = [reverse_example(eval_rng) for _ in range(200)]
    model = TinyLM(cfg)
    opt = make_optimizer(model, args.lr)
    start = time.time()
    history = []
    for step in range(args.steps):
        ids, mask = reverse_batch(rng, args.batch, stoi, width)
        loss = train_step(model, opt, torch.from_numpy(ids), step, args, torch.from_numpy(mask))
        if step % 100 == 0:
            log(f"step {step} loss {loss.item() / LN2:.4f} bits  {time.time() - start:.0f} s")
        if (step + 1) % args.eval_every == 0 or step + 1 == args.steps:
            model.eval()
            acc, _ = reverse_eval(model, examples, stoi)
            model.train()
            history.append({"step": step + 1, "seconds": round(time.time() - start, 1),
                            "accuracy": acc, "train_bits": round(loss.item() / LN2, 5)})
            log(f"eval {json.dumps(history[-1])}")
    wall = time.time() - start
    model.eval()
    acc, scores = reverse_eval(model, examples, stoi)
    notable = {name: best_head(s) for name, s in scores.items()}
    ids, mask = reverse_batch(np.random.default_rng(args.seed + 2), 512, stoi, width)
    with torch.no_grad():
        logits, _ = model(torch.from_numpy(ids[:, :-1]))
        tmask = torch.from_numpy(mask)
        train_bits = F.cross_entropy(logits[tmask], torch.from_numpy(ids[:, 1:])[tmask]).item() / LN2
    training = {
        "model": "reverse-digits", "script": "scripts/train_tiny_lm.py", "seed": args.seed,
        "threads": args.threads, "torch": torch.__version__, "steps": args.steps,
        "batch": args.batch, "context": cfg["max_len"], "optimizer":
            f"AdamW lr {args.lr} (100 warm-up steps, cosine decay to 10%), weight decay 0.1 on "
            "matrices, betas (0.9, 0.95), gradient clip 1.0",
        "wall_seconds": round(wall, 1),
        "task": f"text = digits + '=' + reversed digits + '.', {REV_DIGITS} random digits; "
                "loss on the reversed digits and the final '.' only",
        "corpus": {"generated": "random digit strings (numpy default_rng, seed)"},
        "train_bpc": round(train_bits, 6),
        "eval": {"file": "eval.txt", "examples": len(examples),
                 "definition": "input = the line without its last character; solved when the "
                               "argmax at every position from '=' on is the next character"},
        "accuracy": acc,
        "pattern_scores": scores,
        "notable_heads": notable,
        "pattern_definitions": {
            "reverse_source": "eval lines: the query predicting reversed digit j, mean attention "
                              "to the input digit it copies (position n-1-j)"},
        "history": history,
    }
    h = notable["reverse_source"]
    training["caption"] = (
        f"Reverses {REV_DIGITS} digits ({acc * 100:.1f}% of {len(examples)} test strings exactly). "
        f"Head L{h['layer']}H{h['head']} copies each digit from its mirror position "
        f"({h['score']:.2f}): the anti-diagonal.")
    out = os.path.join(args.out, "reverse-digits")
    write_model_folder(out, model, cfg, vocab, training, {"eval.txt": "\n".join(examples) + "\n"})
    log(f"wrote {out}: accuracy {acc}, wall {wall:.0f} s, notable {json.dumps(notable)}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("model", choices=["python-code", "reverse-digits"])
    ap.add_argument("--out", default="assets/models", help="parent folder of the model folder")
    ap.add_argument("--steps", type=int, default=None)
    ap.add_argument("--batch", type=int, default=None)
    ap.add_argument("--lr", type=float, default=None)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--eval-every", type=int, default=500)
    ap.add_argument("--repeat-fraction", type=float, default=0.2,
                    help="python-code: share of training windows with a random string repeated twice")
    ap.add_argument("--d-model", type=int, default=96, help="python-code: model width (d_mlp = 4x)")
    ap.add_argument("--init", help="python-code: continue from this model folder (a second stage)")
    ap.add_argument("--recaption", metavar="FOLDER",
                    help="python-code: only rewrite the caption in FOLDER/training.json")
    ap.add_argument("--heads", type=int, default=2, help="reverse-digits: heads per layer")
    ap.add_argument("--layers", type=int, default=1, help="reverse-digits: blocks")
    ap.add_argument("--no-mlp", dest="mlp", action="store_false",
                    help="reverse-digits: attention only (no MLP blocks)")
    args = ap.parse_args()
    code = args.model == "python-code"
    if args.recaption:
        return recaption(args.recaption)
    args.steps = args.steps or (3200 if code else 1500)
    args.batch = args.batch or (32 if code else 64)
    args.lr = args.lr or 3e-3
    os.makedirs(args.out, exist_ok=True)
    (train_code if code else train_reverse)(args)


if __name__ == "__main__":
    main()
