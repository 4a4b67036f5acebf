// Headless subcommands. argv[0] is the subcommand name. Exit codes: 0 ok,
// 1 bad input (one line on stderr naming the file and the problem), 2 usage error.
#pragma once

namespace attnscope {

int runComputeCommand(int argc, char** argv);
int runExportCommand(int argc, char** argv);
int runBenchCommand(int argc, char** argv);
int runAnalyzeCommand(int argc, char** argv);
int runModelCommand(int argc, char** argv);  // `model run MODEL --text ... --out DIR`
int runDiffCommand(int argc, char** argv);
int runModelsCommand(int argc, char** argv); // `models [--json]`: the models on this machine
   // `diff MODEL_A MODEL_B (--text T | --ids I) --out DIR`

}  // namespace attnscope
