"""Issue 22 item 17: Ctrl+Shift+S on a many-head, long bundle wrote a PNG far beyond print
size (144 heads x 512 tokens: 6529 x 6656 px). The atlas' picture is now at most 4096 px on
its longer side (cells pooled beyond, named in its subtitle), unless "full resolution" is
ticked in the Export section; its .npy keeps every cell either way. The subtitle names the
pooling: read from the PDF exported beside the PNG (the same capped figure; pdftotext), and
the PNG's subtitle line is drawn as long as the PDF's. (Tile titles with the bundle's layer
names: tests/figure/test_atlas_cap.cpp and tests/cli/test_import.py.)"""
import json
import os
import re
import struct
import subprocess
import unittest

import numpy as np

import guitest as g

LAYERS, HEADS, L = 2, 20, 220


def png_size(path):
    with open(path, "rb") as f:
        header = f.read(24)
    return struct.unpack(">II", header[16:24])


def write_wide_bundle(folder):
    os.makedirs(folder)
    rng = np.random.default_rng(5)
    x = rng.normal(size=(LAYERS, 1, HEADS, L, L)).astype(np.float32)
    p = np.exp(x - x.max(-1, keepdims=True))
    maps = (p / p.sum(-1, keepdims=True)).astype(np.float32)
    np.save(os.path.join(folder, "attentions.npy"), maps)
    with open(os.path.join(folder, "tokens.txt"), "w") as f:
        f.write("".join("t%d\n" % i for i in range(L)))
    with open(os.path.join(folder, "bundle.json"), "w") as f:
        json.dump({"layer_names": ["h.0", "h.1"]}, f)
    return maps


def pdf_lines(path):
    """The first page's text lines of a PDF: (text, x_min, y_min, x_max, y_max) in points."""
    xml = subprocess.run(["pdftotext", "-bbox-layout", "-l", "1", path, "-"], capture_output=True, text=True,
                         check=True, timeout=60).stdout
    lines = []
    for attrs, body in re.findall(r"<line ([^>]*)>(.*?)</line>", xml, re.S):
        box = dict(re.findall(r'(\w+)="([-\d.]+)"', attrs))
        words = re.findall(r"<word [^>]*>(.*?)</word>", body, re.S)
        text = " ".join(words).replace("&amp;", "&").replace("&lt;", "<").replace("&gt;", ">")
        lines.append((text, float(box["xMin"]), float(box["yMin"]), float(box["xMax"]), float(box["yMax"])))
    return lines


def pdf_page_size(path):
    info = subprocess.run(["pdfinfo", path], capture_output=True, text=True, check=True, timeout=60).stdout
    w, h = re.search(r"Page size:\s+([\d.]+) x ([\d.]+) pts", info).groups()
    return float(w), float(h)


def ink_extent(png, y0, y1):
    """x of the first and last pixel unlike the figure's background (its top-left pixel) in rows y0..y1."""
    from PIL import Image
    with Image.open(png) as image:
        band = np.asarray(image.convert("RGB"))[int(y0):int(y1) + 1].astype(int)
    ink = np.abs(band - band[0, 0]).max(axis=-1).max(axis=0) > 40
    xs = np.nonzero(ink)[0]
    return (int(xs[0]), int(xs[-1])) if len(xs) else (None, None)


class AtlasCapTest(g.AppTestCase):
    SCRATCH = "atlas-cap-"

    def export_grid(self, window, log, count):
        self.press(window, "ctrl+shift+s")
        state = g.wait_for_state(log, lambda s: s["export_count"] >= count, timeout=120)
        self.assertEqual(state["last_export"]["error"], "")
        return state, state["last_export"]["paths"]

    def subtitle(self, png, pdf):
        """The figure's subtitle (the line after the title) from the PDF, after checking the PNG
        draws that line where the PDF has it, as wide (the page is the PNG's size in points)."""
        self.assertEqual(pdf_page_size(pdf), png_size(png))
        lines = pdf_lines(pdf)
        title = next(i for i, line in enumerate(lines) if line[0].startswith("Attention probabilities"))
        text, x0, y0, x1, y1 = lines[title + 1]
        left, right = ink_extent(png, y0, y1)
        self.assertIsNotNone(left, f"no ink in the PNG where the subtitle {text!r} is")
        self.assertLessEqual(abs(left - x0), 4, f"the PNG's subtitle line starts at {left}, the PDF's {text!r} at {x0:.0f}")
        self.assertLessEqual(abs(right - x1), 4, f"the PNG's subtitle line ends at {right}, the PDF's {text!r} at {x1:.0f}")
        return text

    def test_atlas_capped_unless_full_resolution(self):
        bundle = os.path.join(self.dir, "wide")
        maps = write_wide_bundle(bundle)
        out = os.path.join(self.dir, "exports")
        _, log, window, state = self.start("wide", bundle, export_dir=out, export_formats=["png", "pdf", "npy"])
        self.assertFalse(state["export_full_resolution"])
        state, paths = self.export_grid(window, log, 1)
        name = "grid_b0_imported_L%dxS%d" % (L, L)
        self.assertEqual([os.path.basename(p) for p in paths],
                         [name + ".png", name + ".pdf", name + ".npy", name + ".json"])
        width, height = png_size(paths[0])
        self.assertLessEqual(max(width, height), 4096)
        self.assertGreater(width, 2000)  # pooled 2 x 2, not shrunk to a thumbnail
        np.testing.assert_array_equal(np.load(paths[2]), maps[:, 0].reshape(LAYERS * HEADS, L, L))
        capped = self.subtitle(paths[0], paths[1])
        self.assertIn("pooled to fit 4096 px: each cell the max of up to 2 \u00d7 2", capped)

        state = self.click_until(window, log, state["rects"]["export_full_resolution"],
                                 lambda s: s["export_full_resolution"], dx=8)
        state, paths = self.export_grid(window, log, 2)
        self.assertEqual(os.path.basename(paths[0]), name + "_1.png")
        full_width, full_height = png_size(paths[0])
        self.assertGreater(max(full_width, full_height), 4096)
        self.assertGreaterEqual(full_width, HEADS * L)  # every cell: at least a pixel each
        np.testing.assert_array_equal(np.load(paths[2]), maps[:, 0].reshape(LAYERS * HEADS, L, L))
        full = self.subtitle(paths[0], paths[1])
        self.assertNotIn("pooled", full)
        self.assertTrue(capped.startswith(full + " \u00b7 pooled"), (capped, full))  # the same subtitle, plus the pooling


if __name__ == "__main__":
    unittest.main()
