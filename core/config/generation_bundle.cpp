#include "config/generation_bundle.h"

#include <filesystem>
#include <system_error>

#include "tensor/npy.h"

namespace attnscope {
namespace {

namespace fs = std::filesystem;

// [n_layers, 1, H, L, L]: every layer's probabilities of the view (batch item 0).
Tensor stackedProbs(const ViewModel& view) {
  const int64_t cells = view.H * view.L * view.S;
  Tensor out({view.layers, 1, view.H, view.L, view.S});
  for (int64_t l = 0; l < view.layers; ++l)
    std::copy_n(view.maps[l].probs.get(), cells, out.data.data() + l * cells);
  return out;
}

}  // namespace

namespace {

// A SentencePiece byte-fallback piece, "<0xE4>".
bool isBytePiece(const std::string& piece) {
  return piece.size() == 6 && piece.compare(0, 3, "<0x") == 0 && piece[5] == '>';
}

}  // namespace

std::string tokensText(const ModelTokens& tokens, int64_t first_generated) {
  std::string out;
  for (size_t t = 0; t < tokens.ids.size(); ++t) {
    out += std::to_string(t) + "\t" + std::to_string(tokens.ids[t]) + "\t" + tokens.label[t];
    const bool generated = static_cast<int64_t>(t) >= first_generated;
    // A byte piece labelled as the character it starts, or "·", keeps its raw piece in a
    // sixth column (the other lines stay as they were).
    const bool piece = t < tokens.text.size() && isBytePiece(tokens.text[t]) && tokens.text[t] != tokens.label[t];
    if (tokens.unknown[t] || generated || piece) out += tokens.unknown[t] ? "\tunknown" : "\t";
    if (generated || piece) out += generated ? "\tgenerated" : "\t";
    if (piece) out += "\t" + tokens.text[t];
    out += "\n";
  }
  return out;
}

nlohmann::json stepsJson(const std::vector<GenerationStep>& steps) {
  nlohmann::json out = nlohmann::json::array();
  for (const GenerationStep& s : steps) {
    nlohmann::json top = nlohmann::json::array();
    for (const Prediction& p : s.top) top.push_back({p.id, p.label, p.prob});
    out.push_back({{"position", s.position}, {"id", s.id}, {"token", s.token}, {"prob", s.prob},
                   {"rank", s.rank}, {"top", top}, {"ms", s.ms}});
  }
  return out;
}

std::string freshFolderName(const std::string& parent, const std::string& base) {
  std::error_code ec;
  for (int n = 1;; ++n) {
    const fs::path candidate = fs::path(parent) / (base + "-" + std::to_string(n));
    if (!fs::exists(candidate, ec)) return candidate.string();
  }
}

void writeGenerationBundle(const std::string& dir, const GenerationFiles& files) {
  std::error_code ec;
  if (!files.view || files.view->maps.empty() || files.view->B != 1)
    throw InputError(dir + ": no generation to write");
  if (fs::exists(dir, ec)) throw InputError(dir + ": already exists (never overwritten)");
  const fs::path staging = fs::path(dir).parent_path() / ("." + fs::path(dir).filename().string() + ".partial");
  fs::remove_all(staging, ec);
  if (!fs::create_directories(staging, ec) || ec) throw InputError(staging.string() + ": cannot create (" + ec.message() + ")");
  try {
    const ViewModel& v = *files.view;
    writeNpy((staging / "attentions.npy").string(), stackedProbs(v));
    writeFileAtomic((staging / "tokens.txt").string(), tokensText(files.tokens, files.prompt_length));
    writeFileAtomic((staging / "steps.json").string(), stepsJson(files.steps).dump(1) + "\n");
    writeFileAtomic((staging / "generated.txt").string(), files.generated_text);
    const nlohmann::json meta = {{"model", v.model},
                                 {"notes", "generation: " + std::to_string(files.steps.size()) + " tokens after a " +
                                               std::to_string(files.prompt_length) + "-token prompt"}};
    writeFileAtomic((staging / "bundle.json").string(), meta.dump(1) + "\n");
    fs::rename(staging, dir, ec);
    if (ec) throw InputError(dir + ": cannot rename the staged folder into place (" + ec.message() + ")");
  } catch (...) {
    fs::remove_all(staging, ec);
    throw;
  }
}

}  // namespace attnscope
