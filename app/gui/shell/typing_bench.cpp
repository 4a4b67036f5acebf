#include "gui/shell/typing_bench.h"

#include <GLFW/glfw3.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "gui/shell/app_state.h"

namespace attnscope {
namespace {

constexpr int kPastes = 3;
constexpr const char kTyped[] = "the quick brown fox jumps over the lazy dog ";
constexpr auto kEditTimeout = std::chrono::seconds(300);

bool fail(const std::string& message, int& exit_code) {
  std::fprintf(stderr, "attnscope: --bench-typing: %s\n", message.c_str());
  exit_code = 1;
  return true;
}

double median(std::vector<double> values) {
  if (values.empty()) return 0.0;
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2.0;
}

// One phase's figures: edit to maps (median, worst), the engine's median, their ratio and
// the median of each stage (other_ms: what is left, the frames and the waits between them).
nlohmann::json phaseJson(const std::vector<TypingBench::Sample>& samples) {
  std::vector<double> total, engine, view, table, upload, other;
  for (const TypingBench::Sample& s : samples) {
    total.push_back(s.edit_to_maps_ms);
    engine.push_back(s.stages.engine_ms);
    view.push_back(s.stages.view_ms);
    table.push_back(s.stages.head_table_ms);
    upload.push_back(s.upload_ms);
    other.push_back(s.edit_to_maps_ms - s.stages.engine_ms - s.stages.view_ms - s.stages.head_table_ms - s.upload_ms);
  }
  const double engine_median = median(engine);
  return {{"count", samples.size()},
          {"median_ms", median(total)},
          {"max_ms", total.empty() ? 0.0 : *std::max_element(total.begin(), total.end())},
          {"engine_median_ms", engine_median},
          {"ratio", engine_median > 0.0 ? median(total) / engine_median : 0.0},
          {"stages_median_ms",
           {{"engine", engine_median}, {"view", median(view)}, {"head_table", median(table)},
            {"upload", median(upload)}, {"other", median(other)}}}};
}

constexpr TypingBench::Phase kMeasured[] = {TypingBench::Phase::End, TypingBench::Phase::Start, TypingBench::Phase::Paste};
const char* phaseName(TypingBench::Phase phase) {
  return phase == TypingBench::Phase::End ? "end" : phase == TypingBench::Phase::Start ? "start" : "paste";
}

void printReport(const TypingBench& bench) {
  nlohmann::json report = {{"tokens", bench.tokens}, {"context", bench.context}, {"edits", bench.edits}};
  for (const TypingBench::Phase phase : kMeasured) {
    const auto found = bench.samples.find(phase);
    report[phaseName(phase)] = phaseJson(found == bench.samples.end() ? std::vector<TypingBench::Sample>{} : found->second);
  }
  std::printf("%s\n", nlohmann::json{{"bench_typing", report}}.dump().c_str());
  std::fflush(stdout);
}

// Replaces the first character (a UTF-8 sequence) with 'A' or 'B', whichever differs.
void editStart(std::string& text) {
  size_t first = 1;
  while (first < text.size() && (static_cast<unsigned char>(text[first]) & 0xC0) == 0x80) ++first;
  const char replacement = text[0] == 'A' ? 'B' : 'A';
  text.replace(0, std::min(first, text.size()), 1, replacement);
}

// The next edit of the phase, or the next phase; false when every phase is done.
bool makeEdit(TypingBench& bench, AppState& state) {
  using Phase = TypingBench::Phase;
  std::string& text = state.settings.model_text;
  if (bench.phase == Phase::End && bench.done_in_phase == bench.edits) {
    bench.phase = Phase::Start, bench.done_in_phase = 0;
  }
  if (bench.phase == Phase::Start && bench.done_in_phase == bench.edits) {
    bench.phase = Phase::Paste, bench.done_in_phase = 0, bench.text = text;
  }
  if (bench.phase == Phase::Paste && bench.done_in_phase == kPastes) return false;
  if (bench.phase == Phase::End) {
    text += kTyped[bench.done_in_phase % (sizeof(kTyped) - 1)];
  } else if (bench.phase == Phase::Start) {
    editStart(text);
  } else {  // the pasted text starts differently from the last one run: no row can be reused
    bench.emptied = !bench.emptied;
    if (!bench.emptied) editStart(bench.text);
    text = bench.emptied ? std::string() : bench.text;
  }
  bench.edit_made = true;
  bench.posted_before = state.compute.posted_generation;
  markStateChanged(state);
  glfwPostEmptyEvent();  // the next frame reads the edit at once, as a key press would
  return true;
}

// The first result, with maps of the settings' model text: where the phases start.
bool settle(TypingBench& bench, AppState& state, int& exit_code) {
  const ComputeState& c = state.compute;
  if (c.traceGeneration() == 0 || c.pending() || c.shown_edit) return false;
  if (state.settings.source != InputSource::Model) return fail("the settings' source must be a model (--settings or MODEL)", exit_code);
  if (!c.error().empty()) return fail("the first run failed: " + c.error(), exit_code);
  bench.tokens = c.facts.text_tokens, bench.context = c.facts.context;
  if (bench.context > 0 && bench.tokens + bench.edits > bench.context)
    return fail(std::to_string(bench.tokens) + " tokens + " + std::to_string(bench.edits) +
                    " typed would pass the context of " + std::to_string(bench.context) + "; use a shorter text",
                exit_code);
  bench.phase = TypingBench::Phase::End;
  return false;
}

}  // namespace

bool stepTypingBench(TypingBench& bench, AppState& state, int& exit_code) {
  const ComputeState& c = state.compute;
  if (bench.phase == TypingBench::Phase::Done) return true;
  if (bench.phase == TypingBench::Phase::Settle) {
    if (settle(bench, state, exit_code)) return true;
    if (bench.phase == TypingBench::Phase::Settle) return false;
  } else if (bench.edit_made) {
    if (c.posted_generation == bench.posted_before) return false;  // its frame has not run yet
    bench.edit_made = false;
    bench.waiting_for = c.posted_generation;
    return false;
  } else if (bench.waiting_for != 0) {
    if (std::chrono::steady_clock::now() - bench.edited > kEditTimeout) return fail("an edit's maps did not come in time", exit_code);
    if (c.traceGeneration() < bench.waiting_for || c.shown_edit) return false;  // not drawn yet
    const bool measured = !(bench.phase == TypingBench::Phase::Paste && bench.emptied);
    if (measured) {
      if (c.maps_generation != bench.waiting_for) return fail("an edit's run failed: " + c.error(), exit_code);
      bench.samples[bench.phase].push_back({c.edit_to_maps_ms, c.upload_ms, c.stages});
      ++bench.done_in_phase;
      std::fprintf(stderr, "attnscope: --bench-typing: %s %d: %.1f ms to maps (engine %.1f ms)\n", phaseName(bench.phase),
                   bench.done_in_phase, c.edit_to_maps_ms, c.stages.engine_ms);
    }
    bench.waiting_for = 0;
  }
  if (bench.edit_made) return false;
  bench.edited = std::chrono::steady_clock::now();
  if (makeEdit(bench, state)) return false;
  printReport(bench);
  bench.phase = TypingBench::Phase::Done;
  return true;
}

}  // namespace attnscope
