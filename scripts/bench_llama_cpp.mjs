// llama.cpp's side of scripts/bench_gguf_vs_llamacpp.py: npm's node-llama-cpp (its prebuilt CPU
// binary, nothing built or downloaded) on the same GGUF file, same threads. Each round: the
// prompt's token ids evaluated in one batch (the prompt processing), then greedy tokens one by
// one (the time between two tokens is one step). F32 KV cache and flash attention off, the
// configuration whose maps attnscope's equal.
// Usage: node bench_llama_cpp.mjs PACKAGE_DIR MODEL.gguf L THREADS GENERATE ROUNDS VOCAB
// Prints one JSON object: prompt_ms (per round), step_ms (median per round), steps, peak_rss_mb.
import path from "node:path";
import { pathToFileURL } from "node:url";

const [packageDir, modelPath, ...numbers] = process.argv.slice(2);
const [L, threads, generate, rounds, vocab] = numbers.map(Number);
const { getLlama } = await import(pathToFileURL(path.join(packageDir, "dist", "index.js")).href);
const llama = await getLlama({ gpu: false, build: "never", usePrebuiltBinaries: true, skipDownload: true, logLevel: "error" });
const model = await llama.loadModel({ modelPath });
const context = await model.createContext({
  contextSize: L + generate + 16, batchSize: L, threads, flashAttention: false,
  experimentalKvCacheKeyType: "F32", experimentalKvCacheValueType: "F32",
});
const sequence = context.getSequence();
// Seeded ids past the first 16 (special tokens live low in most vocabularies).
let seed = 12345;
const ids = Array.from({ length: L }, () => {
  seed = (seed * 1103515245 + 12345) % 2147483648;
  return 16 + (seed % (vocab - 16));
});
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const prompt = [], step = [];
let steps = 0;
for (let round = 0; round < rounds; ++round) {
  await sequence.clearHistory();
  const times = [performance.now()];
  for await (const _token of sequence.evaluate(ids, { temperature: 0 })) {
    times.push(performance.now());
    if (times.length > generate + 1) break;
  }
  prompt.push(times[1] - times[0]);
  const gaps = times.slice(2).map((t, i) => t - times[i + 1]);
  if (gaps.length > 0) step.push(median(gaps));
  steps = gaps.length;
}
process.stdout.write(JSON.stringify({ prompt_ms: prompt, step_ms: step, steps,
  peak_rss_mb: process.resourceUsage().maxRSS / 1024 }) + "\n");
await context.dispose();
await model.dispose();
await llama.dispose();
