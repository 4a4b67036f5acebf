"""--frame-stats: while a scripted drag moves the temperature slider every frame (each move
posts a recompute), the app prints mean, p95 and max frame time and the first-frame time
at exit. Timings are reported, never asserted; the test checks the line and its sense."""
import re
import unittest

import guitest as g

LINE = re.compile(r"frame-stats: (\d+) frames, mean ([\d.]+) ms, p95 ([\d.]+) ms, max ([\d.]+) ms, "
                  r"first frame (\d+) ms")


class FrameStats(g.AppTestCase):
    SCRATCH = "frame-stats-"

    def test_prints_mean_p95_max_while_a_slider_moves(self):
        path = g.write_settings(self.dir, "stats.json", source="synthetic", synthetic_L=256, synthetic_S=256,
                                heads=4, head_dim=16, mask="causal")
        result = self.x.run("--settings", path, "--frames", "40", "--frame-stats", "--size", "1280x800",
                            timeout=300)
        self.assertEqual(result.returncode, 0, result.stderr)
        match = LINE.search(result.stdout)
        self.assertIsNotNone(match, result.stdout)
        frames, mean, p95, top, first = match.groups()
        self.assertEqual(int(frames), 40)
        self.assertGreater(float(mean), 0)
        self.assertLessEqual(float(mean), float(top))
        self.assertLessEqual(float(p95), float(top))
        self.assertGreater(int(first), 0)

    def test_help_names_the_flag(self):
        result = self.x.run("--help")
        self.assertIn("--frame-stats", result.stdout)


if __name__ == "__main__":
    unittest.main()
