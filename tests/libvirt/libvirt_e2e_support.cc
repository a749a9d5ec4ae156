#include "libvirt_e2e_support.h"
#include "base/file_text.h"

#include <fmt/format.h>
#include <libvirt/libvirt.h>

#include <catch2/catch.hpp>
#include <csignal>
#include <fstream>
#include <iostream>
#include <random>

namespace ernic::e2e {
namespace fs = std::filesystem;

std::string random_token() {
  std::random_device device;
  return fmt::format("{:06x}", device() & 0xffffff);
}

fs::path make_run_dir(const std::string& token) {
  fs::path dir = fs::temp_directory_path() / ("ernic-libvirt-e2e-" + token);
  fs::create_directories(dir);
  fs::permissions(dir, fs::perms(0755));
  return dir;
}

std::vector<std::string> two_guest_run_args(const fs::path& work, const std::string& subnet,
                                            const std::string& bw_sizes,
                                            const std::vector<std::string>& extra_sets) {
  const std::string image = std::string(ERNIC_SOURCE_DIR) + "/images/debian12-rdma.yaml";
  std::vector<std::string> args{
      "run",        std::string(ERNIC_SOURCE_DIR) + "/scenarios/two-guest-softroce.yaml",
      "--runs-dir", (work / "runs").string(),
      "--output",   "text"};
  std::vector<std::string> sets{"history.path=" + (work / "history.jsonl").string(),
                                "hosts.guest1.libvirt.image=" + image,
                                "hosts.guest2.libvirt.image=" + image,
                                "libvirt.network.subnet=" + subnet,
                                "benchmarks.bw.params.verb=[send]",
                                "benchmarks.bw.params.size=" + bw_sizes,
                                "benchmarks.lat.params.verb=[send]"};
  sets.insert(sets.end(), extra_sets.begin(), extra_sets.end());
  for (const std::string& set : sets) {
    args.insert(args.end(), {"--set", set});
  }
  return args;
}

std::unique_ptr<Subprocess> run_to_end(const std::vector<std::string>& argv,
                                       const std::string& what) {
  using SteadyClock = std::chrono::steady_clock;
  SpawnOptions options;
  options.argv = argv;
  const auto started = SteadyClock::now();
  auto run = Subprocess::spawn(
      options, [](bool /*is_stderr*/, std::string_view data) { std::cerr << data; });
  run->wait_until(SteadyClock::now() + std::chrono::minutes(25), false);
  run->finish_output();
  std::cerr << fmt::format("TIMING {}: {:.1f} s\n", what,
                           std::chrono::duration<double>(SteadyClock::now() - started).count());
  return run;
}

std::vector<std::string> leftovers(const std::string& token) {
  std::vector<std::string> found;
  std::string prefix = "ernic-" + token;
  LibvirtConnection connection("qemu:///system");
  virDomainPtr* domains = nullptr;
  int count = virConnectListAllDomains(connection.get(), &domains, 0);
  for (int i = 0; i < count; ++i) {
    std::string name = virDomainGetName(domains[i]);
    if (name.rfind(prefix, 0) == 0) {
      found.push_back("domain " + name);
    }
    virDomainFree(domains[i]);
  }
  free(domains);
  virNetworkPtr* networks = nullptr;
  count = virConnectListAllNetworks(connection.get(), &networks, 0);
  for (int i = 0; i < count; ++i) {
    std::string name = virNetworkGetName(networks[i]);
    if (name.rfind(prefix, 0) == 0) {
      found.push_back("network " + name);
    }
    virNetworkFree(networks[i]);
  }
  free(networks);
  virStoragePoolPtr* pools = nullptr;
  count = virConnectListAllStoragePools(connection.get(), &pools, 0);
  for (int i = 0; i < count; ++i) {
    std::string name = virStoragePoolGetName(pools[i]);
    if (name.rfind(prefix, 0) == 0) {
      found.push_back("storage pool " + name);
    }
    virStoragePoolFree(pools[i]);
  }
  free(pools);
  // Guest regions of embedded instances (/dev/shm/ernic-TOKEN-iN).
  for (const auto& entry : fs::directory_iterator("/dev/shm")) {
    if (entry.path().filename().string().rfind(prefix + "-i", 0) == 0) {
      found.push_back("guest region " + entry.path().string());
    }
  }
  if (fs::exists(fs::path("/var/lib/libvirt/images") / prefix)) {
    found.push_back("overlay folder /var/lib/libvirt/images/" + prefix);
  }
  for (const auto& entry : fs::directory_iterator("/proc")) {
    std::string text = read_file_text(entry.path() / "cmdline");
    if (text.find("guest=" + prefix) != std::string::npos) {
      found.push_back("process " + entry.path().filename().string());
    }
  }
  return found;
}

nlohmann::json last_json_line(const fs::path& file) {
  std::ifstream in(file);
  std::string line, last;
  while (std::getline(in, line)) {
    if (!line.empty()) {
      last = line;
    }
  }
  return nlohmann::json::parse(last);
}

fs::path only_run_dir(const fs::path& runs) {
  fs::path found;
  for (const auto& entry : fs::directory_iterator(runs)) {
    found = entry.path();
  }
  return found;
}

void interrupt_and_expect_nothing_left(Subprocess& run, const fs::path& work,
                                       const std::string& what) {
  using SteadyClock = std::chrono::steady_clock;
  ::kill(run.pid(), SIGINT);
  auto interrupted_at = SteadyClock::now();
  run.wait_until(SteadyClock::now() + std::chrono::minutes(3), false);
  run.finish_output();
  double stopped_after = std::chrono::duration<double>(SteadyClock::now() - interrupted_at).count();
  std::cerr << fmt::format("TIMING {}: {:.1f} s\n", what, stopped_after);
  INFO(run.stdout_text() << run.stderr_text());
  CHECK(run.exit_code() == 130);
  nlohmann::json record;
  std::ifstream(only_run_dir(work / "runs") / "record.json") >> record;
  CHECK(record["ernicctl"]["status"] == "incomplete");
  CHECK(leftovers(record["ernicctl"]["run_token"].get<std::string>()).empty());
}

}  // namespace ernic::e2e
