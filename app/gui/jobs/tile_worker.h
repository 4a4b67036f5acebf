// The zoomed focus view of a tiled source (ViewSource::Tiled): the visible window of the real
// map, computed from Q and K on a worker thread so the UI never waits on it. A window that
// fits kTextureMaxSide per side gets its exact cells (computeTile); a larger one is pooled
// to that size by the overview's rule (computeWindow). Only the newest request matters: a
// request posted while another computes replaces any waiting one, and a pooled window in
// progress stops early when superseded.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "gui/jobs/latest_job_worker.h"
#include "view/view_model.h"

namespace attnscope {

struct TileRequest {
  std::shared_ptr<const TiledMaps> maps;  // keeps the source alive while it computes
  int64_t layer = 0, b = 0, h = 0;
  CellWindow window;                      // resolved against the real map (never whole())
  bool operator==(const TileRequest& o) const {
    return maps == o.maps && layer == o.layer && b == o.b && h == o.h && window == o.window;
  }
  bool operator!=(const TileRequest& o) const { return !(*this == o); }
};

struct WindowTile {
  TileRequest request;
  bool exact = false;         // one texture cell per map cell
  int64_t rows = 0, cols = 0; // texture cells
  Tensor probs, scores;       // [rows, cols]: exact values, or block maxima (largest |score|)
  BoolTensor allowed;         // [rows, cols]: the cell (some cell of the block) may attend
  double milliseconds = 0.0;  // compute time
  std::string error;          // "" on success (then the tensors are set)
  // Exact values at real cell (i, j) when this tile has them; false otherwise.
  bool exactCell(int64_t i, int64_t j, float* prob, float* score, bool* allowed_cell) const;
};

// The tile of one request (run on the worker thread); keep_going() false stops a pooled
// window early (error "superseded").
WindowTile computeWindowTile(const TileRequest& request, const std::function<bool()>& keep_going = {});

// post(request); poll() gives the newest finished tile, once; tiles of superseded requests
// never appear, and a pooled window in progress stops when superseded.
class TileWorker : public LatestJobWorker<TileRequest, WindowTile> {
 public:
  TileWorker();
};

}  // namespace attnscope
