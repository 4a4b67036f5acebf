// What the open dialog lists and opens: kinds by folder contents, filter, order, Tab
// completion and the way up, on a scratch folder.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <unistd.h>

#include "config/open_targets.h"

namespace attnscope {
namespace {

namespace fs = std::filesystem;

class OpenTargetsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("attnscope-open-" + std::to_string(::getpid()));
    fs::remove_all(root_);
    for (const char* dir : {"model", "tensors", "maps", "plain", ".hidden", "mixed"}) fs::create_directories(root_ / dir);
    write("model/config.json", "{}");
    write("tensors/query.npy", "x");
    write("maps/attentions.npz", "x");
    write("mixed/config.json", "{}");  // a model folder wins over the bundle file beside it
    write("mixed/query.npy", "x");
    write("run.json", R"({"source": "text", "heads": 2})");
    write("other.json", R"({"layers": 2})");
    write("broken.json", "{");
    write("notes.txt", "hello");
  }
  void TearDown() override { fs::remove_all(root_); }
  void write(const std::string& name, const std::string& text) { std::ofstream(root_ / name) << text; }
  std::string path(const std::string& name = "") const { return (root_ / name).string(); }

  fs::path root_;
};

TEST_F(OpenTargetsTest, KindsByContents) {
  const std::pair<const char*, OpenKind> cases[] = {
      {"model", OpenKind::Model},       {"tensors", OpenKind::TensorBundle}, {"maps", OpenKind::AttentionBundle},
      {"plain", OpenKind::Folder},      {"mixed", OpenKind::Model},          {"run.json", OpenKind::Settings},
      {"other.json", OpenKind::Other},  {"broken.json", OpenKind::Other},    {"notes.txt", OpenKind::Other},
      {"missing", OpenKind::Other}};
  for (const auto& [name, kind] : cases) EXPECT_EQ(openKind(path(name)), kind) << name;
  EXPECT_TRUE(opensDirectly(OpenKind::Model));
  EXPECT_FALSE(opensDirectly(OpenKind::Folder));
  EXPECT_STREQ(openKindLabel(OpenKind::AttentionBundle), "attention bundle");
}

TEST_F(OpenTargetsTest, ListsWhatOpensFoldersFirst) {
  const std::vector<BrowseEntry> all = listBrowseFolder(root_.string() + "/", "");
  std::vector<std::string> names;
  for (const BrowseEntry& e : all) names.push_back(e.name);
  EXPECT_EQ(names, (std::vector<std::string>{"..", "maps", "mixed", "model", "plain", "tensors", "run.json"}));
  std::vector<std::string> hidden;
  for (const BrowseEntry& e : listBrowseFolder(root_.string() + "/", ".")) hidden.push_back(e.name);
  EXPECT_EQ(hidden, (std::vector<std::string>{"..", ".hidden"}));
  std::vector<std::string> filtered;
  for (const BrowseEntry& e : listBrowseFolder(root_.string() + "/", "m")) filtered.push_back(e.name);
  EXPECT_EQ(filtered, (std::vector<std::string>{"maps", "mixed", "model"}));
  EXPECT_EQ(listBrowseFolder(root_.string() + "/", "", 3).size(), 3u);
  EXPECT_EQ(listBrowseFolder(root_.string() + "/missing/", "").size(), 1u);  // just ".."
  EXPECT_TRUE(listBrowseFolder("/", "..").empty());  // no way up from the root
}

TEST_F(OpenTargetsTest, SplitCompleteAndUp) {
  EXPECT_EQ(splitBrowsePath("/a/b/c").folder, "/a/b/");
  EXPECT_EQ(splitBrowsePath("/a/b/c").prefix, "c");
  EXPECT_EQ(splitBrowsePath("abc").folder, "");
  const std::string dir = root_.string() + "/";
  const struct {
    std::string typed, completed;
  } cases[] = {
      {dir + "mo", dir + "model/"},     // one folder: its name and '/'
      {dir + "m", dir + "m"},           // maps, mixed, model agree on "m" only
      {dir + "mi", dir + "mixed/"},
      {dir + "r", dir + "run.json"},    // a file: no '/'
      {dir + "zz", dir + "zz"},         // nothing matches: unchanged
      {dir + "ma", dir + "maps/"},
  };
  for (const auto& c : cases) {
    const BrowsePath split = splitBrowsePath(c.typed);
    EXPECT_EQ(completeBrowsePath(c.typed, listBrowseFolder(split.folder, split.prefix)), c.completed) << c.typed;
  }
  EXPECT_EQ(parentBrowsePath("/a/b/"), "/a/");
  EXPECT_EQ(parentBrowsePath("/a/b"), "/a/");
  EXPECT_EQ(parentBrowsePath("/a/"), "/");
  EXPECT_EQ(parentBrowsePath("/"), "/");
  EXPECT_EQ(parentBrowsePath(dir + "model/"), dir);
}

}  // namespace
}  // namespace attnscope
