// `attnscope model patch MODEL (--clean T | --clean-ids I) (--corrupt T | --corrupt-ids J)
// (--answer TOKEN | --answer-id A) (--wrong TOKEN | --wrong-id B) --out DIR [--json]`:
// activation patching (model/patching.h). Every input is checked before the output folder
// is touched; the files are written staged, as `model run` does.
#include <cmath>
#include <iomanip>
#include <iostream>

#include <nlohmann/json.hpp>

#include "cli/model_generate.h"
#include "cli/out_folder.h"
#include "cli/run_command.h"
#include "model/folder_runner.h"
#include "tensor/npy.h"
#include "tensor/text_file.h"

namespace attnscope {
namespace {

// The one token `text` is in the model's vocabulary, or InputError naming the pieces it became.
int64_t singleToken(const Model& m, const std::string& flag, const std::string& text) {
  TypedToken typed;
  try {
    typed = typedToken(m, text);
  } catch (const InputError&) {
    throw InputError(m.folder + ": no tokenizer to read " + flag + " with: give " + flag + "-id");
  }
  if (typed.id) return *typed.id;
  throw InputError(flag + " \"" + text + "\": " + notOneToken(m, typed) + ": give one token, or " + flag + "-id");
}

int64_t tokenOf(const Model& m, const std::string& flag, const std::optional<std::string>& text, std::optional<int64_t> id) {
  if (!text) {
    try {
      checkTokenId(m, *id);
    } catch (const InputError& e) {
      throw InputError(flag + "-id: " + e.what());
    }
    return *id;
  }
  return singleToken(m, flag, *text);
}

ModelTokens sequenceOf(const FolderModelRunner& r, const std::string& flag, const std::optional<std::string>& text,
                       const std::optional<std::string>& ids) {
  if (text) return tokensForRun(r.model(), *text, Truncate::None);
  try {
    return r.tokensFromIds(parseIds(*ids, flag + "-ids"));
  } catch (const InputError& e) {
    const std::string message = e.what();
    throw InputError(message.rfind(flag, 0) == 0 ? message : flag + "-ids: " + message);
  }
}

// normalisedPatchTable as rows of JSON numbers (null where clean = corrupt).
nlohmann::json normalised(const Tensor& table, double clean, double corrupt) {
  const std::vector<std::optional<double>> cells = normalisedPatchTable(table, clean, corrupt);
  nlohmann::json rows = nlohmann::json::array();
  for (int64_t r = 0; r < table.dim(0); ++r) {
    nlohmann::json row = nlohmann::json::array();
    for (int64_t c = 0; c < table.dim(1); ++c) {
      const std::optional<double>& cell = cells[r * table.dim(1) + c];
      row.push_back(cell ? nlohmann::json(*cell) : nlohmann::json(nullptr));
    }
    rows.push_back(std::move(row));
  }
  return rows;
}

nlohmann::json patchJson(const Model& m, const ModelTokens& clean, const ModelTokens& corrupt, int64_t answer,
                         int64_t wrong, const PatchTables& t) {
  return {{"model", m.name()},
          {"layers", m.config.n_layers},
          {"heads", m.config.heads},
          {"tokens", clean.ids.size()},
          {"clean_tokens", clean.label},
          {"corrupt_tokens", corrupt.label},
          {"metric", "logit(answer) - logit(wrong) at the last position"},
          {"answer_id", answer},
          {"answer_piece", tokenLabel(m, answer)},
          {"wrong_id", wrong},
          {"wrong_piece", tokenLabel(m, wrong)},
          {"clean_metric", t.clean},
          {"corrupt_metric", t.corrupt},
          {"patch_heads_normalised", normalised(t.heads, t.clean, t.corrupt)},
          {"patch_resid_normalised", normalised(t.resid, t.clean, t.corrupt)}};
}

void printPatchSummary(const Model& m, int64_t L, const PatchTables& t, const std::string& out) {
  const int64_t N = t.heads.dim(0), H = t.heads.dim(1);
  int64_t best = 0;
  for (int64_t k = 1; k < N * H; ++k)
    if (std::abs(t.heads.data[k] - t.corrupt) > std::abs(t.heads.data[best] - t.corrupt)) best = k;
  std::cout << "attnscope model patch: " << m.name() << " (" << N << " layers x " << H << " heads, " << L << " tokens)\n"
            << std::fixed << std::setprecision(4) << "  metric  clean " << t.clean << ", corrupt " << t.corrupt << "\n"
            << "  largest head effect  L" << best / H << "H" << best % H << ": " << t.heads.data[best] << "\n"
            << "  wrote   patch_heads.npy [" << N << ", " << H << "], patch_resid.npy [" << N << ", " << L
            << "], patch.json to " << out << "\n";
}

void checkPatchFlags(const PatchFlags& f) {
  auto one = [](bool a, bool b, const char* what) {
    if (a == b) throw UsageError(std::string("patch: give ") + what);
  };
  one(bool(f.clean), bool(f.clean_ids), "either --clean TEXT or --clean-ids IDS");
  one(bool(f.corrupt), bool(f.corrupt_ids), "either --corrupt TEXT or --corrupt-ids IDS");
  one(bool(f.answer), bool(f.answer_id), "either --answer TOKEN or --answer-id ID");
  one(bool(f.wrong), bool(f.wrong_id), "either --wrong TOKEN or --wrong-id ID");
}

}  // namespace

void addPatchOptions(CLI::App& app, PatchFlags& flags) {
  app.add_option("MODEL", flags.model, "model folder (attnscope-model/1 or Hugging Face) with an output head")->required();
  app.add_option("--clean", flags.clean, "the clean text");
  app.add_option("--clean-ids", flags.clean_ids, "the clean token ids, separated by commas");
  app.add_option("--corrupt", flags.corrupt, "the corrupt text (as many tokens as the clean one)");
  app.add_option("--corrupt-ids", flags.corrupt_ids, "the corrupt token ids, separated by commas");
  app.add_option("--answer", flags.answer, "the answer token (exactly one token of the model's vocabulary)");
  app.add_option("--answer-id", flags.answer_id, "the answer token's id");
  app.add_option("--wrong", flags.wrong, "the wrong token (exactly one token)");
  app.add_option("--wrong-id", flags.wrong_id, "the wrong token's id");
  app.add_option("--out", flags.out, "output folder (created if missing)")->required();
  app.add_flag("--json", flags.json, "print patch.json on stdout instead of the summary");
  app.footer(
      "Metric: logit(answer) - logit(wrong) at the last position. patch_heads.npy [n_layers, H] float32: the metric of the\n"
      "corrupt run with that head's z (its attention output before o_proj) at every position from the clean run;\n"
      "patch_resid.npy [n_layers, L] float32: with the residual stream entering layer l at position p from the clean run.\n"
      "Exit status: 0 ok, 1 bad input (nothing written), 2 usage error.\n"
      "Example: attnscope model patch assets/models/python-code --clean 'a=1;b=a' --corrupt 'a=1;b=c' --answer ';' "
      "--wrong '1' --out patch");
}

int modelPatch(const PatchFlags& flags) {
  checkPatchFlags(flags);
  FolderModelRunner runner(flags.model);
  const Model& m = runner.model();
  const ModelTokens clean = sequenceOf(runner, "--clean", flags.clean, flags.clean_ids);
  const ModelTokens corrupt = sequenceOf(runner, "--corrupt", flags.corrupt, flags.corrupt_ids);
  const int64_t answer = tokenOf(m, "--answer", flags.answer, flags.answer_id);
  const int64_t wrong = tokenOf(m, "--wrong", flags.wrong, flags.wrong_id);
  checkOutDir(flags.out);
  const PatchTables t = runner.patch(clean, corrupt, answer, wrong);  // InputError for unequal lengths, no head
  const nlohmann::json json = patchJson(m, clean, corrupt, answer, wrong, t);
  writeOutputFiles(flags.out, "model",
                   {{"patch_heads.npy", [&](const std::string& p) { writeNpy(p, t.heads); }},
                    {"patch_resid.npy", [&](const std::string& p) { writeNpy(p, t.resid); }},
                    {"patch.json", [&](const std::string& p) { writeFileAtomic(p, json.dump(1) + "\n"); }}});
  if (flags.json) std::cout << json.dump(1) << "\n";
  else printPatchSummary(m, static_cast<int64_t>(clean.ids.size()), t, flags.out);
  return 0;
}

}  // namespace attnscope
