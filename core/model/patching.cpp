#include "model/patching.h"

#include <string>
#include <vector>

#include "model/sweep_runs.h"

namespace attnscope {
namespace {

// The patches of the sweep, made from the clean run: each head's z [L, d], each layer's input [L, D].
struct CleanActivations {
  std::vector<std::vector<float>> z;  // [N * H]
  Tensor inputs;                      // [N + 1, L, D]: slot l enters layer l
};

CleanActivations cleanActivations(const ModelRun& run) {
  CleanActivations a;
  for (const AttentionTrace& t : run.layers)  // context_heads [1, H, L, d]: the heads' own z
    for (int64_t h = 0; h < t.H; ++h) {
      const auto first = t.context_heads.data.begin() + h * t.L * t.d;
      a.z.emplace_back(first, first + t.L * t.d);
    }
  a.inputs = run.residuals;
  return a;
}

void checkPatchInputs(const Model& m, const ModelTokens& clean, const ModelTokens& corrupt, int64_t answer, int64_t wrong) {
  if (clean.ids.size() != corrupt.ids.size())
    throw InputError("the clean text has " + std::to_string(clean.ids.size()) + " " + tokenUnit(m) +
                     " but the corrupt one has " + std::to_string(corrupt.ids.size()) +
                     ": activation patching needs two sequences of equal length");
  if (!m.hasHead()) throw InputError(m.folder + ": activation patching needs an output head, and this encoder has none");
  checkTokenId(m, answer);
  checkTokenId(m, wrong);
}

}  // namespace

double patchMetric(const ModelRun& run, int64_t answer, int64_t wrong) {
  const float* row = run.logits.row(static_cast<int64_t>(run.tokens.ids.size()) - 1);
  return static_cast<double>(row[answer]) - static_cast<double>(row[wrong]);
}

PatchTables patchSweep(ModelRunner& runner, const ModelTokens& clean, const ModelTokens& corrupt, int64_t answer,
                       int64_t wrong, const Progress& progress) {
  const Model& m = runner.model();
  checkPatchInputs(m, clean, corrupt, answer, wrong);
  const int64_t N = m.config.n_layers, H = m.config.heads, L = static_cast<int64_t>(clean.ids.size()), D = m.config.hidden;
  runner.setInterventions({});
  runner.keepResiduals(true);
  runner.logitRows(LogitRows{false, {-1}, false});
  runner.keepMapsWithin(0);  // only a logits row is read: no [H, L, L] maps written (same bits, cached_rows.h)
  PatchTables t;
  const CleanActivations a = cleanActivations(runner.run(clean));
  t.clean = patchMetric(runner.last(), answer, wrong);
  t.corrupt = patchMetric(runner.run(corrupt), answer, wrong);
  t.heads = Tensor({N, H});
  t.resid = Tensor({N, L});
  // Groups 2l and 2l + 1: layer l's residual rows (position by position: each run recomputes
  // from its position on) and layer l's heads; the costliest (the first layers) first.
  std::vector<int64_t> sizes;
  for (int64_t l = 0; l < N; ++l) sizes.insert(sizes.end(), {L, H});
  runSweepGroups(runner, sizes, [&](ModelRunner& r, int64_t group, int64_t k) {
    const int64_t l = group / 2;
    Interventions in;
    if (group % 2 == 1) {
      in.head_patches.push_back({l, k, a.z[l * H + k]});
    } else {
      const auto first = a.inputs.data.begin() + (l * L + k) * D;
      in.residual_patches.push_back({l, k, std::vector<float>(first, first + D)});
    }
    r.setInterventions(std::move(in));
    const float metric = static_cast<float>(patchMetric(r.run(corrupt), answer, wrong));
    (group % 2 == 1 ? t.heads.data[l * H + k] : t.resid.data[l * L + k]) = metric;
  }, progress);
  return t;
}

std::vector<std::optional<double>> normalisedPatchTable(const Tensor& table, double clean, double corrupt) {
  std::vector<std::optional<double>> cells(table.data.size());
  if (clean == corrupt) return cells;
  for (size_t k = 0; k < cells.size(); ++k) cells[k] = (static_cast<double>(table.data[k]) - corrupt) / (clean - corrupt);
  return cells;
}

TypedToken typedToken(const Model& m, const std::string& text) {
  TypedToken typed;
  std::vector<int64_t> ids;
  if (m.chars) {
    const ModelTokens t = m.chars->encode(text);
    ids = t.ids, typed.pieces = t.label;
  } else if (m.tokenizer) {
    for (const Token& t : m.tokenizer->encode(text, false)) ids.push_back(t.id), typed.pieces.push_back(escapeToken(t.piece));
  } else {
    throw InputError(m.folder + ": no tokenizer to read a typed token with: give its id");
  }
  if (ids.size() == 1) typed.id = ids.front();
  return typed;
}

std::string notOneToken(const Model& m, const TypedToken& typed) {
  std::string list;
  for (const std::string& piece : typed.pieces) list += (list.empty() ? "'" : ", '") + piece + "'";
  return "it is " + std::to_string(typed.pieces.size()) + " tokens of " + m.name() + "'s vocabulary" +
         (list.empty() ? "" : " (" + list + ")") + ", not one";
}

}  // namespace attnscope
