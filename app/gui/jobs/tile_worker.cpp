#include "gui/jobs/tile_worker.h"

#include <chrono>
#include <optional>

#include "gui/jobs/job_error.h"

namespace attnscope {

bool WindowTile::exactCell(int64_t i, int64_t j, float* prob, float* score, bool* allowed_cell) const {
  const CellWindow& w = request.window;
  if (!exact || !error.empty() || i < w.row0 || i >= w.row0 + w.rows || j < w.col0 || j >= w.col0 + w.cols) return false;
  const size_t cell = static_cast<size_t>((i - w.row0) * cols + (j - w.col0));
  *prob = probs.data[cell];
  *score = scores.data[cell];
  *allowed_cell = allowed.data[cell] != 0;
  return true;
}

WindowTile computeWindowTile(const TileRequest& request, const std::function<bool()>& keep_going) {
  WindowTile tile;
  tile.request = request;
  const auto start = std::chrono::steady_clock::now();
  const TiledAttention& t = request.maps->layer(request.layer);
  const CellWindow& w = request.window;
  try {
    tile.exact = w.rows <= kTextureMaxSide && w.cols <= kTextureMaxSide;
    if (tile.exact) {
      Tile exact = computeTile(t, request.b, request.h, w.row0, w.rows, w.col0, w.cols);
      tile.rows = w.rows, tile.cols = w.cols;
      tile.probs = std::move(exact.probs);
      tile.scores = std::move(exact.scores);
      tile.allowed = std::move(exact.allowed);
    } else {
      tile.rows = std::min(w.rows, kTextureMaxSide), tile.cols = std::min(w.cols, kTextureMaxSide);
      std::optional<Overview> pooled =
          computeWindow(t, request.b, request.h, w.row0, w.rows, w.col0, w.cols, tile.rows, tile.cols,
                        [&](double) { return !keep_going || keep_going(); });
      if (!pooled) {
        tile.error = "superseded";
      } else {
        tile.probs = std::move(pooled->probs);
        tile.scores = std::move(pooled->scores);
        tile.allowed = std::move(pooled->allowed);
        tile.probs.shape = tile.scores.shape = tile.allowed.shape = {tile.rows, tile.cols};
      }
    }
  } catch (...) {
    tile.error = jobErrorLine("out of memory for this window; zoom in further");
  }
  tile.milliseconds = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return tile;
}

TileWorker::TileWorker()
    : LatestJobWorker([](TileRequest& request, const Job& job) {
        return computeWindowTile(request, [&job] { return !job.superseded(); });
      }) {}

}  // namespace attnscope
