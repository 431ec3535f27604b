// The GPU troubleshooting guide as code: one table of checks (kChecks), each turning what
// discovery found into a status, a one-line finding and a remedy. `tabforge doctor` prints
// them; the README's troubleshooting table is printed from the same rows (`tabforge doctor
// --markdown`) and a test keeps the two equal.
#pragma once

#include <string>
#include <vector>

#include "device/discovery.h"

namespace tabforge::device {

enum class CheckStatus { kOk, kWarning, kError };

// One row of the guide: what users see, and which check diagnoses it.
struct CheckRow {
  const char* id;       // e.g. "driver_version"
  const char* symptom;  // the words users meet (error messages, behaviour)
  const char* cause;    // what the check looks for
};

// Every check, in the order they are run and printed.
const std::vector<CheckRow>& CheckTable();

struct CheckResult {
  std::string id;
  CheckStatus status = CheckStatus::kOk;
  std::string finding;      // one line
  std::string remedy;       // empty when ok
  bool breaks_gpu = false;  // an error here means the environment is broken (not merely
                            // without a GPU)
};

// What the checks concluded.
struct Diagnosis {
  std::vector<CheckResult> checks;  // one per CheckTable row
  int usable_device = -1;           // the GPU training would use, or -1
  int exit_status = 1;  // 0: GPU training will work; 1: it falls back to the CPU; 2: broken
  std::string verdict;  // one line
};

Diagnosis Diagnose(const GpuEnvironment& env);

// The minimum Linux / Windows driver for a CUDA version (e.g. 13000 -> "580.65.06 / 580.88").
std::string MinimumDriver(int cuda_version);

const char* StatusName(CheckStatus status);

// The report as text / as JSON (environment, devices, checks, verdict).
std::string FormatReport(const GpuEnvironment& env, const Diagnosis& diagnosis);
std::string FormatJson(const GpuEnvironment& env, const Diagnosis& diagnosis);
// The troubleshooting table (symptom | check | what it looks for) in Markdown.
std::string FormatMarkdownTable();

}  // namespace tabforge::device
