#include "gui/jobs/job_error.h"

#include <exception>
#include <new>

#include "tensor/tensor.h"

namespace attnscope {

std::string jobErrorLine(const std::string& out_of_memory) {
  try {
    throw;
  } catch (const InputError& e) {
    return e.what();
  } catch (const std::bad_alloc&) {
    return out_of_memory;
  } catch (const std::exception& e) {
    return std::string("internal error: ") + e.what();
  } catch (...) {
    return "internal error: an unknown exception";
  }
}

}  // namespace attnscope
