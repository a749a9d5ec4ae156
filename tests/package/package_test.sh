#!/usr/bin/env bash
# The Debian package as a lab node would install it: built by cpack from BUILD_DIR, unpacked
# into a scratch root, its ernicctl run on an installed example.
#   package_test.sh BUILD_DIR
set -euo pipefail
build=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAILED: $*"; exit 1; }

if ! (cd "$build" && cpack -G DEB -B "$work/out" >"$work/cpack.log" 2>&1); then
  cat "$work/cpack.log"
  fail "cpack could not build the package"
fi
deb=$(ls "$work"/out/ernicctl_*_amd64.deb) || fail "no ernicctl_VERSION_amd64.deb in $work/out"
depends=$(dpkg-deb -f "$deb" Depends)
echo "Depends: $depends"
for library in libyaml-cpp libssh libvirt0 libfmt; do
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
completion="$work/root/usr/share/bash-completion/completions/ernicctl"
bash -n "$completion" || fail "the installed completion is not valid bash"
grep -q -- "--rerun-failed" "$completion" || fail "the completion does not know run's flags"
echo "package ok: $(basename "$deb"), $(du -h "$deb" | cut -f1)"
