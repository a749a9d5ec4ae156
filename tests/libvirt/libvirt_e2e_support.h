#pragma once

// Helpers the libvirt end-to-end tests share: run folders, the leftovers of a run, the daemons.
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/subprocess.h"
#include "hosts/libvirt/libvirt_connection.h"

namespace ernic::e2e {

std::string random_token();
// A fresh folder under /tmp for run `token`, readable by QEMU.
std::filesystem::path make_run_dir(const std::string& token);
// Everything of run `token` that still exists: domains, networks, pools, overlay folder, QEMU
// processes. Empty when teardown was complete.
std::vector<std::string> leftovers(const std::string& token);
// The last JSON line of a file (a history).
nlohmann::json last_json_line(const std::filesystem::path& file);
// The one run folder under `runs`.
std::filesystem::path only_run_dir(const std::filesystem::path& runs);

// `run scenarios/two-guest-softroce.yaml` as a user types it (the arguments after the binary),
// with the sweep reduced to fit CI through --set: the image path made absolute, the runs and the
// history under `work`, the guest network on `subnet`, send only, bandwidth at `bw_sizes` (a YAML
// list), then `extra_sets`.
std::vector<std::string> two_guest_run_args(const std::filesystem::path& work,
                                            const std::string& subnet, const std::string& bw_sizes,
                                            const std::vector<std::string>& extra_sets = {});

// Runs `argv` (an ernicctl run) to its end, at most 25 minutes, its output passed on to stderr,
// and prints "TIMING <what>: N s".
std::unique_ptr<Subprocess> run_to_end(const std::vector<std::string>& argv,
                                       const std::string& what);

// Sends SIGINT to a booting `ernicctl run` and checks that it exits 130 within 3 minutes
// (printing "TIMING <what>: N s"), that its record says incomplete and that nothing of the run
// is left.
void interrupt_and_expect_nothing_left(Subprocess& run, const std::filesystem::path& work,
                                       const std::string& what);

// libvirtd and virtlogd for the test's lifetime (stopped after when the test started them).
struct Daemons {
  Daemons() { daemons.ensure_running(std::chrono::seconds(120)); }
  ~Daemons() { daemons.stop_started(); }
  LibvirtDaemons daemons;
};

}  // namespace ernic::e2e
