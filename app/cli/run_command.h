// What the headless subcommands share: usage errors and the error-reporting rules of
// commands.h (one line on stderr, exit 2 for usage, 1 for bad input).
#pragma once

#include <functional>
#include <stdexcept>
#include <string>

#include <CLI/CLI.hpp>

namespace attnscope {

// A flag whose text does not parse: exit 2 (usage), unlike InputError (exit 1).
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Newlines become spaces (a message quoting the user's text stays one line); trailing
// spaces go.
std::string oneLine(std::string text);

// Parses argv with app, then runs body and returns its exit code. Every failure is one
// line on stderr, "<app name>: <problem>": exit 2 for bad flags or a UsageError, 1 for
// an InputError, out of memory or any other exception (its message after other_prefix).
// --help prints the help and exits 0.
int runCommand(CLI::App& app, int argc, char** argv, const std::function<int()>& body,
               const std::string& other_prefix = "");

}  // namespace attnscope
