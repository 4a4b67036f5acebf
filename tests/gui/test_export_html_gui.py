"""The app's Export HTML entry (issue 23), driven with xdotool under Xvfb: Ctrl+Shift+H and
the Controls panel's "Export HTML" button write the whole view (every layer and head) as one
page, attention_b0_<mask>_LxS.html, with its settings JSON beside it, whatever formats are
ticked; the page is byte-identical to `attnscope export --settings <that JSON>`; pressed again
it never overwrites; an unwritable folder gives the error toast and writes nothing. (The page
itself is checked in a browser by tests/cli/test_export_html.py.)"""
import os
import subprocess
import unittest

import guitest as g
import test_export_gui as export_gui


class ExportHtmlGuiTest(g.AppTestCase):
    SCRATCH = "export-html-gui-"
    wait_export = export_gui.ExportGuiTest.wait_export

    def test_ctrl_shift_h_and_button_write_the_page_equal_to_cli(self):
        folder = os.path.join(self.dir, "pages")
        _, log, window, state = self.start("html", heads=3, head_dim=8, mask="causal", export_dir=folder,
                                           export_formats=["png", "svg"])
        L, S = state["L"], state["S"]
        base = os.path.join(folder, "attention_b0_causal_L%dxS%d" % (L, S))
        self.press(window, "ctrl+shift+h")
        state = self.wait_export(log, 1)
        self.assertEqual(state["last_export"], {"kind": "html", "paths": [base + ".html", base + ".json"], "error": ""})
        self.assertFalse(state["toast"]["error"])
        self.assertIn(os.path.basename(base) + ".html", state["toast"]["text"])
        self.assertEqual(sorted(os.listdir(folder)), sorted(os.path.basename(p) for p in state["last_export"]["paths"]))
        with open(base + ".html", encoding="utf-8") as f:
            page = f.read()
        self.assertIn('class="attnscope-viewer"', page)
        self.assertIn('"H":3', page)

        # The same page as the headless exporter given the JSON written beside it.
        out = g.scratch_dir("cli-html-")
        result = subprocess.run([g.BIN, "export", "--settings", base + ".json", "--out", out],
                                capture_output=True, text=True, timeout=120)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual([os.path.basename(p) for p in result.stdout.split()],
                         [os.path.basename(base) + ext for ext in (".html", ".json")])
        with open(os.path.join(out, os.path.basename(base) + ".html"), encoding="utf-8") as f:
            self.assertEqual(f.read(), page)

        # The Controls panel's button (scrolled into view): a second page, never overwriting the first.
        x, y, w, h = state["rects"]["export_folder"]
        self.x.xdotool("mousemove", "--window", window, int(x + w / 2), int(y + h / 2))
        height = state["window"][1]
        for _ in range(10):
            self.x.xdotool("click", "5")  # wheel down over the Controls panel
        state = g.wait_for_state(log, lambda s: s["rects"]["export_html_button"][1] + 19 < height)
        self.click_until(window, log, state["rects"]["export_html_button"], lambda s: s["export_count"] >= 2)
        state = self.wait_export(log, 2)
        self.assertEqual(state["last_export"]["paths"], [base + "_1.html", base + "_1.json"])

    def test_unwritable_folder_writes_nothing(self):
        blocker = os.path.join(self.dir, "a_regular_file")
        with open(blocker, "w") as f:
            f.write("not a folder\n")
        folder = os.path.join(blocker, "pages")
        _, log, window, _ = self.start("unwritable", heads=2, head_dim=8, export_dir=folder)
        self.press(window, "ctrl+shift+h")
        state = self.wait_export(log, 1)
        self.assertEqual(state["last_export"]["kind"], "html")
        self.assertEqual(state["last_export"]["paths"], [])
        self.assertIn(f"export folder {folder} is not writable", state["last_export"]["error"])
        self.assertTrue(state["toast"]["error"])
        self.assertFalse(os.path.exists(folder))


if __name__ == "__main__":
    unittest.main()
