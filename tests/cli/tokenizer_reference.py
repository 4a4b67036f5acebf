"""Shared by tests/cli/test_tokenizer_*.py: npm reference packages installed into the build
folder (never committed), the test-only attnscope_tokenize tool, and texts to encode.

The npm packages are installed by the test itself (CI has npm access); when npm cannot
install them the test fails, it does not skip.
"""
import glob
import json
import os
import subprocess

TMP = os.environ.get("ATTNSCOPE_TEST_TMP", "/tmp/attnscope-test-tmp")
NPM_DIR = os.path.join(os.path.dirname(os.path.abspath(TMP)), "npm")
TOKENIZE_BIN = os.environ.get("ATTNSCOPE_TOKENIZE_BIN", "")


def npm_package(name, version):
    """The folder of npm package NAME@VERSION, installed on first use into a prefix of its own
    under BUILD/npm (npm prunes packages of one prefix that its manifest does not list)."""
    prefix = os.path.join(NPM_DIR, f"{name}@{version}".replace("/", "+"))
    folder = os.path.join(prefix, "node_modules", *name.split("/"))
    meta = os.path.join(folder, "package.json")
    if os.path.exists(meta):
        with open(meta, encoding="utf-8") as f:
            if json.load(f).get("version") == version:
                return folder
    os.makedirs(prefix, exist_ok=True)
    done = subprocess.run(["npm", "install", "--prefix", prefix, "--no-audit", "--no-fund", "--no-save",
                           f"{name}@{version}"], capture_output=True, text=True, timeout=300)
    if done.returncode != 0 or not os.path.exists(meta):
        raise AssertionError(f"npm could not install {name}@{version} (the reference this test needs): "
                             + (done.stderr.strip().splitlines() or ["no output"])[-1])
    return folder


def run_node(script, *args):
    done = subprocess.run(["node", script, *args], capture_output=True, text=True, timeout=300)
    if done.returncode != 0:
        raise AssertionError(f"node {script} failed: {done.stderr.strip()[-2000:]}")
    return json.loads(done.stdout)


def attnscope_tokenize(folder, texts_path, special=True):
    """attnscope's encoding of each text: a list of {"ids", "pieces", "labels"}."""
    command = [TOKENIZE_BIN, folder, texts_path] + ([] if special else ["--no-special"])
    done = subprocess.run(command, capture_output=True, text=True, timeout=300)
    if done.returncode != 0:
        raise AssertionError(f"attnscope_tokenize failed ({done.returncode}): {done.stderr.strip()}")
    return json.loads(done.stdout)


# Characters whose whitespace class differs between JavaScript's \s and Unicode's White_Space
# (that Oniguruma and PCRE2 follow): kept out of texts compared with a JS regex.
JS_WHITESPACE_QUIRKS = {"\ufeff", "\x85", "\u180e"}

VARIED_TEXTS = [
    "日本語のテキストと中文文本，还有한국어 텍스트。",
    "Emoji: 😀👍🏽🇫🇷 👨‍👩‍👧‍👦 ❤️ done",
    "Runs   of     spaces\t\ttabs\n\n\nnewlines \n \r\n end  ",
    "Digits 0123456789 3.14159 1,000,000 ٣٤٥ ⅷ",
    "Accents: café naïve résumé Ångström Ελληνικά Кириллица עברית العربية देवनागरी",
    "Contractions: it's I'm we've they'll he'd don't",
    "   leading spaces and trailing   ",
    "\n",
    " ",
    "",
    "x" * 300,
    "a" + " " * 40 + "b",
]


def python_lines(count):
    """COUNT lines (each with its newline) from Debian's Python standard library sources,
    taken in sorted file order, plus every fourth line joined with the next three (a chunk
    with indentation runs across newlines)."""
    lines = []
    for path in sorted(glob.glob("/usr/lib/python3.11/*.py")):
        with open(path, encoding="utf-8", errors="replace") as f:
            lines.extend(f.readlines())
        if len(lines) >= count:
            break
    lines = lines[:count]
    chunks = ["".join(lines[i:i + 4]) for i in range(0, len(lines), 4)]
    return [t for t in lines + chunks if not JS_WHITESPACE_QUIRKS & set(t)]
