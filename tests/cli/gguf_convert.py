"""Test-only: a Hugging Face folder to GGUF with llama.cpp's own converter (convert_hf_to_gguf.py
of the release in BUILD/npm): its tensor names, Q/K permutation, Gemma's 1 + w norms and GPT-2's
transposes are llama.cpp's code. Debian has no `transformers`, which the converter's vocabulary
step imports, so `transformers` is a stub whose AutoConfig fails (the converter then reads
config.json itself, as it does for any folder transformers cannot load) and the vocabulary is
a placeholder (tokenizer.ggml.model "none"): these files are run on token ids. A folder with a
SentencePiece `tokenizer.model` keeps the converter's own vocabulary step (python3-sentencepiece
reads it): tokenizer.ggml.model "llama" with the pieces' scores and types.
Usage: /usr/bin/python3 gguf_convert.py SOURCE_DIR FOLDER OUT.gguf OUTTYPE
FOLDER's config.json gets the transformers class of its model_type as "architectures" (the
converter picks its model class by it); FOLDER is the test's own.
"""
import json
import os
import sys
import types

CLASSES = {"llama": "LlamaForCausalLM", "qwen2": "Qwen2ForCausalLM", "qwen3": "Qwen3ForCausalLM",
           "gpt2": "GPT2LMHeadModel", "gemma2": "Gemma2ForCausalLM", "bert": "BertModel", "phi3": "Phi3ForCausalLM",
           "gemma3_text": "Gemma3ForCausalLM", "olmo2": "Olmo2ForCausalLM", "smollm3": "SmolLM3ForCausalLM"}


def main():
    source, folder, out, outtype = sys.argv[1:5]
    config_path = os.path.join(folder, "config.json")
    with open(config_path, encoding="utf-8") as f:
        config = json.load(f)
    config["architectures"] = [CLASSES[config["model_type"]]]
    with open(config_path, "w", encoding="utf-8") as f:
        json.dump(config, f)
    stub = types.ModuleType("transformers")

    class AutoConfig:  # pylint: disable=too-few-public-methods
        @staticmethod
        def from_pretrained(*_args, **_kwargs):
            raise OSError("no transformers here: the converter falls back to config.json")

    stub.AutoConfig = AutoConfig
    sys.modules["transformers"] = stub
    bars = types.ModuleType("tqdm")  # the writer's progress bar (python3-tqdm is not a test dependency)
    bars.tqdm = type("tqdm", (), {"__init__": lambda self, *a, **k: None, "update": lambda self, n=1: None,
                                  "set_description": lambda self, *a: None, "reset": lambda self, **k: None,
                                  "close": lambda self: None})
    sys.modules.setdefault("tqdm", bars)
    import torch  # pylint: disable=import-outside-toplevel
    for name in ("float8_e4m3fn", "float8_e5m2", "uint16", "uint32", "uint64"):  # Debian's torch 1.13 predates them
        if not hasattr(torch, name):
            setattr(torch, name, type(name, (), {}))  # a distinct, hashable placeholder
    sys.path.insert(0, source + "/gguf-py")
    sys.path.insert(0, source)
    import convert_hf_to_gguf as convert  # pylint: disable=import-outside-toplevel
    from conversion import base, get_model_class  # pylint: disable=import-outside-toplevel
    get_model_class(config["architectures"][0])  # imports its module: its class is patched below

    def placeholder_vocab(self):
        self.gguf_writer.add_tokenizer_model("none")

    if not os.path.exists(os.path.join(folder, "tokenizer.model")):
        for name in dir(base.TextModel):  # the vocabulary steps every model class's set_vocab goes through
            if name == "set_vocab" or name.startswith("_set_vocab"):
                setattr(base.TextModel, name, placeholder_vocab)
        classes = base.TextModel.__subclasses__()
        while classes:  # classes with a set_vocab of their own (BertModel's asks transformers' AutoTokenizer)
            cls = classes.pop()
            classes.extend(cls.__subclasses__())
            if "set_vocab" in vars(cls):
                cls.set_vocab = placeholder_vocab
    sys.argv = ["convert_hf_to_gguf.py", folder, "--outfile", out, "--outtype", outtype]
    convert.main()


if __name__ == "__main__":
    main()
