#pragma once

#include <CLI/CLI.hpp>

#include <string>

namespace ernic {

// What `ernicctl` alone prints, as git and cargo do: every subcommand with its one-line
// description, read from the command tree so that it never misses one, and the two commands a
// newcomer starts with, on `quickstart` (the path of the quickstart scenario to show).
std::string command_overview(const CLI::App& app, const std::string& quickstart);

// The quickstart scenario's path as this user can reach it: scenarios/quickstart.yaml in the
// working directory (a checkout), else the installed copy beside `program` (BINDIR/ernicctl and
// DATADIR/ernicctl/scenarios/), else the checkout's relative path.
std::string quickstart_path(const std::string& program);

}  // namespace ernic
