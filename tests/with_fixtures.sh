#!/bin/sh
# with_fixtures.sh DEFAULT_DIR COMMAND [ARG...]: runs COMMAND ARG... FIXTURES, where FIXTURES is
# $OMNIDP_FIXTURES_DIR when set, else DEFAULT_DIR (the reference fixtures; tests/fixtures.hpp
# is the same rule for the GoogleTest binaries). Without that folder: exit 77, which ctest
# reports as skipped (SKIP_RETURN_CODE), with one line saying where the data is expected;
# under CI (CI=true) a missing folder is a failure (exit 1).
set -eu
default="$1"
shift
dir="${OMNIDP_FIXTURES_DIR:-$default}"
if [ ! -d "$dir/diffusers-ref" ] || [ ! -d "$dir/transformers-ref" ]; then
  echo "reference fixtures not found at '$dir' (expected diffusers-ref/ and transformers-ref/ there; set OMNIDP_FIXTURES_DIR to the fixtures folder)"
  if [ "${CI:-}" = true ]; then
    echo "CI=true: a failure"
    exit 1
  fi
  exit 77
fi
exec "$@" "$dir"
