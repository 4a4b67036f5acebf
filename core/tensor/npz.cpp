#include "tensor/npz.h"

#include <zip.h>

#include <memory>

#include "tensor/byte_source.h"

namespace attnscope {
namespace {

struct ArchiveCloser {
  void operator()(zip_t* archive) const { zip_discard(archive); }  // read only: nothing to write back
};
using Archive = std::unique_ptr<zip_t, ArchiveCloser>;

Archive openArchive(const std::string& path) {
  int code = 0;
  zip_t* archive = zip_open(path.c_str(), ZIP_RDONLY | ZIP_CHECKCONS, &code);
  if (!archive) {
    zip_error_t error;
    zip_error_init_with_code(&error, code);
    const std::string why = zip_error_strerror(&error);
    zip_error_fini(&error);
    throw InputError(path + ": not a readable .npz archive (" + why + ")");
  }
  return Archive(archive);
}

// One member, inflated as it is read; libzip checks the CRC at its end.
class ZipMemberSource : public ByteSource {
 public:
  ZipMemberSource(zip_t* archive, const std::string& member, uint64_t size)
      : file_(zip_fopen(archive, member.c_str(), 0)), size_(size) {
    if (!file_) error_ = zip_error_strerror(zip_get_error(archive));
  }
  ~ZipMemberSource() override {
    if (file_) zip_fclose(file_);
  }
  uint64_t size() const override { return size_; }
  bool read(char* dst, uint64_t n) override {
    while (file_ && n > 0) {
      const zip_int64_t got = zip_fread(file_, dst, n);
      if (got < 0) return corrupt();
      if (got == 0) return false;
      dst += got;
      n -= static_cast<uint64_t>(got);
      done_ += static_cast<uint64_t>(got);
    }
    // At the member's end, one more read lets libzip compare the CRC before any value is used.
    char probe;
    if (file_ && done_ == size_ && zip_fread(file_, &probe, 1) < 0) return corrupt();
    return file_ != nullptr;
  }
  std::string error() const override { return error_; }

 private:
  bool corrupt() {
    error_ = std::string("corrupt archive member (") + zip_error_strerror(zip_file_get_error(file_)) + ")";
    return false;
  }

  zip_file_t* file_;
  uint64_t size_;
  uint64_t done_ = 0;
  std::string error_;
};

}  // namespace

std::vector<std::string> npzArrayNames(const std::string& path) {
  const Archive archive = openArchive(path);
  std::vector<std::string> names;
  const zip_int64_t count = zip_get_num_entries(archive.get(), 0);
  for (zip_int64_t i = 0; i < count; ++i) {
    const char* member = zip_get_name(archive.get(), static_cast<zip_uint64_t>(i), 0);
    const std::string name = member ? member : "";
    if (name.size() > 4 && name.compare(name.size() - 4, 4, ".npy") == 0) names.push_back(name.substr(0, name.size() - 4));
  }
  return names;
}

Tensor readNpzFloat(const std::string& path, const std::string& name, const NpyShapeCheck& check) {
  const Archive archive = openArchive(path);
  const std::string member = name + ".npy";
  zip_stat_t stat;
  zip_stat_init(&stat);
  if (zip_stat(archive.get(), member.c_str(), 0, &stat) != 0 || !(stat.valid & ZIP_STAT_SIZE))
    throw InputError(path + ": no array '" + name + "' in the archive (no member " + member + ")");
  ZipMemberSource source(archive.get(), member, stat.size);
  return readNpyFloatFrom(path + ": " + member, source, check);
}

}  // namespace attnscope
