// `attnscope models [--json]`: the models already on this machine (model/local_models.h), found
// without any network; `hf:ORG/NAME` and `ollama:NAME[:TAG]` open them wherever a MODEL is taken.
#include <iomanip>
#include <sstream>
#include <iostream>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/run_command.h"
#include "model/local_models.h"

namespace attnscope {
namespace {

std::string sizeText(uint64_t bytes) {
  std::ostringstream out;
  out << std::fixed << std::setprecision(1);
  if (bytes >= (uint64_t{1} << 30)) out << double(bytes) / double(uint64_t{1} << 30) << " GiB";
  else out << double(bytes) / double(1 << 20) << " MiB";
  return out.str();
}

// The name as a MODEL takes it: hf:/ollama: names, else the path.
std::string openAs(const LocalModel& m) {
  if (m.source == "hf" || m.source == "ollama") return m.source + ":" + m.name;
  return m.path;
}

int listModels(bool as_json) {
  const std::vector<LocalModel> models = localModels();
  if (as_json) {
    nlohmann::json out = nlohmann::json::array();
    for (const LocalModel& m : models)
      out.push_back({{"name", m.name}, {"source", m.source}, {"path", m.path}, {"format", m.format},
                     {"architecture", m.architecture}, {"size_bytes", m.size_bytes}, {"quantization", m.quantization}});
    std::cout << out.dump(1) << "\n";
    return 0;
  }
  if (models.empty()) {
    std::cout << "attnscope models: none found (the Hugging Face cache, Ollama, LM Studio and llama.cpp's cache; "
                 "see attnscope models --help)\n";
    return 0;
  }
  for (const LocalModel& m : models)
    std::cout << std::left << std::setw(9) << m.source << std::setw(12) << (m.architecture.empty() ? "?" : m.architecture)
              << std::setw(11) << sizeText(m.size_bytes) << openAs(m)
              << (m.quantization.empty() ? "" : "  (" + m.quantization + ")") << "\n";
  return 0;
}

}  // namespace

int runModelsCommand(int argc, char** argv) {
  CLI::App app{"The models already on this machine, found without any network.", "attnscope models"};
  bool as_json = false;
  app.add_flag("--json", as_json,
               "print one JSON array of objects: name, source (hf, ollama, lmstudio, llamacpp), path, format (hf, gguf), "
               "architecture, size_bytes, quantization");
  app.footer(
      "Looks in the Hugging Face cache ($HF_HUB_CACHE, else $HF_HOME/hub, else ~/.cache/huggingface/hub), Ollama's\n"
      "models ($OLLAMA_MODELS, else ~/.ollama/models), LM Studio's (~/.lmstudio/models, ~/.cache/lm-studio/models) and\n"
      "llama.cpp's cache ($LLAMA_CACHE, else ~/.cache/llama.cpp). Wherever a MODEL is taken, hf:ORG/NAME and\n"
      "ollama:NAME[:TAG] (tag latest, namespace library unless NS/NAME) open them. Nothing is downloaded.");
  return runCommand(app, argc, argv, [&] { return listModels(as_json); });
}

}  // namespace attnscope
