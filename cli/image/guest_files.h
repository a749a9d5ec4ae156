#pragma once

#include <filesystem>
#include <string>

// The files the image builder writes into a guest's root (and next to it).
namespace ernic::guest_files {

// The kernel command line argument that gives the guest a static address.
inline constexpr const char* kStaticAddressArg = "ernic.net";

std::string read_text(const std::filesystem::path& file);
// Creates the parent folders; throws naming the file when it cannot be written.
void write_text(const std::filesystem::path& file, const std::string& content,
                std::filesystem::perms mode = std::filesystem::perms(0644));

// The guest's network at boot: DHCP by default (ClientIdentifier=mac, because the image's
// machine-id is empty and would otherwise ask for a new lease every boot), or a static address
// given on the kernel command line, written as a .network file before networkd starts (networkd
// removes addresses it did not configure, so `ip addr add` later would be undone).
void write_network_config(const std::filesystem::path& root);
// The memlock limit of every login and service.
void write_limits(const std::filesystem::path& root, const std::string& memlock);

}  // namespace ernic::guest_files
