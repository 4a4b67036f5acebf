"""`--help` of every entry point: exit 0, and the text names what the user can do next."""
import os
import subprocess
import unittest

BIN = os.environ["ATTNSCOPE_BIN"]


def run(*args):
    return subprocess.run([BIN, *args], capture_output=True, text=True, timeout=60)


class Usage(unittest.TestCase):
    def test_app_help_lists_subcommands_and_flags(self):
        result = run("--help")
        self.assertEqual(result.returncode, 0, result.stderr)
        for word in ("compute", "export", "bench", "analyze", "model run", "--settings", "--frames", "--screenshot", "F1"):
            self.assertIn(word, result.stdout)

    def test_gui_word_accepts_help_too(self):
        self.assertEqual(run("gui", "-h").returncode, 0)

    def test_subcommand_help(self):
        for command, flag in ((["compute"], "--mask"), (["export"], "--format"), (["analyze"], "--json"),
                              (["model", "run"], "--text-file")):
            result = run(*command, "--help")
            self.assertEqual(result.returncode, 0, result.stderr)
            self.assertIn(flag, result.stdout)

    def test_unknown_flag_is_a_usage_error(self):
        result = run("--no-such-flag")
        self.assertEqual(result.returncode, 2)
        self.assertIn("unknown option '--no-such-flag'", result.stderr.splitlines()[0])

    def test_app_errors_stay_one_line_when_an_argument_holds_a_newline(self):
        # Regression (issue 12, found by fuzz_cli): the app quoted the argument verbatim, so
        # its error ran over two lines. The error is one line, then the usage line.
        for args, needle in ((("one", "two\nthree"), "unexpected argument 'two three'"),
                             (("--bad\nflag",), "unknown option '--bad flag'"),
                             (("--size", "8x\n8"), "--size: expected WIDTHxHEIGHT")):
            with self.subTest(args=args):
                result = run(*args)
                self.assertEqual(result.returncode, 2, result.stderr)
                lines = result.stderr.splitlines()
                self.assertEqual(len(lines), 2, result.stderr)
                self.assertIn(needle, lines[0])
                self.assertTrue(lines[1].startswith("usage: attnscope"), lines[1])


if __name__ == "__main__":
    unittest.main()
