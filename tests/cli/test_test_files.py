"""The test modules themselves: a module run directly (`python3 test_x.py`) must run every
TestCase it defines. unittest.main() collects the classes defined when it is called, so an
`if __name__ == "__main__"` block above a class silently drops that class (issue 39: it
dropped TokenizerFolderErrors from test_tokenizer_gpt2.py). Static check with ast, no imports.
"""
import ast
import glob
import os
import unittest

TESTS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def is_main_guard(node):
    return (isinstance(node, ast.If) and isinstance(node.test, ast.Compare)
            and isinstance(node.test.left, ast.Name) and node.test.left.id == "__name__")


class MainBlockLast(unittest.TestCase):
    def test_main_block_is_the_last_statement_of_every_test_module(self):
        files = sorted(glob.glob(os.path.join(TESTS, "cli", "test_*.py"))
                       + glob.glob(os.path.join(TESTS, "gui", "test_*.py")))
        self.assertGreater(len(files), 10, TESTS)
        for path in files:
            with self.subTest(module=os.path.relpath(path, TESTS)):
                with open(path, encoding="utf-8") as f:
                    body = ast.parse(f.read(), path).body
                guards = [i for i, node in enumerate(body) if is_main_guard(node)]
                if not guards:
                    continue  # run through `python3 -m unittest` only
                after = [node for node in body[guards[0] + 1:] if not is_main_guard(node)]
                self.assertFalse(
                    after,
                    f"{os.path.relpath(path, TESTS)}: line {body[guards[0]].lineno} runs unittest.main() before "
                    f"line(s) {[node.lineno for node in after]}; a class defined there is not run when the file "
                    f"is run directly")


if __name__ == "__main__":
    unittest.main()
