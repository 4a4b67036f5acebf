#include "cli/run_command.h"

#include <iostream>
#include <new>

#include "tensor/tensor.h"

namespace attnscope {

std::string oneLine(std::string text) {
  for (char& c : text) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  while (!text.empty() && text.back() == ' ') text.pop_back();
  return text;
}

int runCommand(CLI::App& app, int argc, char** argv, const std::function<int()>& body,
               const std::string& other_prefix) {
  const std::string name = app.get_name();
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << name << ": " << oneLine(e.what()) << " (see " << name << " --help)\n";
    return 2;
  }
  try {
    return body();
  } catch (const UsageError& e) {
    std::cerr << name << ": " << oneLine(e.what()) << "\n";
    return 2;
  } catch (const InputError& e) {
    std::cerr << name << ": " << oneLine(e.what()) << "\n";
    return 1;
  } catch (const std::bad_alloc&) {
    std::cerr << name << ": out of memory\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << name << ": " << other_prefix << oneLine(e.what()) << "\n";
    return 1;
  }
}

}  // namespace attnscope
