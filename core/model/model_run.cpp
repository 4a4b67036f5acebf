#include "model/model_run.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "attention/kernel.h"
#include "attention/softmax_row.h"
#include "tensor/memory.h"

namespace attnscope {

int64_t ModelTokens::unknownCount() const {
  int64_t n = 0;
  for (uint8_t u : unknown) n += u;
  return n;
}

std::string escapeToken(const std::string& text) {
  std::string out;
  for (unsigned char ch : text) {
    if (ch == '\n') out += "\\n";
    else if (ch == '\t') out += "\\t";
    else if (ch == '\r') out += "\\r";
    else if (ch == '\\') out += "\\\\";
    else if (ch < 0x20 || ch == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", ch);
      out += buf;
    } else {
      out += static_cast<char>(ch);
    }
  }
  return out;
}


std::vector<double> nextTokenProbs(const float* row, int64_t V) {
  const double top = *std::max_element(row, row + V);
  std::vector<double> p(V);
  const double sum = expShiftedInto(row, V, top, p.data());
  for (double& x : p) x /= sum;
  return p;
}

std::vector<int64_t> topIds(const std::vector<double>& p, int64_t k) {
  const int64_t V = static_cast<int64_t>(p.size());
  k = std::min(k, V);
  // One pass keeping the k best in order (a vocabulary is scanned for 5 ids: sorting the
  // order of all of it cost twice its softmax). Ids come in increasing order, so a later id
  // of an equal probability never displaces an earlier one.
  std::vector<int64_t> best;
  best.reserve(static_cast<size_t>(k) + 1);
  for (int64_t v = 0; v < V && k > 0; ++v) {
    if (static_cast<int64_t>(best.size()) == k && !(p[v] > p[best.back()])) continue;
    auto at = best.end();
    while (at != best.begin() && p[v] > p[*(at - 1)]) --at;
    best.insert(at, v);
    if (static_cast<int64_t>(best.size()) > k) best.pop_back();
  }
  return best;
}

uint64_t modelMapBytes(int64_t layers, int64_t H, int64_t L) {
  const double bytes = 8.0 * static_cast<double>(layers) * static_cast<double>(H) * static_cast<double>(L) * L;
  return bytes >= 1.8e19 ? UINT64_MAX : static_cast<uint64_t>(bytes);
}

int64_t reusablePrefix(const ModelRun& last, const ModelTokens& tokens, bool keep_residuals, bool keep_maps) {
  if (last.layers.empty() || (keep_residuals && last.residuals.empty()) || last.mapsKept() != keep_maps) return 0;
  const std::vector<int64_t>& before = last.tokens.ids;
  const size_t n = std::min(before.size(), tokens.ids.size());
  const int64_t same = std::mismatch(before.begin(), before.begin() + n, tokens.ids.begin()).first - before.begin();
  return last.decoded_from >= 0 ? std::min(same, last.decoded_from) : same;
}

bool canStep(const ModelRun& last, const ModelTokens& tokens, StepMaps maps, bool keep_residuals) {
  const std::vector<int64_t>& before = last.tokens.ids;
  const bool extends = !last.layers.empty() && before.size() + 1 == tokens.ids.size() &&
                       std::equal(before.begin(), before.end(), tokens.ids.begin());
  // Keep appends to traces that hold every position so far (not after RowsOnly steps); a
  // run in tiles has no maps to append to; the lens needs the residuals kept so far.
  return extends && last.mapsKept() && (maps == StepMaps::RowsOnly || last.layers.front().L == static_cast<int64_t>(before.size())) &&
         (!keep_residuals || !last.residuals.empty());
}

void resizeResiduals(int64_t slots, int64_t L, int64_t D, Tensor& residuals) {
  const int64_t old_L = residuals.shape.size() == 3 && residuals.dim(0) == slots && residuals.dim(2) == D ? residuals.dim(1) : 0;
  const int64_t kept = std::min(old_L, L);
  // In place, with room to grow: a generated or typed token moves the rows instead of copying
  // every slot into fresh memory (71 MiB a token for a 1B model at 512 tokens).
  regrid(residuals.data, slots, old_L, D, L, D, kept, 0.0f);
  for (int64_t s = 0; s < slots; ++s)
    std::fill(residuals.data.begin() + (s * L + kept) * D, residuals.data.begin() + (s + 1) * L * D, 0.0f);
  residuals.shape = {slots, L, D};
}

void storeResidualRows(const Tensor& x, int64_t index, int64_t start, Tensor& residuals) {
  const int64_t L = residuals.dim(1), D = residuals.dim(2);
  std::copy(x.data.begin(), x.data.end(), residuals.data.begin() + (index * L + start) * D);
}

bool LogitRows::wants(int64_t position, int64_t L) const {
  if (all) return true;
  for (int64_t p : positions) {
    if (p < 0) p += L;
    if (p >= 0 && p < L && p / kRowBlock == position / kRowBlock) return true;
  }
  return false;
}

void RunLogits::resize(int64_t L, int64_t V, int64_t keep) {
  if (V != V_) keep = 0;
  keep = std::min(keep, L);
  L_ = L, V_ = V;
  computed_.resize(static_cast<size_t>(L));
  std::fill(computed_.begin() + keep, computed_.end(), 0);
  blocks_.resize(static_cast<size_t>(rowBlocks(L)));
  for (int64_t b = 0; b < static_cast<int64_t>(blocks_.size()); ++b) {
    const int64_t first = b * kRowBlock, end = std::min(L, first + kRowBlock);
    if (std::find(computed_.begin() + first, computed_.begin() + end, 1) == computed_.begin() + end)
      FloatBuffer().swap(blocks_[b]);
  }
}

const float* RunLogits::row(int64_t t) const {
  return computed_[t] ? &blocks_[t / kRowBlock][(t % kRowBlock) * V_] : nullptr;
}

float* RunLogits::rowsToWrite(int64_t first, int64_t end) {
  FloatBuffer& block = blocks_[first / kRowBlock];
  // Unset until written: only rows marked computed are read (row()); 12.3 MiB a block at V 50257.
  if (block.empty()) resizePrefaulted(block, static_cast<size_t>(kRowBlock * V_), std::nullopt);
  std::fill(computed_.begin() + first, computed_.begin() + end, 1);
  return &block[(first % kRowBlock) * V_];
}

Tensor RunLogits::dense() const {
  Tensor out({L_, V_}, std::nanf(""));
  for (int64_t t = 0; t < L_; ++t)
    if (const float* r = row(t)) std::copy_n(r, V_, &out.data[t * V_]);
  return out;
}

void startLogitRows(ModelRun& run, const Tensor& x, int64_t start, int64_t V) {
  const int64_t L = start + x.dim(0), D = x.dim(1);
  run.final_residual.shape = {L, D};
  run.final_residual.data.resize(L * D);  // rows [0, start) kept
  std::copy(x.data.begin(), x.data.end(), run.final_residual.data.begin() + start * D);
  run.logits.resize(L, V, start);
}

std::pair<int64_t, int64_t> logitBlock(int64_t position, int64_t L) {
  const int64_t first = position / kRowBlock * kRowBlock;
  return {first, std::min(L, first + kRowBlock)};
}

void blockLogits(const Tensor& final_residual, std::pair<int64_t, int64_t> block, const RowHead& head, float* logits) {
  const auto [first, end] = block;
  const int64_t D = final_residual.dim(1);
  Tensor x({end - first, D});  // the block's final residual rows
  std::copy(final_residual.data.begin() + first * D, final_residual.data.begin() + end * D, x.data.begin());
  head(x, logits);
}

int64_t computeLogitRows(ModelRun& run, const LogitRows& wanted, const RowHead& head) {
  run.logits_rows = 0;
  if (run.logits.empty()) return 0;
  const int64_t L = run.logits.positions();
  if (!wanted.all && !wanted.blocks) {  // the positions alone (a row's bits do not depend on its call's rows)
    for (int64_t p : wanted.positions) {
      if (p < 0) p += L;
      if (p < 0 || p >= L || run.logits.computed(p)) continue;
      blockLogits(run.final_residual, {p, p + 1}, head, run.logits.rowsToWrite(p, p + 1));
      ++run.logits_rows;
    }
    return run.logits_rows;
  }
  for (int64_t start = 0; start < L; start += kRowBlock) {
    const int64_t end = logitBlock(start, L).second;
    // The block's rows not computed: all of them, or those after the rows a run kept.
    int64_t first = start;
    while (first < end && run.logits.computed(first)) ++first;
    if (first == end || !wanted.wants(start, L)) continue;
    blockLogits(run.final_residual, {first, end}, head, run.logits.rowsToWrite(first, end));
    run.logits_rows += end - first;
  }
  return run.logits_rows;
}

}  // namespace attnscope
