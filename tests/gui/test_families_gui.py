"""The 2025-26 families in the app (issue 38): a random folder of each of qwen3, smollm3,
gemma3_text, olmo2 and phi3 (written by tests/cli/hf_reference.py with a byte-level tokenizer)
opens in one app process per family; typing reruns it; its next-token predictions are the
float64 reference's; the Logit lens tab's last row is those predictions; Generate writes the
greedy tokens `attnscope model generate --greedy` writes. The shape pipeline and the greyed
controls show each layer's truth: head_dim as its own key (Qwen3, Gemma 3, Phi-3), the q/k
RMSNorm as a stage with its shape (per head after the view; OLMo 2 over the whole projection
before it), RoPE with the layer's base and rotated features (Phi-3's partial rotary, Gemma 3's
local base), "no positions (NoPE)" on SmolLM3's NoPE layer, and each layer's window (sliding or
global). One screenshot of the window per family (pipeline on the right)."""
import os
import subprocess
import sys
import time
import unittest

import numpy as np
import torch

import guitest as g

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "cli"))
import hf_reference as hf  # noqa: E402  (the CLI tests' random-folder writer and float64 forward)

PROMPT = "def f(x):"
TYPED = " ab"
SIZES = dict(V=256, P=64, D=32, H=4, G=2, N=2)

# name, family, make_model options, the focused layer after a click (None: stay on 0), and the
# facts (pipeline.facts) of layer 0 and of that layer, written from the config each folder has.
ROPE = dict(positions="rope", rope_base=500.0)
FAMILIES = [
    ("qwen3", "qwen3", dict(seed=81, head_dim=16, window=4, spelling=5,
                            layer_types=["full_attention", "sliding_attention"]), 1,
     dict(head_dim=16, own_head_dim=True, sliding_window=0, rotary_dims=16, qk_norm="per_head", **ROPE),
     dict(head_dim=16, own_head_dim=True, sliding_window=4, rotary_dims=16, qk_norm="per_head", **ROPE)),
    ("smollm3", "smollm3", dict(seed=82, no_rope_interval=2), 1,
     dict(head_dim=8, own_head_dim=False, sliding_window=0, rotary_dims=8, qk_norm="none", **ROPE),
     dict(head_dim=8, own_head_dim=False, sliding_window=0, rotary_dims=0, qk_norm="none", positions="nope",
          rope_base=0.0)),
    ("gemma3", "gemma3_text", dict(seed=83, head_dim=16, window=4, pattern=2, local_theta=20.0), 1,
     dict(head_dim=16, own_head_dim=True, sliding_window=4, rotary_dims=16, qk_norm="per_head", positions="rope",
          rope_base=20.0),
     dict(head_dim=16, own_head_dim=True, sliding_window=0, rotary_dims=16, qk_norm="per_head", **ROPE)),
    ("olmo2", "olmo2", dict(seed=84), None,
     dict(head_dim=8, own_head_dim=False, sliding_window=0, rotary_dims=8, qk_norm="whole_projection", **ROPE), None),
    ("phi3", "phi3", dict(seed=85, head_dim=16, rotary=0.75), None,
     dict(head_dim=16, own_head_dim=True, sliding_window=0, rotary_dims=12, qk_norm="none", **ROPE), None),
]


def arrows(chain):
    return [step["arrow"] for step in chain]


def softmax(row):
    p = np.exp(row - row.max())
    return p / p.sum()


class FamiliesGuiTest(g.AppTestCase):
    SCRATCH = "families-gui-"

    def check_pipeline(self, state, layer, facts):
        p = state["pipeline"]
        self.assertEqual(p["layer"], layer)
        self.assertEqual({k: p["facts"][k] for k in facts}, facts)
        self.assertEqual((p["facts"]["heads"], p["facts"]["kv_heads"]), (4, 2))
        L = state["L"]
        q, k, attention = p["chains"]["Q"], p["chains"]["K"], p["chains"]["attention"]
        rope = [a for a in arrows(q) if a.startswith("RoPE")]
        if facts["positions"] == "nope":
            self.assertEqual(rope, [])
            self.assertEqual(arrows(q)[-1], "no positions (NoPE)")
            self.assertIn("no positions (NoPE)", arrows(k))
            self.assertIn("positions: none (NoPE layer: q and k are not rotated)", p["facts"]["lines"])
        else:
            partial = "" if facts["rotary_dims"] == facts["head_dim"] else f", {facts['rotary_dims']}/{facts['head_dim']} dims"
            self.assertEqual(rope, ["RoPE base %g%s" % (facts["rope_base"], partial)])
            self.assertNotIn("no positions (NoPE)", arrows(q))
        d = facts["head_dim"]
        if facts["qk_norm"] == "per_head":  # after the view, over each head's d: [B, L, H, d] / [B, L, G, d]
            self.assertEqual(arrows(q)[1:4], ["q_proj", "view", "RMSNorm per head"])
            self.assertEqual(q[3]["shape"], [1, L, 4, d])
            self.assertEqual(k[3]["shape"], [1, L, 2, d])
        elif facts["qk_norm"] == "whole_projection":  # before the view, over [B, L, H*d] / [B, L, G*d]
            self.assertEqual(arrows(q)[1:4], ["q_proj", "RMSNorm (whole)", "view"])
            self.assertEqual(q[2]["shape"], [1, L, 4 * d])
            self.assertEqual(k[2]["shape"], [1, L, 2 * d])
        else:
            self.assertFalse(any("RMSNorm" in a for a in arrows(q) + arrows(k)))
        window = facts["sliding_window"]
        self.assertIn("mask (window %d)" % window if window else "mask", arrows(attention))
        self.assertEqual(state["texts"]["pipeline_shapes"].split()[-1], "d=%d" % d)
        shown = state["controls_layer"]  # the greyed controls: this layer's values
        self.assertEqual((shown["layer"], shown["head_dim"], shown["kv_heads"], shown["positional_encoding"]),
                         (layer, d, 2, False))
        self.assertEqual(shown["rope"], facts["positions"] == "rope")
        self.assertEqual(shown["rope_base"], facts["rope_base"] if facts["positions"] == "rope" else None)
        self.assertEqual(shown["window"], window - 1 if window else -1)
        self.assertEqual(state["controls_shown"]["head_dim"], d)

    def check_predictions(self, state, cfg, stored):
        """The predictions after the last position: the float64 reference's top 5 (ids = bytes)."""
        ids = list(state["model_text"].encode("utf-8"))
        self.assertEqual(state["L"], len(ids))
        logits, _ = hf.forward(cfg, stored, ids)
        want = np.sort(softmax(logits[-1].numpy()))[::-1][:5]
        pred = state["predictions"]
        self.assertEqual(pred["position"], len(ids) - 1)
        np.testing.assert_allclose([t["prob"] for t in pred["top"]], want, atol=1e-4, rtol=0)

    def check_greyed(self, shot, state):
        """The sandbox controls under the model are drawn in ImGui's disabled style: no text
        or check mark at full brightness (60 % alpha over the panel's background)."""
        checked = 0
        for name in ("heads_slider", "rope_checkbox"):
            rect = state["rects"][name]
            if rect[1] + rect[3] > state["window"][1]:
                continue  # below the window: the panel scrolls
            checked += 1
            self.assertLess(g.crop_pixels(shot, rect).max(), 200, name + " is not drawn disabled")
        self.assertGreater(checked, 0)

    def generate_equals_cli(self, window, log, state, folder):
        n = g.line_count(log)
        # Clicked until its job starts (a busy frame can miss a click).
        self.click_until(window, log, state["rects"]["generate_button"],
                         lambda s: s.get("generate") and (s["generate"]["running"] or s["generate"]["steps"] > 0))
        state = g.wait_after(log, n, lambda s: s.get("generate") and not s["generate"]["running"]
                             and s["generate"]["stop"] != "" and s["generate"]["steps"] > 0, timeout=40)
        steps, prompt = state["generate"]["steps"], state["generate"]["prompt_tokens"]
        self.assertEqual(state["L"], prompt + steps)
        out = os.path.join(self.dir, os.path.basename(folder) + "-gen")
        cli = subprocess.run([g.BIN, "model", "generate", folder, "--text", state["model_text"], "--tokens", str(steps),
                              "--greedy", "--out", out], capture_output=True, text=True, timeout=60)
        self.assertEqual(cli.returncode, 0, cli.stderr)
        with open(os.path.join(out, "tokens.txt"), encoding="utf-8") as f:
            rows = [line.split("\t") for line in f.read().splitlines()]
        self.assertEqual(state["query_tokens"][prompt:], [r[2] for r in rows][prompt:])
        return state

    def test_each_family_through_the_app(self):
        for name, family, options, focus, facts0, facts1 in FAMILIES:
            with self.subTest(family=family):
                folder = os.path.join(self.dir, name)
                cfg, tensors = hf.make_model(family, **dict(SIZES, **options))
                stored = hf.write_folder(folder, cfg, tensors)
                hf.write_byte_level_bpe(folder)
                ready = lambda s, name=name: g.model_settled(s) and s.get("model_name") == name  # noqa: E731
                app, log, window, state = self.start(name, folder, ready=ready, source="model", model=folder,
                                                     model_text=PROMPT)
                self.assertEqual((state["layers"], state["heads"]), (2, 4))
                self.check_pipeline(state, 0, facts0)

                n = g.line_count(log)
                self.type_at_text_end(window, state, TYPED, delay=40)
                state = g.wait_after(log, n, lambda s: ready(s) and s["model_text"] == PROMPT + TYPED
                                     and s["L"] == len(PROMPT + TYPED) and s["predictions"] is not None)
                self.check_predictions(state, cfg, stored)

                state = self.click_until(window, log, state["rects"]["lens_tab"], lambda s: s["lens"]["shown"])
                lens, pred = state["lens"], state["predictions"]
                self.assertEqual((lens["layers"], lens["positions"]), (3, state["L"]))
                self.assertEqual(lens["top1"][-1][pred["position"]], pred["top"][0]["label"])

                if focus is not None:
                    state = self.click_until(window, log, state["rects"]["grid_tile_%d_0" % focus],
                                             lambda s: s["focused_layer"] == focus and s["pipeline"]["layer"] == focus)
                    self.check_pipeline(state, focus, facts1)
                # The pipeline's stages are below its Layer section: scroll the panel to them.
                x, y, w, h = state["rects"]["folded_toggle"]
                self.x.xdotool("mousemove", "--window", window, int(x + w + 40), int(y + 60))
                self.x.xdotool("click", "--repeat", "3", "--delay", "30", "5")
                self.x.xdotool("mousemove", "--window", window, 120, 6)
                time.sleep(0.3)  # a frame without the pointer's tooltip
                shot = self.capture(window, name + "-pipeline.png")
                self.check_greyed(shot, state)

                state = self.generate_equals_cli(window, log, state, folder)
                self.stop(app)


if __name__ == "__main__":
    unittest.main()
