#include "gui/features/query_focus/query_focus.h"

#include <algorithm>
#include <vector>

#include "analysis/map_stack.h"
#include "gui/jobs/export_jobs.h"
#include "gui/shell/app_state.h"

namespace attnscope {

void updateQueryFocus(AppState& state) {
  const ViewModel* view = shownView(state);
  if (state.view.tab != FocusTab::QueryFocus || !view) return;
  std::vector<int64_t>& queries = state.view.query_choice.queries;
  queries.erase(std::remove_if(queries.begin(), queries.end(), [&](int64_t i) { return i >= view->L; }), queries.end());
  QueryFocusState& q = state.feature<QueryFocusState>();
  const int64_t b = std::clamp<int64_t>(state.view.focus.batch_item, 0, view->B - 1);
  const uint64_t generation = state.compute.traceGeneration();
  const QueryFocusView& choice = state.view.query_choice;
  if (q.generation == generation && q.batch_item == b && q.choice.queries == choice.queries &&
      q.choice.combine == choice.combine) {
    return;
  }
  q.generation = generation, q.batch_item = b, q.choice = choice;
  q.bars = choice.queries.empty() ? Tensor() : queryFocus(mapStackOf(*view), b, choice.queries, choice.combine);
  markStateChanged(state);
}

namespace {

// bars [layers][H][S] as nested arrays (the export writes them all).
nlohmann::json nestedBars(const Tensor& bars) {
  nlohmann::json layers = nlohmann::json::array();
  for (int64_t l = 0; l < bars.dim(0); ++l) {
    nlohmann::json heads = nlohmann::json::array();
    for (int64_t h = 0; h < bars.dim(1); ++h) {
      const float* row = bars.data.data() + (l * bars.dim(1) + h) * bars.dim(2);
      heads.push_back(std::vector<float>(row, row + bars.dim(2)));
    }
    layers.push_back(heads);
  }
  return layers;
}

// ... in the state log when small (else null).
nlohmann::json barsJson(const Tensor& bars) {
  if (bars.empty() || bars.data.size() > 4096) return nullptr;
  return nestedBars(bars);
}

}  // namespace

void queryFocusToJson(const AppState& state, nlohmann::json& line) {
  line["query_focus"] = nullptr;  // chosen queries; bars [layers][H][S] when small
  if (state.view.tab != FocusTab::QueryFocus || state.feature<QueryFocusState>().generation == 0) return;
  const QueryFocusState& q = state.feature<QueryFocusState>();
  line["query_focus"] = {{"queries", q.choice.queries}, {"combine", q.choice.combine == RowCombine::Mean ? "mean" : "sum"},
                         {"batch_item", q.batch_item}, {"bars", barsJson(q.bars)}};
}

void requestQueryFocusExport(AppState& state) {
  const QueryFocusState& q = state.feature<QueryFocusState>();
  const ViewModel* view = shownView(state);
  if (!view || q.bars.empty()) return;
  const int64_t b = q.batch_item, H = view->H, S = view->S;
  std::vector<std::string> layer_names, query_tokens;
  for (const LayerMaps& layer : view->maps) layer_names.push_back(layer.name);
  std::string queries_part;
  for (int64_t i : q.choice.queries) {
    query_tokens.push_back(view->query_tokens[b][i]);
    queries_part += (queries_part.empty() ? "" : ",") + std::to_string(i);
  }
  const char* combine = q.choice.combine == RowCombine::Mean ? "mean" : "sum";
  const nlohmann::json json = {{"batch_item", b},         {"queries", q.choice.queries}, {"query_tokens", query_tokens},
                               {"combine", combine},      {"layers", layer_names},       {"heads", H},
                               {"key_tokens", view->key_tokens[b]}, {"bars", nestedBars(q.bars)}};
  ExportJob job;
  job.kind = "query_focus";
  job.base_name = "query_focus_b" + std::to_string(b) + "_q" + queries_part + "_" + combine + "_L" +
                  std::to_string(view->L) + "xS" + std::to_string(S);
  job.json = json.dump(2) + "\n";
  queueExport(state.exports, std::move(job));
}

}  // namespace attnscope
