"""Every slider at its minimum and maximum, and a sweep of random settings, render without a
crash or GL error (--check-gl exits non-zero on any glGetError)."""
import os
import random
import unittest

import guitest as g

EXTREMES = [
    dict(heads=1, head_dim=1),
    dict(heads=16, head_dim=128),
    dict(source="synthetic", synthetic_L=1, synthetic_S=1, batch=1),
    dict(source="synthetic", synthetic_L=4096, synthetic_S=4096, cross_attention=True, heads=1, head_dim=4),
    dict(source="synthetic", synthetic_L=4096, synthetic_S=1, cross_attention=True, heads=2, head_dim=2),
    dict(source="synthetic", synthetic_L=1, synthetic_S=4096, cross_attention=True, heads=2, head_dim=2),
    dict(source="synthetic", synthetic_L=8, synthetic_S=8, batch=16, batch_item=15),
    dict(scale="temperature", temperature=0.05),
    dict(scale="temperature", temperature=20.0),
    dict(scale="none"),
    dict(dropout=0.0, train=True),
    dict(dropout=0.95, train=True, seed=18446744073709551615),
    dict(mask="window:0"),
    dict(mask="causal-window:0+prefix:0"),
    dict(mask="window:10+prefix:10+causal-window:10"),
    dict(mask="padding", valid_lens=[0]),            # every row fully masked
    dict(mask="padding+causal", valid_lens=[10], fill="1e9"),
    dict(mask="segments:1,1,1", log_scale=True),
    dict(mask="causal-br", cross_attention=True, key_text="a b c d e f g h i j k l m n"),
    dict(text="我爱猫。因为它们很可爱", prob_colormap="magma", log_scale=True),
    dict(text="", heads=3),                          # error: no tokens, shown in the panel
    dict(focused_head=4095, batch_item=4095),        # view fields out of range are clamped
]


def random_settings(rng):
    terms = [t for t in ("causal", "causal-br", "window:%d" % rng.randint(0, 12),
                         "causal-window:%d" % rng.randint(0, 12), "prefix:%d" % rng.randint(0, 12),
                         "segments:%d,%d" % (rng.randint(1, 6), rng.randint(1, 6)), "padding")
             if rng.random() < 0.3]
    source = rng.choice(["text", "synthetic"])
    s = dict(source=source, heads=rng.randint(1, 16), head_dim=rng.randint(1, 64),
             mask="+".join(terms) or "none", fill=rng.choice(["inf", "1e9"]),
             scale=rng.choice(["inv_sqrt_d", "none", "temperature"]), temperature=rng.uniform(0.05, 20),
             dropout=rng.uniform(0, 0.9), train=rng.random() < 0.5, seed=rng.randint(0, 2**32),
             positional_encoding=rng.random() < 0.5, bias=rng.random() < 0.5,
             focused_head=rng.randint(0, 20), log_scale=rng.random() < 0.5, folded_layout=rng.random() < 0.5,
             prob_colormap=rng.choice(["viridis", "cividis", "magma"]), cross_attention=rng.random() < 0.5)
    if source == "synthetic":
        s.update(synthetic_L=rng.randint(1, 200), synthetic_S=rng.randint(1, 200), batch=rng.randint(1, 4))
        s["batch_item"] = rng.randint(0, s["batch"] - 1)
        B, S = s["batch"], s["synthetic_S"] if s["cross_attention"] else s["synthetic_L"]
    else:
        s["text"] = "the quick brown fox jumps over the lazy dog\nhello world"[: rng.randint(3, 54)]
        s["key_text"] = "un deux trois quatre cinq"
        B, S = s["text"].count("\n") + 1, 9
    if "padding" in terms:
        s["valid_lens"] = [rng.randint(0, S) for _ in range(B)]
    return s


class SweepTest(g.AppTestCase):
    SCRATCH = "sweep-"

    def render(self, name, settings):
        path = g.write_settings(self.dir, name + ".json", **settings)
        log = os.path.join(self.dir, name + ".log")
        result = self.x.run("--settings", path, "--frames", "3", "--check-gl", "--state-log", log,
                            "--size", "1280x800", timeout=120)
        self.assertEqual(result.returncode, 0, "%s: %s\n%s" % (name, settings, result.stderr))
        return g.read_state_log(log)[-1]

    def test_slider_extremes(self):
        for n, settings in enumerate(EXTREMES):
            with self.subTest(settings=settings):
                state = self.render("extreme%d" % n, settings)
                if settings.get("text") == "":
                    self.assertIn("no tokens", state["error"])
                else:
                    self.assertEqual(state["error"], "", settings)
                    self.assertLess(state["focused_head"], state["heads"])
                    self.assertLess(state["batch_item"], state["B"])

    def test_random_settings(self):
        rng = random.Random(20240611)
        for n in range(20):
            settings = random_settings(rng)
            with self.subTest(n=n, settings=settings):
                state = self.render("random%d" % n, settings)
                self.assertIn("generation", state)
                if not state["error"]:
                    self.assertEqual(len([k for k in state["rects"] if k.startswith("grid_tile_")]), state["heads"])


if __name__ == "__main__":
    unittest.main()
