#!/usr/bin/env bash
# A newcomer's path through the README, in the README's order: the main command's build (read
# from README.md, run as written in a copy of SOURCE_DIR), then `cmake --install build --strip`
# and `cd build && cpack`. The Debian package is then unpacked into a scratch root, as a lab node
# would install it, and its ernicctl run on an installed example.
#   package_test.sh SOURCE_DIR
# The main command's last step, the quickstart run, is left out: it needs network namespaces
# that concurrent tests may be using, and the integration tests run it.
set -euo pipefail
source_dir=$(realpath "$1")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAILED: $*"; exit 1; }

main_command=$(grep -m1 '^    bash \.ci/install-packages && ' "$source_dir/README.md" | sed 's/^    //') ||
  fail "README.md has no main command (an indented line starting 'bash .ci/install-packages && ')"
run_step=' && ./build/cli/ernicctl run scenarios/quickstart.yaml'
[[ "$main_command" == *"$run_step" ]] ||
  fail "the README's main command does not end with '$run_step': $main_command"
build_steps=${main_command%"$run_step"}
echo "main command, without its run: $build_steps"

# The checkout's tracked and new files, without its build trees.
mkdir "$work/src"
(cd "$source_dir" && git ls-files -z --cached --others --exclude-standard |
  tar --null --files-from=- --ignore-failed-read -cf - | tar -xf - -C "$work/src") ||
  fail "could not copy the files of $source_dir (a git checkout)"
# Not part of the command: ccache (when there is one) makes a second run of this test fast.
if command -v ccache >/dev/null && [[ -z "${CMAKE_CXX_COMPILER_LAUNCHER:-}" ]]; then
  export CMAKE_C_COMPILER_LAUNCHER=ccache CMAKE_CXX_COMPILER_LAUNCHER=ccache
  export CCACHE_BASEDIR="$work/src"
fi
(cd "$work/src" && bash -c "$build_steps") >"$work/build.log" 2>&1 ||
  { tail -40 "$work/build.log"; fail "the README's main command did not build"; }

prefix="$work/prefix"
(cd "$work/src" && cmake --install build --strip --prefix "$prefix") >"$work/install.log" 2>&1 ||
  { cat "$work/install.log"; fail "cmake --install build --strip failed after the main command"; }
for installed in bin/ernicctl share/ernicctl/schema.json share/ernicctl/scenarios/quickstart.yaml \
  share/bash-completion/completions/ernicctl share/doc/ernicctl/README.md; do
  [[ -s "$prefix/$installed" ]] || fail "cmake --install did not install $installed"
done
"$prefix/bin/ernicctl" --version >/dev/null || fail "the installed ernicctl does not run"
(cd "$work/src" && cmake --install build --component debug --prefix "$prefix") >>"$work/install.log" 2>&1 ||
  { cat "$work/install.log"; fail "cmake --install build --component debug failed"; }
[[ -s "$prefix/lib/debug/bin/ernicctl.debug" ]] || fail "the debug component has no ernicctl.debug"

(cd "$work/src/build" && cpack) >"$work/cpack.log" 2>&1 ||
  { cat "$work/cpack.log"; fail "cd build && cpack failed after the main command"; }
deb=$(ls "$work"/src/build/ernicctl_*_amd64.deb) || fail "no ernicctl_VERSION_amd64.deb in build/"
depends=$(dpkg-deb -f "$deb" Depends)
echo "Depends: $depends"
for library in libyaml-cpp libssh libvirt0 libfmt libibverbs1; do
  [[ "$depends" == *"$library"* ]] || fail "Depends does not name $library"
done
dpkg-deb -x "$deb" "$work/root"
bin="$work/root/usr/bin/ernicctl"
file "$bin" | grep -q ", stripped" || fail "the installed binary is not stripped: $(file "$bin")"
"$bin" --version | grep -q "^ernicctl [0-9]" || fail "--version printed: $("$bin" --version)"
"$bin" validate "$work/root/usr/share/ernicctl/scenarios/quickstart.yaml" ||
  fail "validate failed on the installed quickstart"
cmp -s "$work/root/usr/share/ernicctl/schema.json" <("$bin" schema) ||
  fail "the installed schema.json is not the one the binary validates with"
# The verbs provider, where the installed binary points programs at it (ernicctl verbs-env).
for library in libernic-rdmav34.so libernic-cdev.so; do
  [[ -f "$work/root/usr/lib/ernicctl/$library" ]] || fail "the package has no usr/lib/ernicctl/$library"
done
mkdir -p "$work/sysfs/class/infiniband_verbs"
"$bin" verbs-env "$work/sysfs" | grep -q "^export RDMAV_DRIVERS='$work/root/usr/lib/ernicctl/libernic'$" ||
  fail "verbs-env does not point at the installed provider: $("$bin" verbs-env "$work/sysfs" 2>&1)"
completion="$work/root/usr/share/bash-completion/completions/ernicctl"
bash -n "$completion" || fail "the installed completion is not valid bash"
grep -q -- "--rerun-failed" "$completion" || fail "the completion does not know run's flags"
echo "package ok: $(basename "$deb"), $(du -h "$deb" | cut -f1)"
