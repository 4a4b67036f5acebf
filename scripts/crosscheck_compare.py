#!/usr/bin/env python3
"""Checks attnscope against the reference outputs that scripts/crosscheck_transformers.py made
with the real `transformers` and `tokenizers` (docs/models.md, "Cross-checks against transformers").
Not part of CI: the references come from a machine that has those libraries.

    /usr/bin/python3 scripts/crosscheck_compare.py REF [--bin build/attnscope]

Per model folder: every layer's attention within 1e-5, logits within 1e-3 (`model run --ids`),
the logit lens against the hidden states within 1e-4 (`--lens`, where the binary has it), and
20 greedy tokens (`model generate`, where the binary has it). Per tokenizer: the ids of
`model run --text` equal tokenizer(text, add_special_tokens=True) for every text.
Prints one PASS / FAIL line per check; exits 1 when any fails.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

ATTN_TOL, LOGITS_TOL, LENS_TOL = 1e-5, 1e-3, 1e-4
failures = []


def report(name, ok, detail=""):
    print(("PASS " if ok else "FAIL ") + name + (": " + detail if detail else ""))
    if not ok:
        failures.append(name)


def attnscope(binary, *args):
    return subprocess.run([binary, *args], capture_output=True, text=True, timeout=300)


def token_ids(out):
    with open(os.path.join(out, "tokens.txt"), encoding="utf-8") as f:
        rows = [line.rstrip("\n").split("\t") for line in f if line.strip() and not line.startswith("#")]
    return [int(r[1]) for r in rows if r[1].lstrip("-").isdigit()]


def softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def check_lens(name, folder, out, ref_logits):
    """The lens' last layer is the model's own distribution (hidden.npy's last entry is already
    normed in most families, so only the last layer is compared with the logits here)."""
    probs_path = os.path.join(out, "lens_probs.npy")
    if not os.path.exists(probs_path):
        return
    probs, ids = np.load(probs_path), np.load(os.path.join(out, "lens_ids.npy"))
    want = softmax(ref_logits.astype(np.float64))
    top = np.take_along_axis(want, ids[-1], axis=-1)
    err = float(np.abs(top - probs[-1]).max())
    report(name + " lens (last layer = output distribution)", err <= LENS_TOL, "max |dp| %.2e" % err)


def check_model(binary, name, folder, tmp):
    ids = json.load(open(os.path.join(folder, "ids.json")))["ids"]
    out = os.path.join(tmp, name)
    proc = attnscope(binary, "model", "run", folder, "--ids", ",".join(map(str, ids)), "--out", out, "--lens")
    if proc.returncode != 0 and "--lens" in proc.stderr:
        proc = attnscope(binary, "model", "run", folder, "--ids", ",".join(map(str, ids)), "--out", out)
    if proc.returncode != 0:
        report(name + " model run", False, proc.stderr.strip())
        return
    attn = np.load(os.path.join(out, "attentions.npy"))
    want = np.load(os.path.join(folder, "attentions.npy"))
    ok = attn.shape == want.shape
    err = float(np.abs(attn - want).max()) if ok else float("inf")
    report(name + " attentions " + str(want.shape), ok and err <= ATTN_TOL, "max |d| %.2e" % err)
    logits_path = os.path.join(out, "logits.npy")
    ref_logits = np.load(os.path.join(folder, "logits.npy"))
    if os.path.exists(logits_path):
        logits = np.load(logits_path)
        err = float(np.abs(logits - ref_logits).max()) if logits.shape == ref_logits.shape else float("inf")
        report(name + " logits " + str(ref_logits.shape), err <= LOGITS_TOL, "max |d| %.2e" % err)
    check_lens(name, folder, out, ref_logits)
    check_greedy(binary, name, folder, tmp)


def check_greedy(binary, name, folder, tmp):
    greedy_path = os.path.join(folder, "greedy.json")
    if not os.path.exists(greedy_path):
        return
    greedy = json.load(open(greedy_path))
    out = os.path.join(tmp, name + "-generate")
    proc = attnscope(binary, "model", "generate", folder, "--ids", ",".join(map(str, greedy["prompt"])),
                     "--tokens", str(len(greedy["generated"])), "--greedy", "--out", out)
    if proc.returncode != 0:
        report(name + " greedy generation", False, proc.stderr.strip().splitlines()[-1] if proc.stderr else "")
        return
    got = token_ids(out)[len(greedy["prompt"]):]
    report(name + " greedy generation (%d tokens)" % len(greedy["generated"]), got == greedy["generated"],
           "" if got == greedy["generated"] else "got %s want %s" % (got, greedy["generated"]))


def check_tokenizer(binary, name, folder, tmp):
    cases = json.load(open(os.path.join(folder, "expected.json"), encoding="utf-8"))
    bad = []
    for n, case in enumerate(cases):
        out = os.path.join(tmp, "%s-%d" % (name, n))
        proc = attnscope(binary, "model", "run", folder, "--text", case["text"], "--out", out)
        got = token_ids(out) if proc.returncode == 0 else proc.stderr.strip()
        if not case["ids"] and proc.returncode == 1 and "no tokens" in proc.stderr:
            continue  # nothing to run a model on: attnscope refuses an empty token list, by design
        if got != case["ids"]:
            bad.append("%r: got %s want %s" % (case["text"], got, case["ids"]))
    report("tokenizer %s (%d texts)" % (name, len(cases)), not bad, "; ".join(bad[:3]))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("ref")
    parser.add_argument("--bin", default=os.path.join(os.path.dirname(__file__), "..", "build", "attnscope"))
    args = parser.parse_args()
    print("references:", open(os.path.join(args.ref, "versions.json")).read().strip())
    with tempfile.TemporaryDirectory() as tmp:
        for kind, check in (("models", check_model), ("tokenizers", check_tokenizer)):
            root = os.path.join(args.ref, kind)
            for name in sorted(os.listdir(root)):
                check(args.bin, name, os.path.join(root, name), tmp)
    print("%d failed" % len(failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
