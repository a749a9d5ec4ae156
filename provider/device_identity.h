#pragma once

#include <infiniband/verbs.h>

#include "instance_channel.h"

namespace ernic::verbs {

// ibv_query_device and ibv_query_port's answers for an instance's device: its identity from the
// instance, its limits from the front end's (shm::kDeviceLimits), and the capabilities it has.
void describe_device(const InstanceChannel::Identity& identity, ibv_device_attr_ex& attr);
void describe_port(const InstanceChannel::Identity& identity, ibv_port_attr& attr);

// The largest work queue, CQ and inline payload the device takes.
inline constexpr std::uint32_t kMaxQpWr = 4096;
inline constexpr int kMaxCqe = 8192;
inline constexpr std::uint32_t kMaxInlineData = 256;
inline constexpr std::uint32_t kMaxSge = 1;
inline constexpr std::uint8_t kMaxRdAtomic = 16;

}  // namespace ernic::verbs
