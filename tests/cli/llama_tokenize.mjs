// Test-only: llama.cpp's own tokenization of texts (npm node-llama-cpp 3.22.1, its prebuilt CPU
// binary; nothing built or downloaded). Usage: node llama_tokenize.mjs PACKAGE_DIR MODEL.gguf TEXTS.json
// Prints a JSON list with, per text, the ids of model.tokenize(text) (no BOS: llama.cpp adds it
// where the vocabulary says, which the caller checks itself), plus {"bos", "add_bos"}.
import fs from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";

const [packageDir, modelPath, textsPath] = process.argv.slice(2);
const { getLlama } = await import(pathToFileURL(path.join(packageDir, "dist", "index.js")).href);
const llama = await getLlama({ gpu: false, build: "never", usePrebuiltBinaries: true, skipDownload: true, logLevel: "error" });
const model = await llama.loadModel({ modelPath });
const texts = JSON.parse(fs.readFileSync(textsPath, "utf8"));
const ids = texts.map((text) => Array.from(model.tokenize(text)));
process.stdout.write(JSON.stringify({ ids, bos: model.tokens.bos, add_bos: model.tokens.shouldPrependBosToken }) + "\n");
await model.dispose();
await llama.dispose();
