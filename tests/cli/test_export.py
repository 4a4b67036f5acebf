"""`attnscope export` end to end: file names, formats that parse (xmllint, numpy, PIL,
pdftoppm), numbers equal to `attnscope compute`, settings JSON round trips, and clear
errors that leave no file behind.

Environment: ATTNSCOPE_BIN (the binary), ATTNSCOPE_TEST_TMP (scratch folder).
"""
import json
import os
import re
import shutil
import subprocess
import unittest

import numpy as np

import reference as ref

try:
    from PIL import Image
except ImportError:  # pragma: no cover - depends on the machine
    Image = None

BIN = os.environ.get("ATTNSCOPE_BIN", os.path.join(os.path.dirname(__file__), "../../build/attnscope"))


def run(*args, check=True):
    proc = subprocess.run([BIN, *args], capture_output=True, text=True, timeout=300)
    if check and proc.returncode != 0:
        raise AssertionError(f"attnscope {' '.join(args)} -> {proc.returncode}\n{proc.stderr}")
    return proc


def export(*args):
    """Runs export; returns the printed paths (one per line)."""
    return run("export", *args).stdout.split()


def demo_sizes(tmp, *flags):
    """B, H, L, S of the demo with these flags, from `attnscope compute`'s shapes.json."""
    out = os.path.join(tmp, "compute")
    run("compute", "--demo", "--out", out, *flags)
    with open(os.path.join(out, "shapes.json")) as f:
        sizes = json.load(f)["sizes"]
    return sizes["B"], sizes["H"], sizes["L"], sizes["S"], out


def svg_cells(path):
    """[(x, y, size, '#rrggbb')] of every class="cell" rect, in file order."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    return [(int(x), int(y), int(w), fill) for x, y, w, fill in re.findall(
        r'<rect class="cell" x="(\d+)" y="(\d+)" width="(\d+)" height="\d+" fill="(#[0-9a-f]{6})"/>', text)]


def hex_rgb(fill):
    return tuple(int(fill[i:i + 2], 16) for i in (1, 3, 5))


class ExportTest(unittest.TestCase):
    def test_demo_writes_every_format_with_descriptive_names(self):
        tmp = ref.case_dir("export", "formats")
        _, _, L, S, _ = demo_sizes(tmp, "--mask", "causal")
        out = os.path.join(tmp, "figures", "made", "on", "demand")
        paths = export("--demo", "--mask", "causal", "--out", out, "--format", "png,svg,npy,csv")
        base = f"probs_L0_H0_b0_causal_L{L}xS{S}"
        self.assertEqual(paths, [os.path.join(out, f"{base}.{ext}") for ext in ("png", "svg", "npy", "csv", "json")])
        self.assertEqual(sorted(os.listdir(out)), sorted(os.path.basename(p) for p in paths))  # no temp files

        svg = paths[1]
        lint = subprocess.run(["xmllint", "--noout", svg], capture_output=True, text=True)
        self.assertEqual(lint.returncode, 0, lint.stderr)
        self.assertEqual(len(svg_cells(svg)), L * S)
        with open(svg, encoding="utf-8") as f:
            text = f.read()
        for token in ("The", "cat", "tired"):  # the demo sentence's tokens as <text>
            self.assertIn(f">{token}</text>", text)

        probs = np.load(paths[2])
        self.assertEqual(probs.dtype, np.float32)
        self.assertEqual(probs.shape, (L, S))
        np.testing.assert_allclose(probs.sum(axis=1), 1.0, atol=1e-5)
        self.assertTrue(np.all(probs[np.triu_indices(L, 1)] == 0.0))  # causal: exactly 0 above

        with open(paths[3], encoding="utf-8") as f:
            rows = [line.rstrip("\n").split(",") for line in f]
        self.assertEqual(rows[0][0], "query\\key")
        self.assertEqual(rows[0][1:4], ["The", "cat", "sat"])
        self.assertEqual(len(rows), L + 1)
        np.testing.assert_array_equal(np.array([[np.float32(v) for v in r[1:]] for r in rows[1:]]), probs)

        with open(paths[4]) as f:
            settings = json.load(f)
        self.assertEqual(settings["mask"], "causal")
        self.assertEqual(settings["focused_head"], 0)

    def test_npy_equals_compute_probs_for_every_head(self):
        tmp = ref.case_dir("export", "npy_vs_compute")
        B, H, L, S, compute_out = demo_sizes(tmp, "--heads", "4", "--mask", "causal+window:3")
        self.assertEqual(H, 4)
        probs = np.load(os.path.join(compute_out, "probs.npy"))
        scores = np.load(os.path.join(compute_out, "scores.npy"))
        self.assertEqual(probs.shape, (B, H, L, S))
        out = os.path.join(tmp, "figures")
        paths = export("--demo", "--heads-count", "4", "--mask", "causal+window:3", "--heads", "all",
                       "--what", "probs,scores,grid", "--format", "npy", "--out", out)
        names = [os.path.basename(p) for p in paths if p.endswith(".npy")]
        self.assertEqual(names, [f"probs_L0_H{h}_b0_causal+window3_L{L}xS{S}.npy" for h in range(4)] +
                         [f"scores_L0_H{h}_b0_causal+window3_L{L}xS{S}.npy" for h in range(4)] +
                         [f"grid_b0_causal+window3_L{L}xS{S}.npy"])
        for h in range(4):
            np.testing.assert_array_equal(np.load(os.path.join(out, names[h])), probs[0, h])
            # Masked scores keep the fill value (-inf), as in the trace.
            np.testing.assert_array_equal(np.load(os.path.join(out, names[4 + h])), scores[0, h])
        self.assertTrue(np.isneginf(scores[0, 0, 0, 1]))
        np.testing.assert_array_equal(np.load(os.path.join(out, names[8])), probs[0])

    def test_heads_all_writes_one_figure_per_head(self):
        tmp = ref.case_dir("export", "heads_all")
        paths = export("--demo", "--heads-count", "4", "--heads", "all", "--out", tmp)
        pngs = [p for p in paths if p.endswith(".png")]
        self.assertEqual(len(pngs), 4)
        self.assertEqual([re.search(r"_H(\d+)_", p).group(1) for p in pngs], ["0", "1", "2", "3"])
        self.assertEqual(len([p for p in paths if p.endswith(".json")]), 4)
        paths = export("--demo", "--heads-count", "4", "--heads", "0,3", "--out", os.path.join(tmp, "two"))
        self.assertEqual(len([p for p in paths if p.endswith(".png")]), 2)

    def test_grid_has_one_tile_per_head(self):
        tmp = ref.case_dir("export", "grid")
        _, _, L, S, _ = demo_sizes(tmp, "--heads", "8")
        paths = export("--demo", "--heads-count", "8", "--what", "grid", "--format", "png,svg", "--out", tmp)
        self.assertEqual([os.path.basename(p) for p in paths],
                         [f"grid_b0_nomask_L{L}xS{S}.{ext}" for ext in ("png", "svg", "json")])
        cells = svg_cells(paths[1])
        self.assertEqual(len(cells), 8 * L * S)
        with open(paths[1], encoding="utf-8") as f:
            text = f.read()
        for h in range(8):
            self.assertIn(f">head {h}</text>", text)
        # Tile origins: 8 distinct top-left cells.
        tiles = {(x, y) for i, (x, y, _, _) in enumerate(cells) if i % (L * S) == 0}
        self.assertEqual(len(tiles), 8)
        if Image:
            png = Image.open(paths[0]).convert("RGB")
            for x, y, size, fill in cells[::7]:  # PNG and SVG agree cell by cell
                self.assertEqual(png.getpixel((x + size // 2, y + size // 2)), hex_rgb(fill))

    @unittest.skipIf(Image is None, "PIL not available")
    def test_png_svg_and_pdf_show_the_same_cells(self):
        tmp = ref.case_dir("export", "same_cells")
        paths = export("--demo", "--mask", "causal", "--what", "scores", "--heads", "1", "--cell-px", "20",
                       "--format", "png,svg,pdf", "--out", tmp)
        cells = svg_cells(paths[1])
        self.assertTrue(all(size == 20 for _, _, size, _ in cells))
        png = Image.open(paths[0]).convert("RGB")
        for x, y, size, fill in cells:
            for dx, dy in ((0, 0), (size - 1, size - 1), (size // 2, size // 2)):
                self.assertEqual(png.getpixel((x + dx, y + dy)), hex_rgb(fill))
        # Masked cells (above the diagonal) are the grey hatch, never a colormap colour.
        L = int(len(cells) ** 0.5)
        for i in range(L):
            for j in range(L):
                fill = cells[i * L + j][3]
                if j > i:
                    self.assertEqual(fill, "#a0a0a0" if (i + j) % 2 == 0 else "#808080")
                else:
                    self.assertNotIn(fill, ("#a0a0a0", "#808080"))
        if not shutil.which("pdftoppm"):
            self.skipTest("pdftoppm not installed")
        subprocess.run(["pdftoppm", "-r", "72", "-png", "-singlefile", paths[2], os.path.join(tmp, "page")], check=True)
        page = Image.open(os.path.join(tmp, "page.png")).convert("RGB")
        self.assertEqual(page.size, png.size)
        for x, y, size, fill in cells:
            got = page.getpixel((x + size // 2, y + size // 2))
            self.assertLessEqual(max(abs(a - b) for a, b in zip(got, hex_rgb(fill))), 2, (x, y, got, fill))

    def test_settings_json_round_trips_to_a_byte_identical_png(self):
        tmp = ref.case_dir("export", "round_trip")
        first = export("--demo", "--heads-count", "4", "--heads", "2", "--mask", "causal", "--colormap", "magma",
                       "--cell-px", "23", "--format", "png,svg", "--out", os.path.join(tmp, "a"))
        png, svg, settings = first
        again = export("--settings", settings, "--format", "png,svg", "--out", os.path.join(tmp, "b"))
        self.assertEqual([os.path.basename(p) for p in again], [os.path.basename(p) for p in first])
        for a, b in zip(first, again):
            with open(a, "rb") as fa, open(b, "rb") as fb:
                self.assertEqual(fa.read(), fb.read(), os.path.basename(a))

    def test_settings_json_remembers_the_formats(self):
        tmp = ref.case_dir("export", "formats_remembered")
        first = export("--demo", "--format", "svg,csv", "--out", os.path.join(tmp, "a"))
        with open(first[-1]) as f:
            self.assertEqual(json.load(f)["export_formats"], ["svg", "csv"])
        again = export("--settings", first[-1], "--out", os.path.join(tmp, "b"))
        self.assertEqual([os.path.basename(p) for p in again], [os.path.basename(p) for p in first])

    def test_never_overwrites(self):
        tmp = ref.case_dir("export", "no_overwrite")
        first = export("--demo", "--format", "png,csv", "--out", tmp)
        with open(first[0], "rb") as f:
            original = f.read()
        second = export("--demo", "--format", "png,csv", "--colormap", "cividis", "--out", tmp)
        self.assertEqual([p[:-4] for p in second[:2]], [first[0][:-4] + "_1"] * 2)
        self.assertTrue(second[2].endswith("_1.json"))
        with open(first[0], "rb") as f:
            self.assertEqual(f.read(), original)

    def test_bundle_batch_item_and_size_in_the_name(self):
        tmp = ref.case_dir("export", "bundle")
        bundle = os.path.join(tmp, "bundle")
        os.makedirs(bundle)
        rng = np.random.default_rng(0)
        np.save(os.path.join(bundle, "query.npy"), rng.standard_normal((2, 3, 8)).astype(np.float32))
        np.save(os.path.join(bundle, "key.npy"), rng.standard_normal((2, 5, 8)).astype(np.float32))
        np.save(os.path.join(bundle, "value.npy"), rng.standard_normal((2, 5, 8)).astype(np.float32))
        paths = export(bundle, "--batch", "1", "--what", "probs,mask", "--format", "png,npy", "--out", tmp)
        names = [os.path.basename(p) for p in paths]
        self.assertEqual(names, ["probs_L0_H0_b1_nomask_L3xS5.png", "probs_L0_H0_b1_nomask_L3xS5.npy",
                                 "probs_L0_H0_b1_nomask_L3xS5.json", "mask_b1_nomask_L3xS5.png",
                                 "mask_b1_nomask_L3xS5.npy", "mask_b1_nomask_L3xS5.json"])
        self.assertEqual(np.load(paths[1]).shape, (3, 5))
        np.testing.assert_array_equal(np.load(paths[4]), np.ones((3, 5), np.float32))
        with open(paths[2]) as f:
            settings = json.load(f)
        self.assertEqual((settings["source"], settings["bundle_path"], settings["batch_item"]), ("bundle", bundle, 1))

    def assert_fails(self, code, pattern, *args, out=None):
        proc = run("export", *args, check=False)
        self.assertEqual(proc.returncode, code, proc.stderr)
        self.assertEqual(proc.stdout, "")
        lines = proc.stderr.strip().split("\n")
        self.assertEqual(len(lines), 1, proc.stderr)
        self.assertRegex(lines[0], pattern)
        if out is not None:
            self.assertFalse(os.path.exists(out), "a failed export created " + out)

    def test_unwritable_folder_is_one_line_and_writes_nothing(self):
        tmp = ref.case_dir("export", "unwritable")
        blocker = os.path.join(tmp, "a_file")
        with open(blocker, "w") as f:
            f.write("x")
        out = os.path.join(blocker, "figures")
        self.assert_fails(1, r"^attnscope export: export folder .*a_file/figures is not writable: ",
                          "--demo", "--format", "png,svg,npy", "--out", out)
        self.assertEqual(os.listdir(tmp), ["a_file"])
        if os.geteuid() != 0:  # root writes anywhere, so a read-only folder only tests others
            ro = os.path.join(tmp, "read_only")
            os.makedirs(ro)
            os.chmod(ro, 0o555)
            self.assert_fails(1, r"is not writable: Permission denied", "--demo", "--out", ro)
            self.assertEqual(os.listdir(ro), [])

    def test_bad_flags_are_clear_one_line_errors(self):
        tmp = ref.case_dir("export", "bad_flags")
        out = os.path.join(tmp, "out")
        self.assert_fails(2, r"--colormap: .*'rainbow'.*viridis", "--demo", "--colormap", "rainbow", "--out", out, out=out)
        self.assert_fails(2, r"--what: unknown value 'attention' \(use probs, scores, mask, rollout, flow or grid\)",
                          "--demo", "--what", "probs,attention", "--out", out, out=out)
        self.assert_fails(2, r"--format: unknown value 'jpg'", "--demo", "--format", "jpg", "--out", out, out=out)
        self.assert_fails(1, r"--heads: head 7 is out of range \(the model has 4 heads: 0-3\)",
                          "--demo", "--heads-count", "4", "--heads", "0,7", "--out", out, out=out)
        self.assert_fails(2, r"--heads: 'x' is not a head index", "--demo", "--heads", "x", "--out", out, out=out)
        self.assert_fails(1, r"--batch: item 3 is out of range", "--demo", "--batch", "3", "--out", out, out=out)
        self.assert_fails(2, r"--mask: ", "--demo", "--mask", "casual", "--out", out, out=out)
        self.assert_fails(2, r"give --demo, a BUNDLE folder or --settings FILE", "--out", out, out=out)
        self.assert_fails(2, r"only one of", "--demo", "--settings", "x.json", "--out", out, out=out)
        self.assert_fails(1, r"over 16384 px on a side", "--demo", "--cell-px", "5000", "--out", out, out=out)
        self.assert_fails(1, r"nope\.json", "--settings", os.path.join(tmp, "nope.json"), "--out", out, out=out)
        self.assert_fails(2, r"--cell-px", "--demo", "--cell-px", "-3", "--out", out, out=out)
        self.assert_fails(2, r"--heads-count: must be >= 1", "--demo", "--heads-count", "0", "--out", out, out=out)


if __name__ == "__main__":
    unittest.main()
