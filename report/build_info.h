// Where and how this run happens: the build, the machine and the locked numerics, for reports.
#pragma once

#include "report/run_report.h"

namespace attnfuzz {

RunEnvironment describe_environment(std::string_view backend);

}  // namespace attnfuzz
