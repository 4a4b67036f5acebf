"""`attnscope models [--json]` and the store names `hf:ORG/NAME` / `ollama:NAME[:TAG]` (docs/models.md,
"The models on this machine"): a fake HOME holding a Hugging Face cache (refs/main -> snapshots/<rev>,
files linked to blobs as the hub writes them, plus a repo of GGUF files), an Ollama store (manifests ->
blobs/sha256-<hex>), both LM Studio folders and llama.cpp's cache, with small random models and GGUF
files made by llama.cpp's converter. Every store is listed with the issue's fields; the environment
variables move the stores; `ollama:NAME` and `hf:ORG/NAME` run identically to their paths; an unknown
name is one line listing the nearest names. Nothing touches the network."""
import hashlib
import json
import os
import shutil
import subprocess
import unittest

import numpy as np

import hf_reference as hf
import llama_cpp_reference as ref
import model_reference as mref
from test_gguf_model import make_gguf, with_byte_vocabulary

REV = "0123456789abcdef0123456789abcdef01234567"


def quant_mix(path):
    """The tensor types by their share of the bytes, as gguf-py reads the file."""
    by_type = {}
    for t in ref.gguf().GGUFReader(path).tensors:
        by_type[t.tensor_type.name] = by_type.get(t.tensor_type.name, 0) + int(t.n_bytes)
    total = sum(by_type.values())
    order = sorted(by_type.items(), key=lambda kv: -kv[1])
    return ", ".join("%s %d%%" % (name, int(100 * b / total + 0.5)) for name, b in order)


def hub_repo(hub, org_name, files):
    """models--ORG--NAME with refs/main, blobs/<sha256> and snapshots/<rev>/FILE -> ../../blobs/<sha256>;
    an older snapshot beside it that refs/main does not name."""
    repo = os.path.join(hub, "models--" + org_name.replace("/", "--"))
    os.makedirs(os.path.join(repo, "refs"))
    with open(os.path.join(repo, "refs", "main"), "w") as f:
        f.write(REV)
    for rev in (REV, "f" * 40):
        os.makedirs(os.path.join(repo, "snapshots", rev))
    os.makedirs(os.path.join(repo, "blobs"))
    for name, src in files.items():
        with open(src, "rb") as f:
            digest = hashlib.sha256(f.read()).hexdigest()
        shutil.copy(src, os.path.join(repo, "blobs", digest))
        os.symlink(os.path.join("..", "..", "blobs", digest), os.path.join(repo, "snapshots", REV, name))
    return os.path.join(repo, "snapshots", REV)


def ollama_model(root, ns, name, tag, gguf_path):
    with open(gguf_path, "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()
    os.makedirs(os.path.join(root, "blobs"), exist_ok=True)
    blob = os.path.join(root, "blobs", "sha256-" + digest)
    shutil.copy(gguf_path, blob)
    folder = os.path.join(root, "manifests", "registry.ollama.ai", ns, name)
    os.makedirs(folder, exist_ok=True)
    manifest = {"schemaVersion": 2, "mediaType": "application/vnd.docker.distribution.manifest.v2+json",
                "config": {"mediaType": "application/vnd.docker.container.image.v1+json", "digest": "sha256:" + "0" * 64,
                           "size": 2},
                "layers": [{"mediaType": "application/vnd.ollama.image.template", "digest": "sha256:" + "1" * 64,
                            "size": 10},
                           {"mediaType": "application/vnd.ollama.image.model", "digest": "sha256:" + digest,
                            "size": os.path.getsize(gguf_path)}]}
    with open(os.path.join(folder, tag), "w") as f:
        json.dump(manifest, f)
    return blob


def place(src, *parts):
    path = os.path.join(*parts)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    shutil.copy(src, path)
    return path


class LocalModels(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = mref.case_dir("models", "stores")
        cfg, tensors = hf.make_model("llama", seed=11, G=2, V=257)
        cfg["torch_dtype"] = "float32"
        folder = os.path.join(cls.dir, "folder")
        hf.write_folder(folder, cfg, tensors)
        hf.write_byte_level_bpe(folder)
        cls.f32, cls.q8 = os.path.join(cls.dir, "tiny-f32.gguf"), os.path.join(cls.dir, "tiny-q8_0.gguf")
        make_gguf(folder, cls.f32, "f32")
        make_gguf(folder, cls.q8, "q8_0")
        cls.f32_bytes = os.path.join(cls.dir, "tiny-f32-bytes.gguf")  # a vocabulary of bytes: --text works
        with_byte_vocabulary(cls.f32, cls.f32_bytes)
        cls.home = os.path.join(cls.dir, "home")
        hub = os.path.join(cls.home, ".cache", "huggingface", "hub")
        cls.hf_path = hub_repo(hub, "tiny-org/tiny-llama", {n: os.path.join(folder, n) for n in
                                                           ("config.json", "model.safetensors", "tokenizer.json")})
        cls.hf_gguf = os.path.join(hub_repo(hub, "tiny-org/tiny-GGUF", {"tiny-q8_0.gguf": cls.q8}), "tiny-q8_0.gguf")
        ollama = os.path.join(cls.home, ".ollama", "models")
        cls.blob = ollama_model(ollama, "library", "tiny", "latest", cls.f32_bytes)
        cls.blob_q8 = ollama_model(ollama, "someone", "tiny2", "q8", cls.q8)
        cls.lms = place(cls.q8, cls.home, ".lmstudio", "models", "pub", "repo", "tiny-Q8_0.gguf")
        cls.lms2 = place(cls.f32, cls.home, ".cache", "lm-studio", "models", "pub2", "repo2", "tiny-F32.gguf")
        cls.llamacpp = place(cls.q8, cls.home, ".cache", "llama.cpp", "tiny-org_tiny-GGUF_tiny-q8_0.gguf")
        cls.env = {k: v for k, v in os.environ.items()
                   if k not in ("HF_HUB_CACHE", "HF_HOME", "OLLAMA_MODELS", "LLAMA_CACHE")}
        cls.env["HOME"] = cls.home

    def attnscope(self, *args, env=None):
        return subprocess.run([mref.BIN, *args], capture_output=True, text=True, timeout=120, env=env or self.env)

    def listed(self, env=None):
        done = self.attnscope("models", "--json", env=env)
        self.assertEqual(done.returncode, 0, done.stderr)
        return json.loads(done.stdout)

    def test_every_store_is_listed(self):
        f32_mix, q8_mix = quant_mix(self.f32), quant_mix(self.q8)
        size = lambda p: os.path.getsize(p)  # noqa: E731
        folder_bytes = sum(size(os.path.join(self.hf_path, n)) for n in os.listdir(self.hf_path))
        want = [
            ("tiny-org/tiny-GGUF/tiny-q8_0.gguf", "hf", self.hf_gguf, "gguf", size(self.q8), q8_mix),
            ("tiny-org/tiny-llama", "hf", self.hf_path, "hf", folder_bytes, "float32"),
            ("someone/tiny2:q8", "ollama", self.blob_q8, "gguf", size(self.q8), q8_mix),
            ("tiny:latest", "ollama", self.blob, "gguf", size(self.f32_bytes), quant_mix(self.f32_bytes)),
            ("pub/repo/tiny-Q8_0.gguf", "lmstudio", self.lms, "gguf", size(self.q8), q8_mix),
            ("pub2/repo2/tiny-F32.gguf", "lmstudio", self.lms2, "gguf", size(self.f32), f32_mix),
            ("tiny-org_tiny-GGUF_tiny-q8_0.gguf", "llamacpp", self.llamacpp, "gguf", size(self.q8), q8_mix),
        ]
        got = self.listed()
        self.assertEqual([(m["name"], m["source"], m["path"], m["format"], m["size_bytes"], m["quantization"])
                          for m in got], want)
        self.assertEqual({m["architecture"] for m in got}, {"llama"})
        self.assertEqual(sorted(got[0]), ["architecture", "format", "name", "path", "quantization", "size_bytes",
                                          "source"])
        done = self.attnscope("models")
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertIn("ollama:tiny:latest", done.stdout)

    def test_environment_variables_move_the_stores(self):
        env = dict(self.env, HOME=os.path.join(self.dir, "empty-home"),
                   HF_HOME=os.path.join(self.home, ".cache", "huggingface"),
                   OLLAMA_MODELS=os.path.join(self.home, ".ollama", "models"),
                   LLAMA_CACHE=os.path.join(self.home, ".cache", "llama.cpp"))
        self.assertEqual([m["source"] for m in self.listed(env)], ["hf", "hf", "ollama", "ollama", "llamacpp"])
        env["HF_HUB_CACHE"] = os.path.join(self.dir, "no-hub")  # wins over HF_HOME
        self.assertEqual([m["source"] for m in self.listed(env)], ["ollama", "ollama", "llamacpp"])

    def same_run(self, name, path, *args):
        outs = []
        for model in (name, path):
            out = os.path.join(self.dir, "run-" + str(len(os.listdir(self.dir))))
            done = self.attnscope("model", "run", model, *args, "--out", out)
            self.assertEqual(done.returncode, 0, done.stderr)
            outs.append(out)
        for f in ("attentions.npy", "logits.npy", "tokens.txt"):
            with open(os.path.join(outs[0], f), "rb") as a, open(os.path.join(outs[1], f), "rb") as b:
                self.assertEqual(a.read(), b.read(), (name, f))

    def test_store_names_run_as_their_paths(self):
        self.same_run("ollama:tiny", self.blob, "--ids", "3,1,4,1,5")
        self.same_run("ollama:library/tiny:latest", self.blob, "--text", "the heads")
        self.same_run("ollama:someone/tiny2:q8", self.blob_q8, "--ids", "3,1,4")
        self.same_run("hf:tiny-org/tiny-llama", self.hf_path, "--text", "the heads")
        self.same_run("hf:tiny-org/tiny-GGUF", self.hf_gguf, "--ids", "2,7")  # the repo's one GGUF file
        done = self.attnscope("model", "run", self.hf_path, "--ids", "1", "--out", os.path.join(self.dir, "named"))
        self.assertIn("attnscope model run: tiny-org/tiny-llama (llama)", done.stdout)  # the repo, not the rev
        out = os.path.join(self.dir, "export")
        done = self.attnscope("export", "hf:tiny-org/tiny-llama", "--text", "ab", "--what", "grid", "--format", "npy",
                              "--out", out)
        self.assertEqual(done.returncode, 0, done.stderr)
        # A settings file naming a store (no '/' in an ollama name: not a shipped model's name).
        settings = os.path.join(self.dir, "settings.json")
        with open(settings, "w") as f:
            json.dump({"source": "model", "model": "ollama:tiny", "model_text": "ab"}, f)
        done = self.attnscope("export", "--settings", settings, "--what", "grid", "--format", "npy", "--out",
                              os.path.join(self.dir, "export-settings"))
        self.assertEqual(done.returncode, 0, done.stderr)

    def test_an_unknown_name_lists_the_nearest(self):
        for name, nearest in (("ollama:tinny", "ollama:tiny:latest"), ("hf:tiny-org/tiny-lama", "hf:tiny-org/tiny-llama")):
            out = os.path.join(self.dir, "unknown")
            done = self.attnscope("model", "run", name, "--ids", "1", "--out", out)
            self.assertEqual(done.returncode, 1, done.stderr)
            self.assertEqual(len(done.stderr.strip().splitlines()), 1, done.stderr)
            self.assertIn(name + ": no such model in", done.stderr)
            self.assertIn("nearest: " + nearest, done.stderr)
            self.assertFalse(os.path.exists(out))
        done = self.attnscope("ollama:tinny", "--frames", "1")  # the app: refused before any window opens
        self.assertEqual(done.returncode, 1, done.stderr)
        self.assertEqual(done.stderr.strip(), "attnscope: ollama:tinny: no such model in Ollama's models (%s); nearest: "
                         "ollama:tiny:latest, ollama:someone/tiny2:q8" % os.path.join(self.home, ".ollama", "models"))


if __name__ == "__main__":
    unittest.main()
