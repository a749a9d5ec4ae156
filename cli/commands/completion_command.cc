// `ernicctl completion bash`: a bash completion script made from the command tree itself, so it
// knows every subcommand and flag this binary has; point ids come from the scenario's dry run.
#include <fmt/format.h>

#include <iostream>
#include <string>

#include "commands/commands.h"

namespace ernic {
namespace {

// "run) words='--set --dry-run ...' ;;" for every subcommand, nested ones as "parse iperf3".
void add_cases(const CLI::App& app, const std::string& path, std::string& cases,
               std::string& known) {
  std::string words;
  for (const CLI::Option* option : app.get_options()) {
    for (const auto& name : option->get_lnames()) {
      words += " --" + name;
    }
  }
  for (const CLI::App* sub : app.get_subcommands({})) {
    words += " " + sub->get_name();
    add_cases(*sub, path.empty() ? sub->get_name() : path + " " + sub->get_name(), cases, known);
  }
  cases += fmt::format("    '{}') words='{}' ;;\n", path, words.empty() ? "" : words.substr(1));
  known += path + "|";
}

std::string bash_script(const CLI::App& root) {
  std::string cases, known = "|";
  add_cases(root, "", cases, known);
  return fmt::format(R"(# bash completion for ernicctl (`ernicctl completion bash`)
_ernicctl() {{
  local cur=${{COMP_WORDS[COMP_CWORD]}} prev=${{COMP_WORDS[COMP_CWORD-1]}}
  local known='{}' path='' scenario='' i word
  # The subcommand path typed so far ("run", "parse iperf3") and the scenario file, if any.
  for ((i = 1; i < COMP_CWORD; i++)); do
    word=${{COMP_WORDS[i]}}
    if [[ "$known" == *"|${{path:+$path }}$word|"* ]]; then
      path="${{path:+$path }}$word"
    elif [[ "$word" == *.yaml || "$word" == *.yml ]]; then
      scenario=$word
    fi
  done
  case "$prev" in
    --only|--skip)
      if [[ -n "$scenario" ]]; then
        local ids
        ids=$(ernicctl run "$scenario" --dry-run 2>/dev/null |
              sed -n 's/^  \[[0-9]*\/[0-9]*\] \([^ ]*\).*/\1/p' | sort -u)
        local IFS=$'\n'
        COMPREPLY=($(compgen -W "$ids" -- "$cur"))
      fi
      return ;;
    --runs-dir|--rerun-failed|--state-dir|--out) COMPREPLY=($(compgen -d -- "$cur")); return ;;
  esac
  local words=''
  case "$path" in
{}  esac
  if [[ "$cur" != -* && ( "$path" == run || "$path" == validate || "$path" == up ) ]]; then
    COMPREPLY=($(compgen -W "$words" -- "$cur") $(compgen -f -X '!*.y*ml' -- "$cur") $(compgen -d -- "$cur"))
  else
    COMPREPLY=($(compgen -W "$words" -- "$cur"))
  fi
}}
complete -F _ernicctl ernicctl
)",
                     known, cases);
}

}  // namespace

void register_completion_command(CLI::App& app, CommandContext& /*context*/) {
  CLI::App* cmd = app.add_subcommand("completion", "Print a shell completion script");
  CLI::App* bash = cmd->add_subcommand(
      "bash",
      "Bash completion: subcommands, flags, scenario files, point ids for --only/--skip "
      "(source it, or install it as /usr/share/bash-completion/completions/ernicctl)");
  cmd->require_subcommand(1);
  bash->callback([&app] { std::cout << bash_script(app); });
}

}  // namespace ernic
