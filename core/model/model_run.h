// A model run's data, whatever the model: its tokens, every layer's attention trace, the
// logits of the positions asked for, the residual stream when kept; and the rules that let a
// runner keep rows between runs (cached rows, one-row generation steps). model/model.h runs
// models into it.
//
// Sizes: N layers, H heads, L positions, D hidden size, V vocabulary.
#pragma once

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "attention/attention.h"
#include "attention/cached_rows.h"
#include "tensor/tensor.h"

namespace attnscope {

// A text's tokens as the model's tokenizer makes them (model/model.h: tokenizeForModel).
struct ModelTokens {
  std::vector<int64_t> ids;          // [L]
  std::vector<std::string> text;     // [L] the piece of the text at each position (a character, a byte, a token)
  std::vector<std::string> label;    // [L] the same as one printable line ("\\n", "\\xc3", "␣the")
  std::vector<uint8_t> unknown;      // [L] 1 = not in the vocabulary, mapped to the unknown id
  std::vector<std::string> source;   // [L] or empty: the word of the text a tokenizer's unknown token stands for
  int64_t unknownCount() const;
};
// A token's text as one printable line: "\n" -> "\\n", "\t" -> "\\t", other control bytes
// -> "\\xNN"; backslashes doubled.
std::string escapeToken(const std::string& text);

// A run's logits [L, V] (row t scores the token after position t), stored per 64-row block
// once one of its rows is computed: the app unembeds a few positions (LogitRows), and the
// rows it never computes would take L V floats (250 MiB for a 128k vocabulary at 512 tokens).
class RunLogits {
 public:
  // L positions of V scores: rows [0, keep) stay as they were (computed or not), the others
  // are not computed (blocks left without a computed row are freed).
  void resize(int64_t L, int64_t V, int64_t keep);
  bool empty() const { return V_ == 0; }
  int64_t positions() const { return L_; }
  int64_t vocab() const { return V_; }
  bool computed(int64_t t) const { return computed_[t] != 0; }
  const float* row(int64_t t) const;  // [V]; null when not computed
  // Rows [first, end) of one 64-row block, to be written now: [end - first, V], marked computed.
  float* rowsToWrite(int64_t first, int64_t end);
  Tensor dense() const;  // [L, V], NaN rows where not computed

 private:
  int64_t L_ = 0, V_ = 0;
  std::vector<FloatBuffer> blocks_;  // [blocks of L]: [64, V] or empty
  std::vector<uint8_t> computed_;    // [L]
};

struct ModelRun {
  ModelTokens tokens;                  // [L]
  std::vector<AttentionTrace> layers;  // [N], each B = 1: probs [1, H, L, L]
  RunLogits logits;                    // the positions LogitRows asked for (all by default)
  int64_t logits_rows = 0;             // rows the last run (or computeLogitRows) unembedded
  Tensor final_residual;               // [L, D] the output head's input (after the last layer), so
                                       // that rows not unembedded can be later (computeLogitRows)
  Tensor residuals;                    // [N + 1, L, D] when the runner keeps them (keepResiduals),
                                       // [0] the embeddings, [k] the residual stream after k layers
  // The run computed rows [first_computed, L) (maps, logits); the rows before it were kept
  // from the run before, whose tokens agreed up to there. 0 = a full forward.
  int64_t first_computed = 0;
  int64_t rowsComputed() const { return static_cast<int64_t>(tokens.ids.size()) - first_computed; }
  // Generation's one-row steps (the runners' step()): positions from decoded_from on went
  // through decode caches one at a time; the layers' traces hold the maps of positions
  // [0, decoded_from) only, and the next run() recomputes from decoded_from. -1 = none.
  int64_t decoded_from = -1;
  Tensor step_probs;  // [N, H, L]: the last step's map rows (probs over keys [0, L))
  // Every layer kept its maps; false: a run beyond its runner's maps budget kept Q, K and the
  // row normalisers instead (AttentionTrace::normalisers; attention/tiles.h shows the maps).
  bool mapsKept() const { return layers.empty() || layers.front().normalisers.empty(); }
};

// What a step leaves in the layers' traces: nothing (RowsOnly: the maps stay those of the
// positions before decoded_from, the new rows are in step_probs; the cheapest) or the new
// position's rows too (Keep: every trace is complete, as a run leaves it, at the cost
// of re-laying out its [H, L, L] maps).
enum class StepMaps { RowsOnly, Keep };

// Whether a causal runner can step() from `last` to `tokens`: they are its tokens plus one,
// and its traces and residuals hold what the step builds on; run() otherwise.
bool canStep(const ModelRun& last, const ModelTokens& tokens, StepMaps maps, bool keep_residuals);

// Bytes of a run's maps: scores and probs [H, L, L] of every layer, in float32.
uint64_t modelMapBytes(int64_t layers, int64_t H, int64_t L);

// How many leading tokens of `tokens` the last run computed for the same ids, whose rows a
// causal runner keeps (attention/cached_rows.h): 0 when it has none, when the residuals
// are wanted (keep_residuals) and the last run did not keep them, or when the last run kept
// its maps and this one will not (keep_maps) or the other way round.
int64_t reusablePrefix(const ModelRun& last, const ModelTokens& tokens, bool keep_residuals, bool keep_maps = true);

// residuals [slots, L, D] resized for L positions; each slot's rows [0, min(old L, L)) kept
// (a run keeps the residuals of the positions before its first changed token).
void resizeResiduals(int64_t slots, int64_t L, int64_t D, Tensor& residuals);
// Slot `index`'s rows [start, start + n) = x [n, D].
void storeResidualRows(const Tensor& x, int64_t index, int64_t start, Tensor& residuals);

// Which positions' logits a run computes: the unembedding ([L, D] x [D, V]) is most of a small
// model's run when V is large, and the app shows a few positions' predictions only. Positions
// are widened to their 64-row blocks (the app's unit of predictions); a row's logits equal the
// full run's bit for bit whichever rows share the call; the rows not computed are not stored.
struct LogitRows {
  bool all = true;                 // every position (model run, generate, bench, exports)
  std::vector<int64_t> positions;  // otherwise these; a negative one counts from the end (-1 = the last)
  // false: exactly these positions, not their blocks (a sweep reads one row per run: its
  // block would be up to 64 rows of [D] x [D, V], more than a run of a short text).
  bool blocks = true;
  bool wants(int64_t position, int64_t L) const;  // position's 64-row block holds a wanted one
};

// The output head on residual rows x [rows, D] (any positions): logits [rows, V].
using RowHead = std::function<void(const Tensor& x, float* logits)>;

// After a run computed rows [start, L) into x [L - start, D]: the final residual rows kept and
// those logits rows marked not computed (until computeLogitRows); rows [0, start) kept.
void startLogitRows(ModelRun& run, const Tensor& x, int64_t start, int64_t V);
// Unembeds each 64-row block that holds a wanted position not computed yet, from
// run.final_residual (after a step(), only the stepped row: a run's bits are back at the
// next run, ModelRun::decoded_from); sets run.logits_rows to the rows computed and returns it.
int64_t computeLogitRows(ModelRun& run, const LogitRows& wanted, const RowHead& head);
// The 64-row block [first, end) that holds `position` in a run of L positions.
std::pair<int64_t, int64_t> logitBlock(int64_t position, int64_t L);
// Logits [end - first, V] of rows [first, end) (one block) of final residual rows [L, D]:
// a run's rows bit for bit.
void blockLogits(const Tensor& final_residual, std::pair<int64_t, int64_t> block, const RowHead& head, float* logits);

struct Prediction {
  int64_t id = 0;
  std::string label;  // vocab entry, escaped for one line ("\\n")
  double prob = 0.0;
};

// [V] next-token probabilities after a position: softmax of its logits [V], in double.
std::vector<double> nextTokenProbs(const float* logits, int64_t V);

// The ids of the k largest entries of p, largest first (ties: the smaller id first).
std::vector<int64_t> topIds(const std::vector<double>& p, int64_t k);

}  // namespace attnscope
