// exportFigures: file names, never overwriting, settings JSON beside each figure, raw
// matrices on disk, unwritable folders and bad requests.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "figure_test_util.h"

namespace attnscope {
namespace {

namespace fs = std::filesystem;
using test::causalTrace;
using test::viewOf;
using test::freshDir;
using test::readFile;

Settings causalSettings() {
  Settings settings;
  settings.mask = MaskSpec::parse("causal");
  return settings;
}

std::vector<std::string> fileNames(const std::vector<std::string>& paths) {
  std::vector<std::string> names;
  for (const std::string& path : paths) names.push_back(fs::path(path).filename().string());
  return names;
}

TEST(FigureExport, BaseNamesDescribeTheFigure) {
  EXPECT_EQ(exportBaseName("probs", {0}, 3, 0, "causal", 9, 9), "probs_L0_H3_b0_causal_L9xS9");
  EXPECT_EQ(exportBaseName("scores", {0}, 0, 2, "nomask", 4, 6), "scores_L0_H0_b2_nomask_L4xS6");
  EXPECT_EQ(exportBaseName("grid", {}, -1, 0, "causal", 9, 9), "grid_b0_causal_L9xS9");
  EXPECT_EQ(exportBaseName("mask", {}, -1, 1, "window3", 5, 7), "mask_b1_window3_L5xS7");
  EXPECT_EQ(exportBaseName("probs", {2}, 3, 0, "imported", 9, 9), "probs_L2_H3_b0_imported_L9xS9");
  EXPECT_EQ(exportBaseName("grid", {0, 2}, -1, 1, "causal", 4, 4), "grid_L0,2_b1_causal_L4xS4");
}

TEST(FigureExport, FreeBaseNameSkipsEveryNameTakenByAnyFormat) {
  const std::string dir = freshDir("free_name");
  EXPECT_EQ(freeBaseName(dir, "probs", {"png", "json"}), "probs");
  writeFileAtomic(dir + "/probs.json", "{}");  // only the JSON exists: the name is still taken
  EXPECT_EQ(freeBaseName(dir, "probs", {"png", "json"}), "probs_1");
  writeFileAtomic(dir + "/probs_1.png", "x");
  EXPECT_EQ(freeBaseName(dir, "probs", {"png", "json"}), "probs_2");
  EXPECT_EQ(freeBaseName(dir, "probs", {"svg"}), "probs");
}

TEST(FigureExport, WritesEveryFormatAndTheSettingsJsonWithDescriptiveNames) {
  const AttentionTrace trace = causalTrace(1, 4, 9, 9);
  const std::string dir = freshDir("formats");
  ExportRequest request;
  request.what = {"probs", "grid"};
  request.heads = {3};
  request.formats = {"png", "svg", "pdf", "npy", "csv"};
  request.out_dir = dir;
  const std::vector<std::string> written = exportFigures(causalSettings(), viewOf(trace), request);
  const std::vector<std::string> expected = {
      "probs_L0_H3_b0_causal_L9xS9.png", "probs_L0_H3_b0_causal_L9xS9.svg", "probs_L0_H3_b0_causal_L9xS9.pdf",
      "probs_L0_H3_b0_causal_L9xS9.npy", "probs_L0_H3_b0_causal_L9xS9.csv", "probs_L0_H3_b0_causal_L9xS9.json",
      "grid_b0_causal_L9xS9.png",        "grid_b0_causal_L9xS9.svg",        "grid_b0_causal_L9xS9.pdf",
      "grid_b0_causal_L9xS9.npy",        "grid_b0_causal_L9xS9.csv",        "grid_b0_causal_L9xS9.json"};
  EXPECT_EQ(fileNames(written), expected);
  for (const std::string& path : written) {
    EXPECT_EQ(fs::path(path).parent_path(), fs::path(dir));
    EXPECT_GT(fs::file_size(path), 0u) << path;
  }
  // No temporary files left behind.
  EXPECT_EQ(static_cast<size_t>(std::distance(fs::directory_iterator(dir), fs::directory_iterator())),
            expected.size());

  // The PNG decodes at the auto cell size (ceil(512 / 9) = 57).
  const RgbImage image = decodePng(readFile(written[0]));
  Figure figure = probsFigure(viewOf(trace), 0, 0, 3, Colormap::Viridis);
  const FigureGeometry geometry = figureGeometry(figure);
  EXPECT_EQ(geometry.cell_px, 57);
  EXPECT_EQ(image.width, geometry.width);
  EXPECT_EQ(image.height, geometry.height);

  // .npy holds exactly the head's probabilities; the grid every head's.
  const NpyArray one = readNpy(written[3]);
  EXPECT_EQ(one.dtype, NpyDtype::Float32);
  EXPECT_EQ(one.shape, (Shape{9, 9}));
  for (int64_t k = 0; k < 81; ++k) EXPECT_EQ(one.values[k], trace.probs.data[3 * 81 + k]);
  const NpyArray grid = readNpy(written[9]);
  EXPECT_EQ(grid.shape, (Shape{4, 9, 9}));
  for (int64_t k = 0; k < 4 * 81; ++k) EXPECT_EQ(grid.values[k], trace.probs.data[k]);

  // The JSON reproduces the view: focused head 3, batch item 0, same mask and colormap.
  const nlohmann::json saved_json = nlohmann::json::parse(readFile(written[5]));
  const Settings saved = settingsFromJson(saved_json);
  EXPECT_EQ(viewFocusFromJson(saved_json), (ViewFocus{0, 3, 0}));
  EXPECT_EQ(saved.mask, MaskSpec::parse("causal"));
  EXPECT_EQ(saved.prob_colormap, Colormap::Viridis);
}

TEST(FigureExport, NeverOverwritesAndSuffixesAllFormatsTogether) {
  const AttentionTrace trace = causalTrace(1, 2, 4, 4);
  const std::string dir = freshDir("suffix");
  ExportRequest request;
  request.heads = {1};
  request.formats = {"png", "csv"};
  request.out_dir = dir;
  const std::vector<std::string> first = exportFigures(causalSettings(), viewOf(trace), request);
  const std::string first_png = readFile(first[0]);
  request.colormap = Colormap::Magma;  // a different picture under the same name
  const std::vector<std::string> second = exportFigures(causalSettings(), viewOf(trace), request);
  const std::vector<std::string> third = exportFigures(causalSettings(), viewOf(trace), request);
  EXPECT_EQ(fileNames(second), (std::vector<std::string>{"probs_L0_H1_b0_causal_L4xS4_1.png",
                                                         "probs_L0_H1_b0_causal_L4xS4_1.csv",
                                                         "probs_L0_H1_b0_causal_L4xS4_1.json"}));
  EXPECT_EQ(fileNames(third)[0], "probs_L0_H1_b0_causal_L4xS4_2.png");
  EXPECT_EQ(readFile(first[0]), first_png);  // untouched
  EXPECT_NE(readFile(second[0]), first_png);
  // A stray file of one format is enough to move every format of the next export on.
  writeFileAtomic(dir + "/probs_L0_H1_b0_causal_L4xS4_3.csv", "mine");
  const std::vector<std::string> fourth = exportFigures(causalSettings(), viewOf(trace), request);
  EXPECT_EQ(fileNames(fourth)[0], "probs_L0_H1_b0_causal_L4xS4_4.png");
  EXPECT_EQ(readFile(dir + "/probs_L0_H1_b0_causal_L4xS4_3.csv"), "mine");
}

TEST(FigureExport, SameSettingsGiveByteIdenticalFiles) {
  const AttentionTrace trace = causalTrace(1, 2, 5, 7);
  ExportRequest request;
  request.what = {"scores", "mask"};
  request.heads = {0, 1};
  request.formats = {"png", "svg", "csv"};
  request.out_dir = freshDir("same_a");
  const std::vector<std::string> a = exportFigures(causalSettings(), viewOf(trace), request);
  request.out_dir = freshDir("same_b");
  const std::vector<std::string> b = exportFigures(causalSettings(), viewOf(trace), request);
  ASSERT_EQ(fileNames(a), fileNames(b));
  ASSERT_EQ(a.size(), 3u * 4u);  // scores head 0, scores head 1, mask; 3 formats + json
  for (size_t i = 0; i < a.size(); ++i) EXPECT_EQ(readFile(a[i]), readFile(b[i])) << a[i];
}

TEST(FigureExport, DefaultsComeFromTheSettingsAndFocus) {
  const AttentionTrace trace = causalTrace(2, 3, 4, 4);
  Settings settings = causalSettings();
  ExportRequest request;
  request.focus.head = 2;
  request.focus.batch_item = 1;
  settings.prob_colormap = Colormap::Cividis;
  settings.cell_px = 7;
  settings.export_dir = freshDir("defaults") + "/made/on/demand";
  const std::vector<std::string> written = exportFigures(settings, viewOf(trace), request);
  EXPECT_EQ(fileNames(written),
            (std::vector<std::string>{"probs_L0_H2_b1_causal_L4xS4.png", "probs_L0_H2_b1_causal_L4xS4.json"}));
  EXPECT_EQ(fs::path(written[0]).parent_path(), fs::path(settings.export_dir));
  Figure figure = probsFigure(viewOf(trace), 0, 1, 2, Colormap::Cividis);
  figure.cell_px = 7;
  EXPECT_EQ(readFile(written[0]), renderFigurePng(figure));
}

TEST(FigureExport, UnwritableFolderIsAnInputErrorAndWritesNothing) {
  const std::string dir = freshDir("unwritable");
  writeFileAtomic(dir + "/a_file", "x");
  ExportRequest request;
  request.formats = {"png", "npy"};
  request.out_dir = dir + "/a_file/sub";
  try {
    exportFigures(causalSettings(), viewOf(causalTrace(1, 1, 3, 3)), request);
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("export folder " + dir + "/a_file/sub is not writable: ", 0), 0u)
        << e.what();
  }
  EXPECT_EQ(static_cast<size_t>(std::distance(fs::directory_iterator(dir), fs::directory_iterator())), 1u);
}

TEST(FigureExport, BadRequestsAreInputErrorsBeforeAnyFile) {
  const AttentionTrace trace = causalTrace(1, 2, 3, 3);
  const std::string dir = freshDir("bad_requests");
  const auto expectError = [&](ExportRequest request, const std::string& message) {
    request.out_dir = dir + "/out";
    try {
      exportFigures(causalSettings(), viewOf(trace), request);
      ADD_FAILURE() << "no error for " << message;
    } catch (const InputError& e) {
      EXPECT_EQ(std::string(e.what()), message);
    }
    EXPECT_FALSE(fs::exists(dir + "/out"));
  };
  ExportRequest request;
  request.what = {"probs", "attention"};
  expectError(request, "export: unknown figure 'attention' (use probs, scores, mask, rollout, flow or grid)");
  request = {};
  request.formats = {"png", "jpg"};
  expectError(request, "export: unknown format 'jpg' (use png, svg, pdf, npy, csv or html)");
  request = {};
  request.heads = {0, 2};
  expectError(request, "head 2 is out of range (the model has 2 heads: 0-1)");
  request = {};
  request.batch = 1;
  expectError(request, "batch item 1 is out of range (the input has 1 batch item: 0-0)");
}

}  // namespace
}  // namespace attnscope
