// The subcommands of the tabforge program. Each Add*Command registers its options on the
// application and the callback that runs it; the callback throws tabforge::Error on failure.
#pragma once

namespace CLI {
class App;
}

namespace tabforge::cli {

// `tabforge inspect FILE_OR_URL [--label COL] [--json]`: schema, types, missing values and
// (with a label) the problem type.
void AddInspectCommand(CLI::App& app);

// `tabforge doctor [--json] [--markdown] [--speed]`: the GPU environment, checks and remedies.
void AddDoctorCommand(CLI::App& app);

// The status the program exits with when the command returns normally (default 0).
void SetExitStatus(int status);
int ExitStatus();

// `tabforge fit`, `predict`, `evaluate`, `leaderboard` and `summary`: the predictor's workflow.
void AddPredictorCommands(CLI::App& app);

}  // namespace tabforge::cli
