// Publication figures of attention matrices, rendered on the CPU with no display and no GL:
// PNG and PDF through Cairo, SVG written by hand (one <rect> per cell), and the raw matrix
// as .npy / .csv. The app (Ctrl+S) and `attnscope export` both call exportFigures(), so
// the same settings give the same files.
//
// Colours: every cell is colormapTable(map)[colormapIndex(v, low, high)], the rule the
// fragment shader uses. Masked cells (blocked by the mask) use the masked style shared
// with the shader: cell (row, col) is kMaskedHatchColor when (row + col) is even and cells
// are at least 2 px, else kMaskedColor, i.e. a grey checker hatch at cell granularity, so
// it stays exact in PNG and is one rect per cell in SVG.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "config/settings.h"
#include "view/colormap.h"
#include "view/view_model.h"

namespace attnscope {

// One heatmap tile. A single-matrix figure has one panel; the head grid has one per head.
struct FigurePanel {
  std::string title;            // "head 3" in the grid; empty for a single figure
  std::vector<float> values;    // [rows, cols], row-major, raw trace values (-inf kept)
  std::vector<uint8_t> masked;  // [rows, cols], 1 = masked style; empty = none masked
};

struct Figure {
  int64_t rows = 0;  // L (queries)
  int64_t cols = 0;  // S (keys)
  std::vector<FigurePanel> panels;        // >= 1; all [rows, cols]
  std::vector<std::string> row_labels;    // rows labels (query tokens); empty = indices
  std::vector<std::string> col_labels;    // cols labels (key tokens); empty = indices
  std::string title;                      // first title line, e.g. "Attention probabilities, head 3"
  std::string subtitle;                   // second line: "batch item 0 | mask causal | L 9 x S 9"
  std::string value_label;                // colour bar caption: "probability", "score", ...
  std::string row_axis = "query";         // axis names; rollout and flow: "output position"
  std::string col_axis = "key";           // ... and "input token"
  Colormap colormap = Colormap::Viridis;
  std::optional<float> low, high;         // colour range; unset = min/max of unmasked finite values
  std::vector<std::pair<float, std::string>> ticks;  // colour bar ticks; empty = round values
  // Colour log10(v) over [log10(low), log10(high)] (probabilities; low must then be > 0,
  // values <= 0 clamp to the first colour). Ranges and tick labels stay in value units.
  bool log_scale = false;
  int64_t cell_px = 0;                    // pixels per cell; 0 = defaultCellPx()
  int64_t grid_columns = 1;               // panels per row
};

// Colour range when the figure does not set one: probabilities [0, max] (or [0, 1] if all
// zero), scores symmetric +-max|finite| over unmasked cells, mask [0, 1].
enum class RangeKind { Probability, Score, Mask };
void setAutoRange(Figure& figure, RangeKind kind);

// The app's colour scales, which the builders below and the HTML export use:
//   probsColorScale   probabilities of batch item b over every head of the given layers (all
//                     when empty): [min(0, min), max] ([smallest positive, max] on a log
//                     scale); [0, 1] / 1e-6 when there is nothing
//   scoresColorScale  one scores map: +-max|v| over its allowed finite cells (+-1 when 0)
std::pair<float, float> probsColorScale(const ViewModel& view, const std::vector<int64_t>& layers, int64_t b,
                                        bool log_scale);
std::pair<float, float> scoresColorScale(const ViewModel& view, int64_t layer, int64_t b, int64_t h);

// Smallest integer cell size making a single matrix >= 512 px on its longer side
// (grid tiles >= 256 px), at least 1.
int64_t defaultCellPx(int64_t rows, int64_t cols, size_t panels);
int64_t effectiveCellPx(const Figure& figure);

// The colour range in use (figure.low/high, or min/max of unmasked finite values) and the
// colour-table index of a value under it (colormapIndex, on log10 values with log_scale).
std::pair<float, float> colorRange(const Figure& figure);
int colorIndex(const Figure& figure, float value);

// The colour a cell is drawn with (masked style included): the one rule every renderer uses.
Rgb cellColor(const Figure& figure, const FigurePanel& panel, int64_t row, int64_t col);

// Builders from the view model, with the app's colour scales so a figure matches the screen.
// layer, b = batch item, h = head; InputError when out of range. cell_px stays 0 (auto).
//   probs   shown probabilities of (layer, head h); range [min(0, min), max] over every
//           head of that layer and item b (log scale: [smallest positive, max]); blocked
//           cells masked style
//   scores  scaled scores of (layer, h), diverging map, range +-max|unmasked| of that map
//           (InputError for sources without scores, e.g. imported maps)
//   mask    1 = may attend (top colour), blocked cells masked style; range [0, 1]
//           (InputError for sources without a mask)
//   rollout, flow  (acrossLayersFigure) the map after a layer of the given kind
//   grid    the layer x head atlas of the given layers: rows = layers, columns = heads,
//           tiles "L2 H3" (a layer named in the bundle: "h.2 H3", as the app names its
//           rows), one shared probability range and colour bar; with one layer
//           today's head grid (tiles "head k", ceil(sqrt(H)) per row)
// Titles and subtitles: with one layer exactly as before layers existed; with several the
// layer's name joins the title. The subtitle names the layer's mask ("causal", "none").
Figure probsFigure(const ViewModel& view, int64_t layer, int64_t b, int64_t h, Colormap map,
                   bool log_scale = false);
Figure scoresFigure(const ViewModel& view, int64_t layer, int64_t b, int64_t h);
Figure maskFigure(const ViewModel& view, int64_t layer, int64_t b, Colormap map);
// Rollout or flow after `layer` (view.acrossLayers(kind) must be built: analysis/layer_maps),
// rows = output positions, columns = input tokens, range [0, max] of the map.
Figure acrossLayersFigure(const ViewModel& view, MapKind kind, int64_t layer, int64_t b, Colormap map);
Figure gridFigure(const ViewModel& view, const std::vector<int64_t>& layers, int64_t b, Colormap map,
                  bool log_scale = false);

// The grid atlas' longest side in pixels unless full resolution is asked for (a 144-head,
// 512-token atlas is 6529 x 6656 px at one pixel per cell).
inline constexpr int64_t kMaxAtlasSide = 4096;
// The figure at most max_side px on its longer side: smaller cells first (down to 1 px),
// then cells max-pooled in blocks (the app's block rule, view/downsample.h; masked only
// when the whole block is, labels become index ranges "4-7"), the pooling named in the
// subtitle. nullopt when it fits as it is.
std::optional<Figure> capFigureSize(const Figure& figure, int64_t max_side);

// A tiled source's window (view.tiled; window in real cells, not whole()): its exact
// probabilities or scores ("probs" / "scores"), computed from Q and K (computeTile), with the
// whole map's colour scale as on screen; the subtitle names the window. InputError when the
// window has more than kMaxTiledExportCells cells (zoom in further) or lies outside the map.
inline constexpr int64_t kMaxTiledExportCells = int64_t{4096} * 4096;
Figure tiledWindowFigure(const std::string& what, const ViewModel& view, int64_t layer, int64_t b, int64_t h,
                         const CellWindow& window, Colormap map, bool log_scale = false);

// Keeps rows/keys `window` of every panel (labels too); the colour range stays the whole
// map's, so a zoomed export matches the zoomed screen. The subtitle names the window.
// whole() leaves the figure as it is; InputError when the window is outside it.
void cropFigure(Figure& figure, const CellWindow& window);

// Renderers: the whole file in memory. PNG/PDF via Cairo, SVG by hand.
std::string renderFigurePng(const Figure& figure);
std::string renderFigurePdf(const Figure& figure);
std::string renderFigureSvg(const Figure& figure);
// Where the matrices land in the rendered figure (pixels = PDF points = SVG units): panel
// p's cell (r, c) covers [panel_x[p] + c * cell_px, +cell_px) x [panel_y[p] + r * cell_px, +cell_px).
struct FigureGeometry {
  int width = 0, height = 0;
  int cell_px = 0;
  std::vector<int> panel_x, panel_y;
};
FigureGeometry figureGeometry(const Figure& figure);

// A decoded PNG, for checks and previews. pixels: [height, width], row-major.
struct RgbImage {
  int width = 0, height = 0;
  std::vector<Rgb> pixels;
  const Rgb& at(int x, int y) const { return pixels[static_cast<size_t>(y) * width + x]; }
};
RgbImage decodePng(const std::string& png_bytes);  // InputError when not a PNG
std::string encodePng(const RgbImage& image);      // e.g. the app's window screenshot

// Raw matrix: .npy float32 [rows, cols] ([panels, rows, cols] for several panels);
// .csv with a header of column labels and the row label first (a head column for grids).
std::string matrixCsv(const Figure& figure);
Tensor matrixTensor(const Figure& figure);

// --- the HTML export (render_html.cpp) -----------------------------------------------

// One figure (the first panel) as a self-contained page: its title and subtitle as the
// caption, a colour bar of 11 swatches, and a table of coloured cells with row and column
// labels, each cell's value in data-value (nan for a masked cell's NaN) and its tooltip.
// A single figure's "html" (exportFigureFiles); a view's page is renderViewHtml.
std::string renderFigureHtml(const Figure& figure);

// The page's maps (base64 of the deflated 16-bit codes) stay within this many bytes: maps are
// stored at full resolution up to kTextureMaxSide per side (pooled like the app's textures
// beyond), and pooled further while the payload is larger (never below kHtmlMinPooledSide).
inline constexpr size_t kHtmlMapBudgetBytes = 7'000'000;
inline constexpr int64_t kHtmlMinPooledSide = 16;

struct HtmlRequest {
  std::vector<int64_t> layers;  // the grid's layers; empty = every layer
  int64_t batch = 0;            // the batch item shown
  int64_t focus_layer = 0, focus_head = 0;  // the map focused when the page opens
  Colormap colormap = Colormap::Viridis;    // the probabilities' colour map when it opens
  bool log_scale = false;
  std::string model, source, text;          // the caption: model name, where the maps came from, input text
  // The app's zoomed window of the focused map (real cells; whole() = none): its exact cells
  // are stored beside the maps (pooled only beyond kTextureMaxSide per side), so a pooled
  // page still holds what the user zoomed into.
  CellWindow window;
  size_t map_budget_bytes = kHtmlMapBudgetBytes;
};

// One self-contained page (nothing fetched): the layer x head grid, the focused map with
// token labels, colour bar and tooltip, probabilities / scores (when the view has scores),
// colour map and log scale, the sortable head metrics table and a caption. Each map is
// quantized to 16 bits over its own [lo, hi] of finite allowed cells (code 65535 = masked),
// stored as two byte planes, deflated (zlib) and base64-encoded.
std::string renderViewHtml(const ViewModel& view, const HtmlRequest& request);

// --- exporting ------------------------------------------------------------------------

struct ExportRequest {
  std::vector<std::string> what = {"probs"};   // probs, scores, mask, rollout, flow, grid
  ViewFocus focus;                             // the map shown (head and batch defaults)
  std::vector<int64_t> layers;                 // empty = every layer (probs/scores per layer; grid atlas rows)
  std::vector<int64_t> heads;                  // empty = focus.head
  int64_t batch = -1;                          // -1 = focus.batch_item
  std::vector<std::string> formats = {"png"};  // png, svg, pdf, npy, csv, html (one page of the whole view)
  std::optional<Colormap> colormap;            // unset = settings.prob_colormap
  int64_t cell_px = -1;                        // -1 = settings.cell_px (0 = auto)
  std::string out_dir;                         // empty = settings.export_dir or defaultExportDir()
  CellWindow window;                           // probs/scores/mask: only these rows and keys (app zoom)
  bool full_resolution = false;                // grid: every cell, no cap at kMaxAtlasSide px (PNG/SVG/PDF)
};

// Any figure (the app's A - B map) as files named base_name (made free like every export)
// in each format, then json_text beside them as base_name.json; all or nothing.
std::vector<std::string> exportFigureFiles(const Figure& figure, const std::string& base_name,
                                           const std::vector<std::string>& formats, const std::string& json_text,
                                           const std::string& dir);

std::vector<std::string> exportWhatNames();    // {"probs", "scores", "mask", "rollout", "flow", "grid"}
std::string defaultExportDir();  // $HOME/Pictures/attnscope
// The folder exports go to: settings.export_dir, or defaultExportDir() when empty.
std::string exportFolder(const Settings& settings);
// Creates dir when missing; throws InputError "export folder <dir> is not writable: <reason>"
// when it is not a writable folder.
void prepareExportFolder(const std::string& dir);

// "probs_L2_H3_b0_causal_L9xS9": the layers part "L2" (several: "L0,2"; none when empty),
// the head part "H3" (none when head < 0: grid and mask, "grid_b0_causal_L9xS9"); a zoomed
// window adds its name: "probs_L0_H3_b0_causal_L2048xS2048_rows100-227_keys50-177".
std::string exportBaseName(const std::string& what, const std::vector<int64_t>& layers, int64_t head,
                           int64_t batch, const std::string& mask_short_name, int64_t L, int64_t S,
                           const CellWindow& window = {});
// The first of base, base_1, base_2, ... for which no base.<ext> exists in dir for any of
// the extensions (so all formats of one figure share one name and nothing is overwritten).
std::string freeBaseName(const std::string& dir, const std::string& base,
                         const std::vector<std::string>& extensions);

// Renders every requested figure in memory, then writes each file atomically into the
// export folder (created when missing), plus <base>.json with the settings that reproduce
// it. Returns the paths written (figure files first, then the JSON, per figure). Throws
// InputError for bad requests ("--heads: head 7 is out of range ...") or an unwritable
// folder ("export folder /x is not writable: Permission denied"); on failure the files of
// this export already written are removed again.
// The mask part of file names: settings.mask.shortName() for computed maps, "imported"
// for imported ones.
std::vector<std::string> exportFigures(const Settings& settings, const ViewModel& view,
                                       const ExportRequest& request);

}  // namespace attnscope
