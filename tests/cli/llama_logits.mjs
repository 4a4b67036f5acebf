// Test-only: llama.cpp's own logits of token ids at every position (npm node-llama-cpp 3.22.1,
// its prebuilt CPU binary; flash attention off, F32 KV cache, as close to exact float math as
// llama.cpp goes). Usage: node llama_logits.mjs PACKAGE_DIR MODEL.gguf IDS_JSON
// Prints a JSON list [L][V] of logits.
import path from "node:path";
import { pathToFileURL } from "node:url";

const [packageDir, modelPath, idsJson] = process.argv.slice(2);
const ids = JSON.parse(idsJson);
const { getLlama } = await import(pathToFileURL(path.join(packageDir, "dist", "index.js")).href);
const llama = await getLlama({ gpu: false, build: "never", usePrebuiltBinaries: true, skipDownload: true, logLevel: "error" });
const model = await llama.loadModel({ modelPath });
const context = await model.createContext({ contextSize: Math.max(ids.length, 16), flashAttention: false,
  experimentalKvCacheKeyType: "F32", experimentalKvCacheValueType: "F32", threads: 2 });
const results = await context.getSequence().controlledEvaluate(ids.map((t) => [t, { generateNext: { logits: true } }]));
const rows = results.map((r) => {
  const row = new Array(r.next.logits.size);
  for (const [token, logit] of r.next.logits) row[token] = logit;
  return row;
});
process.stdout.write(JSON.stringify(rows) + "\n");
await context.dispose();
await model.dispose();
await llama.dispose();
