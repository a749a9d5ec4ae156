#pragma once

#include "hosts/provider.h"

namespace ernic {

// One accessor per provider; builtin_platform.cc lists them.
HostProvider& local_provider();
HostProvider& netns_provider();
HostProvider& embedded_provider();

}  // namespace ernic
