// The tabforge command: parses the command line, runs one subcommand, and turns errors into
// a one-line message and an exit status (1: the user's input, 2: environment, 3: a bug).
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <cstdio>

#include "cli/commands.h"
#include "core/error.h"
#include "device/cuda_runtime.h"
#include "tabforge/version.h"

namespace tabforge::cli {
namespace {
int exit_status = 0;
}  // namespace
void SetExitStatus(int status) { exit_status = status; }
int ExitStatus() { return exit_status; }
}  // namespace tabforge::cli

namespace {

std::string VersionText() {
  std::string cuda =
      tabforge::device::BuiltWithCuda()
          ? fmt::format("CUDA {} (architectures {})", tabforge::device::CompiledRuntimeVersion(),
                        tabforge::device::CompiledArchitectures())
          : std::string("CPU only (built without CUDA)");
  return fmt::format("tabforge {} — {}", TABFORGE_VERSION_STRING, cuda);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"tabforge: AutoML for tabular data, GPU-first with a complete CPU path"};
  app.set_version_flag("--version", VersionText());
  app.require_subcommand(1);
  tabforge::cli::AddInspectCommand(app);
  tabforge::cli::AddPredictorCommands(app);
  tabforge::cli::AddDoctorCommand(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& error) {
    return app.exit(error);
  } catch (const tabforge::InternalError& error) {
    std::fprintf(stderr, "tabforge: %s\n", error.what());
    return 3;
  } catch (const tabforge::IoError& error) {
    std::fprintf(stderr, "tabforge: error: %s\n", error.what());
    return 2;
  } catch (const tabforge::Error& error) {
    std::fprintf(stderr, "tabforge: error: %s\n", error.what());
    return 1;
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "tabforge: error: out of memory; free memory or use a smaller input\n");
    return 2;
  } catch (const std::exception& error) {
    std::fprintf(stderr, "tabforge: unexpected error: %s (please report it)\n", error.what());
    return 3;
  }
  return tabforge::cli::ExitStatus();
}
