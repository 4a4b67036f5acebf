"""Issue 22 item 6: imported maps (an attention bundle) showed the sandbox's state (causal
ticked, padding, dropout 0.30, ...). The control panel now shows only what applies to the
source plus its own facts: model, layers (bundle.json's names), heads, tokens and notes.
A trained model's run keeps its greyed controls showing the model's values (item 1): as
drawn, they are the sandbox's enabled controls set to the model's values, dimmed."""
import json
import os
import unittest

import guitest as g

SANDBOX_CONTROLS = ("heads_slider", "mask_causal", "mask_padding", "dropout_slider", "train_mode", "mistake_combo",
                    "variants_header", "fill_combo")


def write_named_bundle(folder, layers=2, heads=3, L=5):
    os.makedirs(folder)
    g.save_softmax_maps(folder, (layers, 1, heads, L, L), seed=1)
    with open(os.path.join(folder, "tokens.txt"), "w") as f:
        f.write("\n".join("one two three four five".split()[:L]) + "\n")
    with open(os.path.join(folder, "bundle.json"), "w") as f:
        json.dump({"model": "tiny-gpt", "layer_names": ["h.0", "h.1"], "notes": "saved by a test"}, f)


class ImportedControlsTest(g.AppTestCase):
    SCRATCH = "imported-controls-"

    def test_imported_maps_show_their_facts_not_the_sandbox(self):
        bundle = os.path.join(self.dir, "named")
        write_named_bundle(bundle)
        # The sandbox had causal + padding, dropout 0.3 in train mode and a mistake set.
        _, log, window, state = self.start("imported", bundle, mask="causal+padding", valid_lens=[3], dropout=0.3,
                                           train=True, mistake="no-scale")
        self.assertEqual((state["view_source"], state["error"]), ("imported", ""))
        for name in SANDBOX_CONTROLS:
            self.assertNotIn(name, state["rects"])
        self.assertEqual(state["texts"]["source_facts"],
                         "model: tiny-gpt\n2 layers (h.0 .. h.1) x 3 heads\n5 queries x 5 keys")
        for name in ("source_facts", "source_notes", "imported_reason", "colormap_combo", "export_grid_button"):
            self.assertIn(name, state["rects"])
        self.assertEqual(state["mask"], "causal+padding")  # the sandbox's settings are kept for later
        self.screenshot(window, "imported.png")

    def test_model_runs_grey_the_sandbox_with_the_models_values(self):
        app, log, window, state = self.start("model", ready=g.model_settled, source="model", model="reverse-digits",
                                             model_text="12=21.", dropout=0.3, train=True)
        self.assertIn("heads_slider", state["rects"])  # greyed, with the model's values
        self.assertEqual(state["controls_shown"], {"heads": 2, "head_dim": 32, "mask": "causal", "bias": True})
        self.assertEqual((state["layers"], state["texts"]["source_facts"]), (1, "1 layer x 2 heads"))  # the run's facts
        shot = self.capture(window, "model.png")
        self.stop(app)  # one app window at a time: find_window takes the first
        self.check_greyed_as_drawn(shot, state, "model-enabled-look", g.GREYED_CONTROLS, g.REVERSE_DIGITS_VALUES)


if __name__ == "__main__":
    unittest.main()
