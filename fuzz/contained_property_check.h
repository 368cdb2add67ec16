// SPDX-License-Identifier: BSD-3-Clause
// Property checks of the search run contained, as the matrix runner's cases are: in a worker
// process (run/worker_pool.h) that stays up between checks, so that a kernel that crashes, hangs
// or exits costs one check, which fails with what happened, and the search goes on to shrink it
// and save the minimal case. A kernel call is stopped at the case timeout, or at the grace past
// the search's budget (operator() below): a hang, which fails the check.
#pragma once

#include <chrono>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "case/attention_case.h"
#include "fuzz/kernel_reach.h"
#include "fuzz/properties.h"
#include "run/case_worker.h"
#include "run/worker_pool.h"

namespace attnfuzz {

class ContainedPropertyCheck {
 public:
  // `workers` as for a matrix run (the worker's argv, the case timeout, the memory limit);
  // `budget_seconds` is the search's, counted from now.
  ContainedPropertyCheck(WorkerPoolSettings workers, double budget_seconds);

  // check_property(property, attention_case) in a worker; a crash or hang is a failure naming it
  // with the worker's last output; running out of memory is not (the case is not judged). No check
  // starts after the budget (and a second more). One still running then may finish within the
  // longest of ten times the longest check that finished, the budget again (up to 300 s) and
  // 10 s: a slow kernel's last check. Past that it fails as hung, so that a kernel that hangs is
  // never passed for want of a --case-timeout below the budget.
  PropertyCheck operator()(Property property, const AttentionCase& attention_case);

  // probe_kernel_reach (fuzz/kernel_reach.h) in a worker, so that a kernel's supports() that
  // crashes or hangs costs the probe only: then the search is offered everything, and each check
  // meets that kernel contained.
  KernelReach reach();

  // The request a worker answers with the property's verdict, {"status": "pass", "fail" or
  // "skip" (not judged), "judged": true or false, "failure": null or "why"}: it
  // carries "property", the property's name. A worker serves it among its own (run/case_worker.h).
  static WorkerRequestKind request_kind(const RunSettings& settings);
  // The request a worker answers with the kernel's reach: {"status": "pass", "reach": ...}.
  static WorkerRequestKind reach_request_kind(const RunSettings& settings);

 private:
  double case_timeout_seconds_;
  double budget_seconds_;
  double longest_check_seconds_ = 0.0;  // of the checks that finished
  std::chrono::steady_clock::time_point started_;
  WorkerPool pool_;
};

}  // namespace attnfuzz
